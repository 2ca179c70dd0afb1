/**
 * An upstream's answer, relayed to the client as it is: its status, the headers that describe its
 * body, and the body (streamed, or held whole where several requests share it). The one type every
 * upstream path returns for an answer it does not interpret.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { errors } from '../errors.js';

export class UpstreamAnswer {
  constructor(
    /** The upstream's status. */
    readonly status: number,
    /** Headers describing the body (Content-Type, Content-Length, ETag, …) and `X-Upstream-RequestID`. */
    readonly headers: Readonly<Record<string, string>>,
    /** The body: a stream as it arrives, or bytes read whole (an answer shared by several requests). */
    readonly body: Readable | Buffer,
  ) {}

  /** The upstream's own request id, when it sent a sane one. */
  get upstreamRequestId(): string | undefined {
    return this.headers['X-Upstream-RequestID'];
  }
}

/** Headers of the upstream's answer that describe its body and go to the client with it. */
const PASSED = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-disposition',
  'etag',
  'last-modified',
  'cache-control',
  'expires',
  'vary',
  'location',
  'retry-after',
  'www-authenticate',
];

/** The answer's body-describing headers, plus the upstream's `RequestID` as `X-Upstream-RequestID`. */
export function passedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSED) {
    const value = headers[name];
    if (typeof value === 'string') out[name] = value;
  }
  const id = upstreamRequestId(headers);
  if (id !== undefined) out['X-Upstream-RequestID'] = id;
  return out;
}

/** The upstream's `RequestID`, when it sent a sane one (it goes to a header and a log line). */
export function upstreamRequestId(headers: IncomingHttpHeaders): string | undefined {
  const id = headers.requestid;
  return typeof id === 'string' && /^[\x21-\x7e]{1,128}$/.test(id) ? id : undefined;
}

/**
 * Whether an upstream's status may be relayed: 100-599, but never a `101` (the gateway never asks
 * for an upgrade). Anything else is a bad answer (502), never a hang or a thrown `writeHead`.
 */
export function relayableStatus(status: number): boolean {
  return status >= 100 && status <= 599 && status !== 101;
}

/**
 * The whole of `body`, refused as a bad answer (502) past `limit` bytes. One chunk is handed on as
 * it came (no copy); a body that fails or closes before its end rejects.
 */
export function readBounded(body: Readable, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: unknown) => {
      body.off('data', onData);
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        fail(errors.upstreamBadAnswer('too_large'));
        body.destroy();
        return;
      }
      chunks.push(chunk);
    };
    body.on('data', onData);
    body.once('error', fail);
    body.once('close', () => {
      if (!body.readableEnded) fail(errors.upstreamBadAnswer('truncated'));
    });
    body.once('end', () =>
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)),
    );
  });
}
