// Generated from openapi.yaml by npm run gen:client.
export async function getJobs() { return fetch("/jobs"); }
