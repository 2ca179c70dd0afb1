/** The collectors backend: where checksum files come from. */
import type { UpstreamAnswer } from '../../upstream/answer.js';
import type { Closable } from '../backend-type.js';
import type { Answer, BackendCall } from '../backend-call.js';

/** The collector types the API knows (case-sensitive). */
export const COLLECTOR_TYPES = ['sharphound', 'azurehound', 'openhound'] as const;
export type CollectorType = (typeof COLLECTOR_TYPES)[number];

/** One release's checksum file. */
export interface ChecksumFile {
  /** The resolved version without the `v`, e.g. `2.10.0`. */
  readonly version: string;
  /** The file's bytes. */
  readonly bytes: Buffer;
  /** Set by the checksum cache: whether the file came from it (the operation's `X-Cache`). */
  readonly cache?: 'HIT' | 'MISS';
}

export interface CollectorsBackend extends Closable {
  /**
   * The checksum file of `release` (`latest`, or a version without the `v`, e.g. `2.10.0`) of
   * collector `type`; undefined when there is no such release. `latest` is the highest version by
   * semver order, pre-releases excluded. An upstream answers anything but a file with its own
   * answer, relayed unchanged (its body held whole: the cache may share it between requests).
   */
  getChecksum(
    type: CollectorType,
    release: string,
    call: BackendCall,
  ): Answer<ChecksumFile | UpstreamAnswer | undefined>;
  /**
   * True when the answers depend on the client's own credentials (an upstream with `client` auth):
   * the checksum cache then keeps them per identity and shares a fetch only within one identity.
   */
  readonly perIdentity?: boolean;
}

/** A backend that answers itself (a local directory): never an upstream's answer. */
export interface ChecksumStore extends CollectorsBackend {
  getChecksum(type: CollectorType, release: string, call: BackendCall): Answer<ChecksumFile | undefined>;
}
