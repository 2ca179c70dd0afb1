/**
 * The credentials a request carries, read once for every scheme: the `Authorization` scheme word and
 * what follows it, and the signed-request headers.
 */
import type { IncomingMessage } from 'node:http';
import { singleHeaders } from '../http/headers.js';

/** The request's credentials; each undefined when not sent (or empty). */
export interface Credentials {
  /** The `Authorization` scheme word, lower-cased; undefined without `Authorization`. */
  readonly word: string | undefined;
  /** What follows the word. */
  readonly credential: string | undefined;
  readonly requestDate: string | undefined;
  readonly signature: string | undefined;
}

/** The three authentication headers' raw values, read in one pass. */
const readAuthHeaders = singleHeaders(['Authorization', 'RequestDate', 'Signature']);

/**
 * The credentials of `req`, each header read once from the raw list (400 when one is repeated: Node
 * would keep only the first `Authorization`). Undefined when `Authorization` is not exactly two
 * space-separated parts.
 */
export function credentialsOf(req: IncomingMessage): Credentials | undefined {
  const values = readAuthHeaders(req);
  const authorization = values[0];
  let word: string | undefined;
  let credential: string | undefined;
  if (authorization) {
    const space = authorization.indexOf(' ');
    if (space === -1 || authorization.indexOf(' ', space + 1) !== -1) return undefined;
    word = authorization.slice(0, space).toLowerCase();
    credential = authorization.slice(space + 1);
  }
  return { word, credential, requestDate: values[1] || undefined, signature: values[2] || undefined };
}
