// src/util/log.ts
export {};
