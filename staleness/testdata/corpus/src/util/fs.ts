// src/util/fs.ts
export {};
