export const routes = ["/health", "/jobs"];
