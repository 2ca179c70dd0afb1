/**
 * Reading an upstream's answer: the headers that describe its body (passed on with it), the
 * upstream's request id, and a bounded read for the answers a backend must hold whole.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { errors } from '../errors.js';
import type { UpstreamAnswer } from './client.js';

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

/**
 * Whether an upstream's status may be relayed: 100-599, but never a `101` (the gateway never asks
 * for an upgrade). Anything else is a bad answer (502), never a hang or a thrown `writeHead`.
 */
export function relayableStatus(status: number): boolean {
  return status >= 100 && status <= 599 && status !== 101;
}

/** The upstream's `RequestID`, when it sent a sane one (it goes to a header and a log line). */
export function upstreamRequestId(headers: IncomingHttpHeaders): string | undefined {
  const id = headers.requestid;
  return typeof id === 'string' && /^[\x21-\x7e]{1,128}$/.test(id) ? id : undefined;
}

/** The whole body of `answer`, refused as a bad answer (502) past `limit` bytes. */
export async function readBounded(answer: UpstreamAnswer, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer.body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      answer.body.destroy();
      throw errors.upstreamBadAnswer('too_large');
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, size);
}
