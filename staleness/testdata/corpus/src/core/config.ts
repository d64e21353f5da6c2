// src/core/config.ts
export {};
