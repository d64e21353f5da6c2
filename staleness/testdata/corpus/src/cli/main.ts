// src/cli/main.ts
export {};
