// src/commands/sync.ts
export {};
