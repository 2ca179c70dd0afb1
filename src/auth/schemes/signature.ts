/**
 * Signed requests (contract §3): `Authorization: <scheme> <token id>`, `RequestDate` and `Signature`,
 * checked in the contract's order so that a request with several faults always gets the same
 * answer; the body is hashed as it is read and verified before any later stage sees it. The chain
 * itself, the cached request keys and the date format are the signing module's (`src/signing/`).
 */
import { errors } from '../../errors.js';
import { emptyBody, type HeldBody } from '../../http/body.js';
import type { RequestContext } from '../../http/context.js';
import { type RequestDate, RequestDateReader } from '../../signing/request-date.js';
import { RequestKeys } from '../../signing/request-keys.js';
import { canonicalTokenId } from '../../signing/token-id.js';
import { createTokenRegistry, type UsableToken } from '../../tokens/registry.js';
import { type AuthScheme, NOT_MINE } from './scheme.js';
import { checkClockSkew, checkUtcOffset, parseSignature, signaturesEqual } from './signature-checks.js';
import { signedSummary } from './signature-summary.js';

/** The signature scheme: its word is `auth.signature.scheme`; on with a token in the YAML list. */
export const signature: AuthScheme = {
  name: 'signature',
  reasons: [
    'malformed_token_id',
    'no_date',
    'no_signature',
    'malformed_date',
    'malformed_signature',
    'unknown_token',
    'revoked_token',
    'expired_token',
    'utc_offset',
    'clock_skew',
    'digest_mismatch',
  ],
  open(deps) {
    const { now, body: reader } = deps;
    const config = deps.auth.signature;
    const word = config.scheme.toLowerCase();
    const tokens = deps.tokens ?? createTokenRegistry({ tokens: config.tokens });
    const requestKeys = new RequestKeys();
    const dates = new RequestDateReader();
    // A revoked, rotated or removed token's cached signing keys go with it.
    tokens.onDrop((id) => requestKeys.forget(id));
    const challenge = `${config.scheme} realm="api"`;

    /** Refuses a digest mismatch, saying what was signed (in the response body only: it holds the query). */
    const mismatch = async (ctx: RequestContext, date: string, body: HeldBody): Promise<never> => {
      const summary = config.explain_mismatch
        ? await signedSummary(ctx.req.method ?? '', ctx.rawTarget, date, body).catch(() => undefined)
        : undefined;
      await body.dispose();
      throw errors.digestMismatch(summary);
    };

    /** The token's identity once its signature `matched` over `body`, which is then held verified. */
    const verified = (
      ctx: RequestContext,
      token: UsableToken,
      date: string,
      matched: boolean,
      body: HeldBody,
    ) => {
      if (!matched) return mismatch(ctx, date, body);
      token.used();
      ctx.body = body;
      return token.identity;
    };

    return {
      on: config.tokens.length > 0,
      challenge: () => challenge,
      // The checks in the contract's order; no closure is made per request without a body.
      claim(ctx, credentials) {
        if (credentials.word !== word) return NOT_MINE;
        const tokenId = credentials.credential as string;
        // The registry holds canonical ids: an id it knows as sent is canonical, and only an id it
        // does not know is read for its form (and looked up again in its canonical form).
        let token = tokens.get(tokenId);
        let canonicalId = tokenId;
        if (!token.ok && token.reason === 'unknown_token') {
          const canonical = canonicalTokenId(tokenId);
          if (canonical === undefined) throw errors.tokenIdMalformed();
          canonicalId = canonical;
          if (canonical !== tokenId) token = tokens.get(canonical);
        }
        // The id is public (a user name, not a secret): log the one claimed, known or not.
        ctx.log.token_id = canonicalId;
        const date = credentials.requestDate;
        if (date === undefined) throw errors.noRequestDate();
        const clientTime: RequestDate = dates.read(date);
        if (credentials.signature === undefined) throw errors.noSignature();
        const given = parseSignature(credentials.signature);
        if (!token.ok) throw errors.unknownToken(token.reason);
        // The minutes and zone of RequestDate are not signed: a zone far from UTC would let a
        // captured request look current for hours (§3 "Replay bound").
        checkUtcOffset(clientTime, config.max_utc_offset);
        checkClockSkew(clientTime, now(), config.max_clock_skew);

        // During a rotation's overlap two keys verify: both are hashed and both compared.
        const method = ctx.req.method ?? '';
        const keys = token.keys;
        const empty = emptyBody(ctx.req);
        if (empty === undefined) return readHashed(ctx, token, date, given);
        // No body (the common GET): the signature of an empty body, kept for a request that repeats.
        let matched = false;
        for (const k of keys) {
          if (signaturesEqual(requestKeys.empty(k.cacheId, k.key, method, ctx.rawTarget, date), given))
            matched = true;
        }
        return verified(ctx, token, date, matched, empty);
      },
    };

    /** Reads the body, hashing it with each key's chain as it arrives, then compares. */
    function readHashed(ctx: RequestContext, token: UsableToken, date: string, given: Buffer) {
      const method = ctx.req.method ?? '';
      const digests = token.keys.map((k) => requestKeys.open(k.cacheId, k.key, method, ctx.rawTarget, date));
      const onChunk = (chunk: Buffer) => {
        for (const digest of digests) digest.update(chunk);
      };
      return reader.readAll(ctx, onChunk).then((body) => {
        let matched = false;
        for (const digest of digests) if (signaturesEqual(digest.digest(), given)) matched = true;
        return verified(ctx, token, date, matched, body);
      });
    }
  },
};
