/**
 * The module resolution hook of record-imports.mjs (it runs on the loader's own thread): appends each
 * `@opentelemetry/` specifier resolved to the file it was given.
 */
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data;
}

export async function resolve(specifier, context, next) {
  if (file && specifier.startsWith('@opentelemetry/')) appendFileSync(file, `${specifier}\n`);
  return next(specifier, context);
}
