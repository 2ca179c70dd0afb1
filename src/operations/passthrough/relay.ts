/**
 * The pass-through's relay: a live request forwarded to the service with http-proxy-3 on a keep-alive
 * agent, to the target the target set picks (and again to another where the retry rules allow,
 * before any byte of the answer is written), and the service's answer written to the live response.
 * The request line is the target's path prefix and the client's raw target, the hop-by-hop headers
 * stay behind, the gateway's headers come from the request's `ForwardedRequest` and the service's
 * endpoint (credentials, errors, targets, readiness, all as on every other upstream path), and the
 * deadline is a real deadline (`proxyTimeout` is only an idle timer).
 */
import type { Agent as HttpAgent, ClientRequest, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ProxyServer } from 'http-proxy-3';
import { errors } from '../../errors.js';
import { openUpstreamTls } from '../../tls/upstream.js';
import { relayableStatus, upstreamRequestId } from '../../upstream/answer.js';
import type { UpstreamConfig } from '../../config/upstream.js';
import { targetUrls } from '../../config/upstream-targets.js';
import type { Attempt, Sending } from '../../upstream/attempts.js';
import { clientAttributes, createEndpoint, type UpstreamDeps } from '../../upstream/endpoint.js';
import { openTargets, type Reached, type UpstreamTarget } from '../../upstream/upstream-targets.js';
import type { ForwardedRequest } from '../../upstream/forwarded.js';
import type { RequestContext } from '../../http/context.js';
import { pipe, writeHead } from '../../http/respond.js';
import { OUTGOING, type Outgoing, outgoingAgent } from './agent.js';
import { answerHeaders, droppedHeaders } from './headers.js';

/** What the request line is told: `upstream_ms` and `upstream_target`. */
type Meter = { spent?(ms: number): void; answeredBy?(target: string): void };

/** Forwards a request and relays its answer. */
export interface ProxyRelay {
  /**
   * Resolves once the answer is relayed; rejects with a catalogue error when the upstream fails.
   * `meter` is told how long the upstream took to answer (or fail) and which target answered.
   */
  forward(ctx: RequestContext, request: ForwardedRequest, signal: AbortSignal, meter?: Meter): Promise<void>;
  ready(): boolean;
  close(): Promise<void>;
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/** One attempt of a forwarded request, as the proxy's events see it. */
interface InFlight {
  outgoing?: ClientRequest;
  /** The upstream's answer arrived (its head). */
  answered(proxyRes: IncomingMessage): void;
  /** The outgoing request has a socket: bound its connect by `connect_timeout`. */
  connecting(socket: Socket): void;
  /** The upstream switched protocols unasked: its socket, detached from the agent. */
  upgraded(socket: Socket): void;
}

/** The relay to the service at `config.targets` (or `config.url`), labelled `passthrough`. */
export function createProxyRelay(config: UpstreamConfig, deps: UpstreamDeps): ProxyRelay {
  const tls =
    config.tls &&
    openUpstreamTls(config.tls, 'passthrough.tls', { logger: deps.logger, metrics: deps.metrics.tls });
  const endpoint = createEndpoint(config, 'passthrough', deps);
  const https = (targetUrls(config)[0] as string).startsWith('https:');
  // One agent for every target: it keeps a pool of `connections` sockets per origin.
  const agent = outgoingAgent(https, { keepAlive: true, maxSockets: config.connections });
  // The private CA and client certificate go on the agent: http-proxy-3 passes no TLS options of its own.
  if (tls && agent instanceof HttpsAgent) tls.keep(agent);
  const connect = tls ? tls.connector(config.connect_timeout) : { timeout: config.connect_timeout };
  const targets = openTargets(config, 'passthrough', deps, () => agent, connect);
  // The answer is written here (`selfHandleResponse`): hop-by-hop headers stay behind, and the
  // client's own `Connection: close` is honoured by Node.
  const proxy = new ProxyServer({ agent, changeOrigin: true, selfHandleResponse: true });
  const inFlight = new WeakMap<IncomingMessage, InFlight>();

  // Without an `error` listener an upstream failure would crash the process; each call has its own callback.
  proxy.on('error', () => undefined);
  proxy.on('proxyReq', (proxyReq: ClientRequest, req: IncomingMessage, _res, _options, socket: Socket) => {
    const state = inFlight.get(req);
    if (state === undefined) return;
    state.outgoing = proxyReq;
    state.connecting(socket);
    // Node hands a 101 that names a protocol to `upgrade`, never to `response`: nobody asked for one.
    proxyReq.once('upgrade', (_res: IncomingMessage, upgraded: Socket) => state.upgraded(upgraded));
  });
  proxy.on('proxyRes', (proxyRes: IncomingMessage, req: IncomingMessage) => {
    const state = inFlight.get(req);
    if (state === undefined) {
      proxyRes.destroy();
      return;
    }
    state.answered(proxyRes);
  });

  return {
    async forward(ctx, request, signal, meter) {
      const { req } = ctx;
      const sending: Sending = {
        method: request.method,
        // A public request (no identity, contract §11) is never sent again once a byte of it went out.
        replayable: ctx.identity !== undefined,
        // A body streaming from the client (not held) can go out once only.
        once: ctx.body === undefined && !bodyless(req),
        signal,
        ...(request.deadlineAt === undefined ? {} : { deadlineAt: request.deadlineAt }),
      };
      const { answer, target } = await targets.send(sending, {
        send: (attempt) => send(ctx, request, signal, meter, attempt),
        status: (proxyRes) => proxyRes.statusCode ?? 0,
        discard: (proxyRes) => proxyRes.destroy(),
        settle: (proxyRes, end) => {
          if (proxyRes.closed) end();
          else proxyRes.once('close', end);
        },
      });
      meter?.answeredBy?.(target.name);
      return write(ctx, answer, signal);
    },
    ready: () => targets.ready(),
    async close() {
      await targets.close();
      tls?.close();
      proxy.close();
      agent.destroy();
    },
  };

  /** One attempt: the request sent to `attempt.target`, resolving with its answer's head. */
  async function send(
    ctx: RequestContext,
    request: ForwardedRequest,
    signal: AbortSignal,
    meter: Meter | undefined,
    { target, written }: Attempt<Reached<HttpAgent>>,
  ): Promise<IncomingMessage> {
    const body = ctx.body;
    const path = target.prefix + request.target;
    const headers = await endpoint.headers(request, path, body);
    if (body !== undefined && (body.size > 0 || !BODYLESS.has(request.method))) {
      headers['content-length'] = String(body.size);
    }
    signal.throwIfAborted();
    const { tracing } = deps;
    if (tracing === undefined) return attempt(ctx, signal, meter, target, path, headers, written);
    const attributes = clientAttributes(target.url, request.method, request.target, 'passthrough');
    return tracing.span(request.method, 'client', attributes, ctx.span, (span) => {
      // The span's own id goes out: the service's spans are its children.
      headers.traceparent = span.traceparent();
      return attempt(ctx, signal, meter, target, path, headers, written);
    });
  }

  /** Sends the request with `headers` to `target`; resolves with the answer's head (see `send`). */
  function attempt(
    ctx: RequestContext,
    signal: AbortSignal,
    meter: Meter | undefined,
    target: UpstreamTarget<HttpAgent>,
    path: string,
    headers: Record<string, string>,
    written: () => void,
  ): Promise<IncomingMessage> {
    const { req, res } = ctx;
    const body = ctx.body;
    const started = performance.now();
    return new Promise<IncomingMessage>((resolve, reject) => {
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      const fail = (err: unknown) => {
        clearTimeout(waiting);
        clearTimeout(connectTimer);
        state.outgoing?.destroy();
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        meter?.spent?.(performance.now() - started);
        const failure = endpoint.failed(err, signal, started);
        targets.contact(target, false, failure);
        reject(failure);
      };
      // Until the answer is over: the deadline or the client gone stops its body too.
      const onAbort = () => fail(signal.reason);
      // `headers_timeout` bounds the wait for the answer's headers; `body_timeout` each pause after.
      const waiting = setTimeout(
        () => fail(errors.upstreamTimeout('headers_timeout')),
        config.headers_timeout,
      );
      const state: InFlight = {
        connecting(socket) {
          // On a connected socket Node writes the request at once: from here on, bytes of it went out.
          if (!socket.connecting) return written();
          connectTimer = setTimeout(
            () => fail(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })),
            config.connect_timeout,
          );
          socket.once('connect', () => {
            clearTimeout(connectTimer);
            written();
          });
        },
        upgraded(socket) {
          socket.destroy();
          fail(errors.upstreamBadAnswer('status'));
        },
        answered(proxyRes) {
          clearTimeout(waiting);
          // A status outside 100-599, or a 101 nobody asked for (Upgrade never goes out), is garbage.
          if (!relayableStatus(proxyRes.statusCode ?? 0)) {
            proxyRes.destroy();
            fail(errors.upstreamBadAnswer('status'));
            return;
          }
          settled = true;
          meter?.spent?.(performance.now() - started);
          endpoint.answered(started);
          targets.contact(target, true);
          resolve(proxyRes);
        },
      };
      inFlight.set(req, state);
      signal.addEventListener('abort', onAbort, { once: true });
      res.once('close', () => signal.removeEventListener('abort', onAbort));
      const outgoing: Outgoing = { path, dropped: droppedHeaders(req, ctx.peerTrusted, headers) };
      proxy.web(
        req,
        res,
        {
          target: target.url.origin,
          headers,
          // The base of the outgoing request's options: the agent reads it (below).
          ssl: { [OUTGOING]: outgoing },
          ...(body === undefined ? {} : { buffer: body.stream() }),
        },
        (err: Error) => {
          if (signal.aborted) return;
          fail(err);
        },
      );
    });
  }

  /** Writes the upstream's answer to the client: its head, then its body as it comes. */
  function write(ctx: RequestContext, proxyRes: IncomingMessage, signal: AbortSignal): Promise<void> {
    const status = proxyRes.statusCode as number;
    const id = upstreamRequestId(proxyRes.headers);
    if (id !== undefined) ctx.log.upstream_request_id = id;
    try {
      writeHead(ctx, status, answerHeaders(proxyRes, id, ctx.headers.includes('RateLimit-Policy')));
    } catch (err) {
      // A header value Node will not write (a control character): the answer is unusable.
      proxyRes.destroy();
      return Promise.reject(endpoint.failed(errors.upstreamBadAnswer('protocol', err), signal));
    }
    proxyRes.setTimeout(config.body_timeout, () =>
      proxyRes.destroy(Object.assign(new Error('body timeout'), { code: 'UND_ERR_BODY_TIMEOUT' })),
    );
    return pipe(proxyRes, ctx).catch((err: unknown) => {
      // Cut mid-body: the client's connection is cut too (a truncated answer never looks complete).
      ctx.res.destroy();
      throw proxyRes.complete || signal.aborted ? err : endpoint.failed(err, signal);
    });
  }
}

/** Whether `req` frames no body (no length, or length 0, and not chunked). */
function bodyless(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
}
