// src/core/types.gen.ts
export {};
