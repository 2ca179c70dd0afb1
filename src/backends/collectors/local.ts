/**
 * The collectors backend on a local directory, the reference layout:
 * `<dir>/<collector_type>/<collector_type>-v<version>.zip.sha256` (a `.zip` beside it is ignored).
 * Versions are discovered from the file names each time `latest` is resolved, so a release dropped
 * into the directory appears without a restart.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type BackendType, type LocalConfig, localBackendShape } from '../backend-type.js';
import {
  type ChecksumFile,
  type ChecksumStore,
  COLLECTOR_TYPES,
  type CollectorsBackend,
  type CollectorType,
} from './backend.js';
import { checksumFileName, isVersion, newestStable, versionOfFileName } from './release.js';

/** `{type: local, path: <dir>}` for the collectors. */
export const localCollectors: BackendType<LocalConfig, CollectorsBackend> = {
  config: localBackendShape,
  open: (config) => openLocalCollectors(config.path),
};

/**
 * `createLocalCollectors` on a directory that is checked first: a configuration naming a missing
 * folder or a file fails at start (or reload) instead of answering 404 to everything.
 */
export async function openLocalCollectors(dir: string): Promise<ChecksumStore> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(dir);
  } catch (err) {
    throw new Error(`the collectors directory ${dir} cannot be read: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (!info.isDirectory()) throw new Error(`the collectors path ${dir} is not a directory`);
  return createLocalCollectors(dir);
}

/** Serves checksum files from `dir`; a missing type directory means "no releases". */
export function createLocalCollectors(dir: string): ChecksumStore {
  return {
    async getChecksum(type, release, { signal }): Promise<ChecksumFile | undefined> {
      signal.throwIfAborted();
      // The operation validates both; checking again keeps a path outside `dir` unreachable.
      if (!COLLECTOR_TYPES.includes(type)) return undefined;
      const version = release === 'latest' ? await latestVersion(dir, type, signal) : release;
      if (version === undefined || !isVersion(version)) return undefined;
      try {
        const bytes = await readFile(join(dir, type, checksumFileName(type, version)), { signal });
        return { version, bytes };
      } catch (err) {
        signal.throwIfAborted();
        if (isMissing(err)) return undefined;
        throw err;
      }
    },
    async close() {},
  };
}

/** The highest stable version among the type's files, by semver order; undefined when there is none. */
async function latestVersion(
  dir: string,
  type: CollectorType,
  signal: AbortSignal,
): Promise<string | undefined> {
  let names: string[];
  try {
    names = await readdir(join(dir, type));
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  // readdir takes no signal; stop here rather than carry on for a request that has gone.
  signal.throwIfAborted();
  const versions: string[] = [];
  for (const name of names) {
    const version = versionOfFileName(type, name);
    if (version !== undefined) versions.push(version);
  }
  return newestStable(versions);
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
}
