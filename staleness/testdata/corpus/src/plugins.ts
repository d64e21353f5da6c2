// src/plugins.ts
export {};
