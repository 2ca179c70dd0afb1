/**
 * A stand-in identity provider for JWKS tests: a real HTTP server on port 0 serving a key set the
 * test changes at will (rotate keys, go down, answer garbage, hang), counting every fetch; and
 * key pairs that sign tokens with jose.
 */
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { until } from './wait.js';

export type Mode = 'ok' | 'down' | 'garbage' | 'hang';

export interface JwksServer {
  readonly url: string;
  /** Requests received so far. */
  fetches: number;
  /** The public keys served (replace the array to rotate). */
  keys: JWK[];
  mode: Mode;
  /** The status answered in `down` mode (503 unless set). */
  status: number;
  /** Served instead of the key set in `garbage` mode. */
  garbage: string;
  /** Extra response headers, e.g. `Cache-Control`. */
  headers: Record<string, string>;
  /** Delay before answering (ms). */
  delay: number;
  /** Answers the requests held in `hang` mode, as the current mode says (set it first). */
  release(): void;
  /** Resolves once `fetches` reaches `n`; rejects after `timeoutMs` (`until`'s default). */
  fetched(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startJwksServer(keys: JWK[] = []): Promise<JwksServer> {
  const waiting = new Set<ServerResponse>();
  const state = {
    fetches: 0,
    keys,
    mode: 'ok' as Mode,
    status: 503,
    garbage: '{"keys": "not a list"}',
    headers: {} as Record<string, string>,
    delay: 0,
  };
  const server = createServer((_req, res) => {
    state.fetches += 1;
    answer(res);
  });
  const answer = (res: ServerResponse) => {
    const reply = () => {
      if (state.mode === 'hang') {
        waiting.add(res);
        return;
      }
      if (state.mode === 'down') {
        res.writeHead(state.status, state.headers).end('unavailable');
        return;
      }
      const body = state.mode === 'garbage' ? state.garbage : JSON.stringify({ keys: state.keys });
      res.writeHead(200, { 'Content-Type': 'application/json', ...state.headers }).end(body);
    };
    if (state.delay > 0) setTimeout(reply, state.delay);
    else reply();
  };
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    release() {
      const held = [...waiting];
      waiting.clear();
      for (const res of held) answer(res);
    },
    async fetched(n: number, timeoutMs?: number) {
      await until(`the key set is fetched ${n} times`, () => state.fetches >= n, timeoutMs);
    },
    async close() {
      for (const res of waiting) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

export interface TestKey {
  readonly kid: string;
  readonly alg: string;
  /** The public JWK, as an identity provider publishes it. */
  readonly jwk: JWK;
  sign(claims: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
}

/** Key pairs by algorithm and number: RSA keys are slow to generate, so each is made once. */
const pairs = new Map<string, ReturnType<typeof generateKeyPair>>();

/**
 * Key pair number `n` (default 0) for `alg`, whose public JWK carries `kid` (and `alg`, unless
 * `bare`). Two keys of one test differ only when their `n` differs.
 */
export async function testKey(
  alg: string,
  kid: string,
  opts: { bare?: boolean; n?: number } = {},
): Promise<TestKey> {
  const name = `${alg}#${opts.n ?? 0}`;
  if (!pairs.has(name)) pairs.set(name, generateKeyPair(alg, { extractable: true }));
  const { privateKey, publicKey } = await pairs.get(name)!;
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, use: 'sig', ...(opts.bare ? {} : { alg }) };
  return {
    kid,
    alg,
    jwk,
    sign: (claims, header = {}) =>
      new SignJWT({ exp: Math.floor(Date.now() / 1000) + 300, ...claims })
        .setProtectedHeader({ alg, kid, ...header })
        .sign(privateKey),
  };
}
