// src/commands/init.ts
export {};
