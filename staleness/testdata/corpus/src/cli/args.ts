// src/cli/args.ts
export {};
