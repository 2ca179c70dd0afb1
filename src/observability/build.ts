/**
 * What `gateway_build_info` reports: the package's version (read once from its package.json, which
 * ships beside dist/ in the image) and the Node.js version running it.
 */
import { readFileSync } from 'node:fs';

/** The labels of `gateway_build_info`. */
export interface BuildInfo {
  readonly version: string;
  readonly node_version: string;
}

/** The running build; `unknown` when package.json cannot be read. */
export function buildInfo(): BuildInfo {
  let version = 'unknown';
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    if (typeof pkg.version === 'string') version = pkg.version;
  } catch {
    // A build run from elsewhere still starts; the version then says so.
  }
  return { version, node_version: process.versions.node };
}
