/**
 * A real, certified OpenID provider for front-door tests: `oidc-provider` from npm on port 0, with the
 * client_credentials grant, resource indicators and JWT access tokens, as operators run it. The test
 * can rotate its signing key (the provider is rebuilt with a new key first in its key set, the old one
 * still published, as oidc-provider documents a rotation), stop it and start it again on the same
 * port, and count the requests it answered by path.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

/** The resource (audience) the provider issues access tokens for. */
export const RESOURCE = 'https://gateway.test/api';
/** The scopes a client may ask for. */
export const SCOPES = ['members:read', 'checksums:read', 'admin'];

export interface OidcProvider {
  /** Its issuer identifier: `http://127.0.0.1:<port>`, no trailing slash. */
  readonly issuer: string;
  readonly port: number;
  /** Requests answered so far, by path (`/jwks`, `/.well-known/openid-configuration`, `/token`). */
  requests(path: string): number;
  /** An access token from the token endpoint (client_credentials, resource indicator). */
  token(scope?: string): Promise<string>;
  /** The `kid` of the key signing now. */
  readonly kid: string;
  /** Publishes a new key and signs with it from now on; the previous keys stay published. */
  rotate(): Promise<void>;
  /** Stops answering (connections refused) until `start`. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface OidcOptions {
  /** Claims added to every access token (Keycloak-style nested roles, namespaced claims). */
  extraClaims?: Record<string, unknown>;
}

const CLIENT = { id: 'gateway-tests', secret: 'a-client-secret-for-the-tests' };

export async function startOidcProvider(options: OidcOptions = {}): Promise<OidcProvider> {
  const counts = new Map<string, number>();
  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0] as string;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    handle(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const keys: JWK[] = [];

  const build = () => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: CLIENT.id,
          client_secret: CLIENT.secret,
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
          id_token_signed_response_alg: 'ES256',
        },
      ],
      jwks: { keys },
      scopes: SCOPES,
      ttl: { ClientCredentials: 300 },
      extraTokenClaims: () => options.extraClaims,
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => RESOURCE,
          useGrantedResource: () => true,
          getResourceServerInfo: () => ({
            scope: SCOPES.join(' '),
            audience: RESOURCE,
            accessTokenFormat: 'jwt',
            accessTokenTTL: 300,
            jwt: { sign: { alg: 'ES256' } },
          }),
        },
      },
    });
    handle = provider.callback();
  };

  const rotate = async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    // oidc-provider signs with the first key of the algorithm: the new one goes first.
    keys.unshift({
      ...(await exportJWK(privateKey)),
      kid: `key-${keys.length + 1}`,
      use: 'sig',
      alg: 'ES256',
    });
    build();
  };
  await rotate();

  return {
    issuer,
    port,
    requests: (path) => counts.get(path) ?? 0,
    get kid() {
      return keys[0]?.kid as string;
    },
    async token(scope = 'members:read') {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource: RESOURCE }),
      });
      const body = (await res.json()) as { access_token?: string };
      if (res.status !== 200 || body.access_token === undefined) {
        throw new Error(`token endpoint answered ${res.status}: ${JSON.stringify(body)}`);
      }
      return body.access_token;
    },
    rotate,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async start() {
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    async close() {
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
