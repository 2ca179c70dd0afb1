/**
 * Real HTTP servers standing for the replicas of an upstream service, each on its own port, that a
 * test switches between answering, answering 503, hanging, answering garbage, and stopping (the
 * port refuses) and starting again on the same port; and an undici transport over them for
 * `sendToTargets` that says when the first byte of a request was written.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Pool } from 'undici';
import type { Attempt, Transport } from '../../src/upstream/attempts.js';

/** How a replica answers: 200, the status given, not at all, not in HTTP, or by cutting the connection. */
export type Mode = 'answer' | number | 'hang' | 'garbage' | 'reset' | 'reset-mid-body';

export interface Replica {
  readonly name: string;
  readonly url: string;
  mode: Mode;
  /** Requests received (the request line read), by method and path. */
  readonly received: Array<{ method: string; url: string }>;
  /** Requests it holds unanswered (`hang`), answered 200 by `release`. */
  readonly held: ServerResponse[];
  release(): void;
  /** Stops listening and cuts every connection: its port refuses from now on. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

/**
 * Starts a replica named `name` (its 200s answer `{"from":"<name>"}`); `health` gives the status of
 * `GET /health` (0: no answer).
 */
export async function startReplica(name: string, health?: () => number): Promise<Replica> {
  const sockets = new Set<Socket>();
  const replica: Replica = {
    name,
    url: '',
    mode: 'answer',
    received: [],
    held: [],
    release() {
      for (const res of replica.held.splice(0)) answer(res);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
    start: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
  };
  const answer = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ from: name }));
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (health !== undefined && req.url === '/health') {
      const status = health();
      // 0: the check hangs (until the replica stops).
      if (status !== 0) res.writeHead(status).end();
      return;
    }
    replica.received.push({ method: req.method ?? '', url: req.url ?? '' });
    const mode = replica.mode;
    if (mode === 'reset') {
      req.socket.destroy();
      return;
    }
    if (mode === 'reset-mid-body') {
      // The request line and some of the body arrived: the connection is cut before the rest.
      req.once('data', () => req.socket.destroy());
      return;
    }
    req.resume();
    if (mode === 'hang') {
      replica.held.push(res);
      return;
    }
    if (mode === 'garbage') {
      req.socket.end('this is not HTTP\r\n\r\n');
      return;
    }
    if (typeof mode === 'number') {
      res.writeHead(mode, { 'content-type': 'text/plain' });
      res.end(`answered ${mode}`);
      return;
    }
    answer(res);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  (replica as { url: string }).url = `http://127.0.0.1:${port}`;
  return replica;
}

/** A whole answer. */
export interface Got {
  readonly status: number;
  readonly body: string;
}

/** What one request is, for `poolTransport`. */
export interface Sent {
  readonly method: string;
  readonly path: string;
  readonly body?: Buffer;
  readonly signal?: AbortSignal;
}

/**
 * Sends `sent` on the target's undici pool with undici's dispatch handler API; the attempt is told
 * it was written when undici starts writing it (`onRequestStart`, on a connected socket).
 */
export function poolTransport(sent: Sent, retried?: (reason: string) => void): Transport<Pool, Got> {
  return {
    send: (attempt: Attempt<Pool>) =>
      new Promise<Got>((resolve, reject) => {
        let status = 0;
        const chunks: Buffer[] = [];
        let controller: { abort(reason: Error): void } | undefined;
        const { signal } = sent;
        const onAbort = () => {
          controller?.abort(signal?.reason as Error);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        attempt.target.transport.dispatch(
          {
            method: sent.method as 'GET',
            path: attempt.target.prefix + sent.path,
            body: sent.body,
            headers: sent.body ? { 'content-length': String(sent.body.length) } : {},
          },
          {
            onRequestStart(c) {
              controller = c;
              if (signal?.aborted) c.abort(signal.reason as Error);
              else attempt.written();
            },
            onResponseStart(_c, code) {
              status = code;
            },
            onResponseData(_c, chunk) {
              chunks.push(chunk);
            },
            onResponseEnd() {
              signal?.removeEventListener('abort', onAbort);
              resolve({ status, body: Buffer.concat(chunks).toString() });
            },
            onResponseError(_c, err) {
              signal?.removeEventListener('abort', onAbort);
              reject(err);
            },
          },
        );
      }),
    status: (got) => got.status,
    discard: () => undefined,
    retried,
  };
}

/** A pool per target, as the upstream client opens them (`headersTimeout`: how long a hang may last). */
export const openPool = (url: URL, headersTimeout = 30_000) =>
  new Pool(url.origin, { connections: 64, connect: { timeout: 2000 }, headersTimeout });
