/** PLACEHOLDER: implemented by the auth work (see the interface). */
import type { Readable } from 'node:stream';

/** A request body read once under the body limit and held until it has been verified. */
export interface HeldBody {
  /** Its length in bytes. */
  readonly size: number;
  /** A new stream of its bytes (from memory, or from the temporary file it was spooled to). */
  stream(): Readable;
  /** Removes the temporary file, if any. Safe to call twice. */
  dispose(): Promise<void>;
}
