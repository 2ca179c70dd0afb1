/**
 * An upstream's answer that goes to the client unchanged: its status, its body (streamed) and the
 * headers that describe that body. A backend returns it where the contract says the upstream's
 * status and body pass through (contract §5); the operation relays it instead of writing its own.
 */
import type { Readable } from 'node:stream';

export class RelayedResponse {
  constructor(
    /** The upstream's status. */
    readonly status: number,
    /** Headers describing the body (Content-Type, Content-Length, ETag, …) and `X-Upstream-RequestID`. */
    readonly headers: Readonly<Record<string, string>>,
    /** The body as it arrives from the upstream. */
    readonly body: Readable,
  ) {}
}
