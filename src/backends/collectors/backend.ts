/** The collectors backend: where checksum files come from. */
import type { RequestContext } from '../../http/context.js';

/** The collector types the API knows (case-sensitive). */
export const COLLECTOR_TYPES = ['sharphound', 'azurehound', 'openhound'] as const;
export type CollectorType = (typeof COLLECTOR_TYPES)[number];

/** One release's checksum file. */
export interface ChecksumFile {
  /** The resolved version without the `v`, e.g. `2.10.0`. */
  readonly version: string;
  /** The file's bytes. */
  readonly bytes: Buffer;
  /** Set by the checksum cache: whether the file came from it (`X-Cache`). */
  readonly cache?: 'HIT' | 'MISS';
}

export interface CollectorsBackend {
  /**
   * The checksum file of `release` (`latest`, or a version without the `v`, e.g. `2.10.0`) of
   * collector `type`; undefined when there is no such release. `latest` is the highest version by
   * semver order, pre-releases excluded. `request` is the request being served, if any (an upstream
   * forwards from it).
   */
  getChecksum(
    type: CollectorType,
    release: string,
    signal: AbortSignal,
    request?: RequestContext,
  ): Promise<ChecksumFile | undefined>;
  /** False while the backend cannot serve (an upstream or a database unreachable); absent: always ready. */
  ready?(): boolean;
  /** Releases resources (pools, timers). */
  close(): Promise<void>;
}
