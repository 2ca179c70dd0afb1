/**
 * Fetching what an identity provider publishes: its key set and its OpenID discovery document. Each
 * fetch is bounded in size (and, by the caller's signal, in time), never follows a redirect (the
 * configured URL is the one trusted), and fails with a fixed reason for the log, never the response.
 */
import { InvalidKeySet } from './jwk-set.js';

/** The largest document read; a larger one is refused as garbage. */
const MAX_BYTES = 1024 * 1024;

/** The `result` label of a fetch (`gateway_jwks_fetches_total`). */
export type FetchResult = 'ok' | 'error' | 'timeout' | 'invalid';

/** A failed fetch with the result it counts as; the message is a fixed text for the log. */
class FetchFailure extends Error {
  constructor(
    readonly result: FetchResult,
    message: string,
  ) {
    super(message);
  }
}

/** A document and how long the identity provider says it stays fresh (ms). */
interface Downloaded {
  readonly text: string;
  readonly lifetime: number | undefined;
}

/** The document at `url`: 200 only, at most 1 MiB. */
export async function download(url: string, signal: AbortSignal, accept: string): Promise<Downloaded> {
  const res = await fetch(url, { signal, redirect: 'manual', headers: { accept } });
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel();
    throw new FetchFailure('error', `redirect refused (status ${res.status})`);
  }
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new FetchFailure('error', `status ${res.status}`);
  }
  if (Number(res.headers.get('content-length')) > MAX_BYTES) {
    await res.body?.cancel();
    throw new FetchFailure('invalid', 'larger than 1 MiB');
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > MAX_BYTES) throw new FetchFailure('invalid', 'larger than 1 MiB');
    chunks.push(chunk);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), lifetime: lifetimeOf(res.headers) };
}

/**
 * The `jwks_uri` of the discovery document at `url`, whose `issuer` must be `issuer` byte for byte
 * (OpenID Connect Discovery §4.3: a document naming another issuer is not this provider's).
 */
export async function discover(url: string, issuer: string, signal: AbortSignal): Promise<string> {
  const { text } = await download(url, signal, 'application/json');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new FetchFailure('invalid', 'discovery document: not JSON');
  }
  const fields = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>) : {};
  if (fields.issuer !== issuer) {
    throw new FetchFailure('invalid', 'discovery document: its issuer is not the configured one');
  }
  const uri = fields.jwks_uri;
  if (typeof uri !== 'string' || !isKeysUrl(uri)) {
    throw new FetchFailure('invalid', 'discovery document: no usable jwks_uri');
  }
  return uri;
}

/** An http(s) URL without credentials or a fragment (a query is allowed). */
function isKeysUrl(value: string): boolean {
  try {
    const url = new URL(value);
    const web = url.protocol === 'https:' || url.protocol === 'http:';
    return web && !value.includes('#') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

/** `max-age` less `Age` (ms); 0 for `no-cache`/`no-store`; undefined when the response says nothing. */
function lifetimeOf(headers: Headers): number | undefined {
  const control = headers.get('cache-control') ?? '';
  if (/(?:^|,)\s*no-(?:cache|store)\b/i.test(control)) return 0;
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(control)?.[1];
  if (maxAge === undefined) return undefined;
  const age = Number(headers.get('age')) || 0;
  return Math.max(0, Number(maxAge) - age) * 1000;
}

/** The `result` label of a failed fetch. */
export function resultOf(err: unknown, timedOut: boolean): FetchResult {
  if (timedOut) return 'timeout';
  if (err instanceof InvalidKeySet) return 'invalid';
  return err instanceof FetchFailure ? err.result : 'error';
}

/** The reason of a failure for the log: a fixed text, never a response body. */
export function describe(err: unknown): string {
  if (err instanceof FetchFailure || err instanceof InvalidKeySet) return err.message;
  const cause = (err as { cause?: { code?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  return err instanceof Error ? err.name : 'unknown';
}

/** The URL without a query (which might carry a credential), for log lines. */
export function safeUrl(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}
