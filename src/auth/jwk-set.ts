/**
 * One JSON Web Key Set, read and checked once when it is fetched: each key imported (with jose's
 * `importJWK`) for every algorithm it may verify, so that a request only looks a key up. Anything the
 * gateway must never verify with (a private or symmetric key, a short RSA key, a key for encryption)
 * is left out here, not refused later per request.
 */
import { calculateJwkThumbprint, importJWK, type JWK } from 'jose';
import { ASYMMETRIC_ALGORITHMS as ALGORITHMS } from '../config/jwt-schema.js';

/** A key ready to verify with: what jose's `jwtVerify` accepts. */
export type VerifyKey = Awaited<ReturnType<typeof importJWK>>;

/** The asymmetric JWS algorithms a JWKS key may verify (the configuration's allow-list draws on them). */
export const ASYMMETRIC_ALGORITHMS: readonly string[] = ALGORITHMS;

const RSA = ASYMMETRIC_ALGORITHMS.filter((a) => a.startsWith('RS') || a.startsWith('PS'));
const EC_CURVES: Readonly<Record<string, string>> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };
/** Members only a private or symmetric key has: such a key is never used to verify. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
/** More keys than any identity provider publishes: a larger set is refused as garbage. */
export const MAX_KEYS = 100;
/** jose refuses shorter RSA keys when verifying; leaving them out here keeps the reason exact. */
const MIN_RSA_BITS = 2048;

/** A key of the set with the algorithms it verifies. */
export interface LoadedKey {
  readonly kid: string | undefined;
  /**
   * The `kid` with the RFC 7638 thumbprint: which key verified a cached token. A key republished
   * under another `kid`, or other material under the same `kid`, is another key.
   */
  readonly fingerprint: string;
  readonly byAlg: ReadonlyMap<string, VerifyKey>;
}

/** A key set that cannot be used (the previous one keeps serving); the message goes to the log. */
export class InvalidKeySet extends Error {}

/** A `jwks_url` that answers an OpenID discovery document instead of a key set: a common mistake. */
class DiscoveryDocumentGiven extends InvalidKeySet {
  constructor() {
    super('a discovery document, not a key set: use discovery: true, or its jwks_uri as jwks_url');
  }
}

/**
 * The usable keys of a JWKS document, for the `allowed` algorithms. Throws `InvalidKeySet` when the
 * document is not a key set or holds no usable key; individual unusable keys are skipped.
 */
export async function readKeySet(text: string, allowed: ReadonlySet<string>): Promise<LoadedKey[]> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new InvalidKeySet('not JSON');
  }
  const list = isObject(doc) ? doc.keys : undefined;
  if (!Array.isArray(list)) {
    if (isObject(doc) && typeof doc.jwks_uri === 'string') throw new DiscoveryDocumentGiven();
    throw new InvalidKeySet('no "keys" array');
  }
  if (list.length > MAX_KEYS) throw new InvalidKeySet(`more than ${MAX_KEYS} keys`);
  const keys: LoadedKey[] = [];
  for (const jwk of list) {
    const key = isObject(jwk) ? await loadKey(jwk as JWK, allowed) : undefined;
    if (key) keys.push(key);
  }
  if (keys.length === 0) throw new InvalidKeySet('no usable key');
  return keys;
}

async function loadKey(jwk: JWK, allowed: ReadonlySet<string>): Promise<LoadedKey | undefined> {
  if (PRIVATE_MEMBERS.some((m) => m in jwk)) return undefined;
  if (jwk.kid !== undefined && typeof jwk.kid !== 'string') return undefined;
  const byAlg = new Map<string, VerifyKey>();
  for (const alg of algorithmsOf(jwk)) {
    if (!allowed.has(alg)) continue;
    try {
      const key = await importJWK(jwk, alg);
      if (isShortRsa(key)) continue;
      byAlg.set(alg, key);
    } catch {
      // A malformed key (a bad modulus, a point off the curve): the others still serve.
    }
  }
  if (byAlg.size === 0) return undefined;
  const fingerprint = JSON.stringify([jwk.kid ?? null, await calculateJwkThumbprint(jwk)]);
  return { kid: jwk.kid, fingerprint, byAlg };
}

/** The algorithms a public key may verify: its `alg` if it names one, else its type's family. */
function algorithmsOf(jwk: JWK): readonly string[] {
  if (jwk.use !== undefined && jwk.use !== 'sig') return [];
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) return [];
  let family: readonly string[] = [];
  if (jwk.kty === 'RSA') family = RSA;
  else if (jwk.kty === 'EC' && typeof jwk.crv === 'string' && EC_CURVES[jwk.crv])
    family = [EC_CURVES[jwk.crv]!];
  else if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') family = ['EdDSA', 'Ed25519'];
  return jwk.alg === undefined ? family : family.filter((a) => a === jwk.alg);
}

function isShortRsa(key: VerifyKey): boolean {
  const algorithm = (key as { algorithm?: { modulusLength?: number } }).algorithm;
  return typeof algorithm?.modulusLength === 'number' && algorithm.modulusLength < MIN_RSA_BITS;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What a token's header finds in the set: the one key to verify with, or why there is none. */
export type Lookup =
  { readonly key: VerifyKey; readonly fingerprint: string } | 'unknown' | 'bad_algorithm' | 'ambiguous_key';

/**
 * The key for a token's `alg` and `kid`. `unknown` (nothing under that `kid`, or no key at all for
 * the `alg` of a token without one) may be a rotation the gateway has not seen yet; a known `kid`
 * whose key cannot verify `alg` is not (`bad_algorithm`, no refetch). Without a `kid`, exactly one
 * key must fit: the gateway does not try keys in turn.
 */
export function lookUp(keys: readonly LoadedKey[], alg: string, kid: string | undefined): Lookup {
  const named = kid === undefined ? keys : keys.filter((k) => k.kid === kid);
  const usable = named.filter((k) => k.byAlg.has(alg));
  const [only] = usable;
  if (usable.length === 1 && only) return { key: only.byAlg.get(alg)!, fingerprint: only.fingerprint };
  if (usable.length > 1) return 'ambiguous_key';
  return kid !== undefined && named.length > 0 ? 'bad_algorithm' : 'unknown';
}
