/**
 * What the gateway signed for a request whose signature did not match (contract §3, Explaining a
 * mismatch): the method, the target as received, the hour and the body's length and SHA-256, so a
 * client author can see which part differs. Nothing derived from the key. It holds the query string,
 * so it goes only into that response's body, never into a log line.
 */
import { createHash } from 'node:crypto';
import type { HeldBody } from '../../http/body.js';

/** `signed: <METHOD> <target> | hour <first 13 characters> | body <N> bytes, sha256 <hex>`. */
export async function signedSummary(
  method: string,
  target: string,
  requestDate: string,
  body: HeldBody,
): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of body.stream()) hash.update(chunk as Buffer);
  const hour = requestDate.slice(0, 13);
  return `signed: ${method} ${target} | hour ${hour} | body ${body.size} bytes, sha256 ${hash.digest('hex')}`;
}
