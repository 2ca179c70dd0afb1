/**
 * A stub of the service behind the gateway, on port 0: it records every request it receives and
 * verifies the signed-request headers with its own HMAC chain (written here from the reference's
 * description, not with the gateway's code), so a test sees what the upstream would accept.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Test } from 'tap';
import { startGateway, type TestGateway } from './gateway.js';

export interface Seen {
  method: string;
  /** The request target exactly as on the request line. */
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
  /** For a signed request: whether its signature verified with `key`; undefined when not signed. */
  signatureValid: boolean | undefined;
  /** True once the gateway closed the request before the answer was finished. */
  aborted: boolean;
  /** True once the exchange is over: answered, or cut (then `aborted` too). */
  closed: boolean;
}

export type Respond = (req: IncomingMessage, res: ServerResponse, seen: Seen) => void | Promise<void>;

export interface StubUpstream {
  url: string;
  port: number;
  seen: Seen[];
  /** What the next requests get (default: 200 `{"ok":true}`). */
  respond: Respond;
  /** Connections open right now. */
  connections(): number;
  /** Stops accepting and cuts every connection. */
  close(): Promise<void>;
}

/** The signature the reference expects: HMAC chain over method+target, the date to the hour, the body. */
export function referenceSignature(key: string, method: string, target: string, date: string, body: Buffer) {
  const first = createHmac('sha256', key).update(`${method}${target}`).digest();
  const second = createHmac('sha256', first).update(date.slice(0, 13)).digest();
  return createHmac('sha256', second).update(body).digest();
}

/** Starts the stub; `tokenKey` verifies requests signed by the gateway's outgoing token. */
export async function startUpstream(tokenKey = 'upstream-key'): Promise<StubUpstream> {
  const sockets = new Set<Socket>();
  const stub: StubUpstream = {
    url: '',
    port: 0,
    seen: [],
    respond: (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', RequestID: 'upstream-id-1' });
      res.end('{"ok":true}');
    },
    connections: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    const seen: Seen = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.alloc(0),
      signatureValid: undefined,
      aborted: false,
      closed: false,
    };
    stub.seen.push(seen);
    res.once('close', () => {
      if (!res.writableFinished) seen.aborted = true;
      seen.closed = true;
    });
    for await (const c of req) chunks.push(c as Buffer);
    seen.body = Buffer.concat(chunks);
    const signature = req.headers.signature;
    const date = req.headers.requestdate;
    if (typeof signature === 'string' && typeof date === 'string') {
      const expected = referenceSignature(tokenKey, seen.method, seen.url, date, seen.body);
      const given = Buffer.from(signature, 'base64');
      seen.signatureValid = given.length === expected.length && timingSafeEqual(given, expected);
    }
    await stub.respond(req, res, seen);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  stub.port = port;
  stub.url = `http://127.0.0.1:${port}`;
  return stub;
}

/** An upstream backend's configuration for `stub`, signing with the stub's token. */
export function upstreamBackend(stub: { url: string }, over: Record<string, unknown> = {}) {
  return {
    type: 'upstream',
    path: undefined,
    url: stub.url,
    auth: { type: 'signature', token_id: UPSTREAM_TOKEN_ID, token_key: 'upstream-key' },
    ...over,
  };
}

export const UPSTREAM_TOKEN_ID = '0d9e8f7a-6b5c-4d3e-9f1a-2b3c4d5e6f70';

/**
 * A stub that never answers and a gateway whose asset_group_tags backend it is, both closed when `t`
 * ends (the gateway first): for requests that stay in flight.
 */
export async function gatewayOnSilentUpstream(t: Test): Promise<{ gw: TestGateway; stub: StubUpstream }> {
  const stub = await startUpstream();
  stub.respond = () => undefined;
  const gw = await startGateway({ backends: { asset_group_tags: upstreamBackend(stub) } });
  t.teardown(async () => {
    await gw.close();
    await stub.close();
  });
  return { gw, stub };
}
