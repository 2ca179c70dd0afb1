/**
 * The pass-through's relay: a live request forwarded to the service with http-proxy-3 on a keep-alive
 * agent, and the service's answer written to the live response. The request line is the URL's path
 * prefix and the client's raw target, the hop-by-hop headers stay behind, the gateway's headers come
 * from the request's `ForwardedRequest` and the service's endpoint (credentials, errors, readiness,
 * all as on every other upstream path), and the deadline is a real deadline (`proxyTimeout` is only
 * an idle timer).
 */
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ProxyServer } from 'http-proxy-3';
import { errors } from '../../errors.js';
import { openUpstreamTls } from '../../tls/upstream.js';
import { relayableStatus, upstreamRequestId } from '../../upstream/answer.js';
import type { UpstreamConfig } from '../../config/upstream.js';
import { clientAttributes, createEndpoint, type UpstreamDeps } from '../../upstream/endpoint.js';
import type { ForwardedRequest } from '../../upstream/forwarded.js';
import type { RequestContext } from '../../http/context.js';
import { pipe, writeHead } from '../../http/respond.js';
import { OUTGOING, type Outgoing, outgoingAgent } from './agent.js';
import { answerHeaders, droppedHeaders } from './headers.js';

/** Forwards a request and relays its answer. */
export interface ProxyRelay {
  /**
   * Resolves once the answer is relayed; rejects with a catalogue error when the upstream fails.
   * `meter` is told how long the upstream took to answer (or fail).
   */
  forward(
    ctx: RequestContext,
    request: ForwardedRequest,
    signal: AbortSignal,
    meter?: { spent?(ms: number): void },
  ): Promise<void>;
  ready(): boolean;
  close(): Promise<void>;
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/** One forwarded request, as the proxy's events see it. */
interface InFlight {
  outgoing?: ClientRequest;
  /** Writes the upstream's answer to the client. */
  answered(proxyRes: IncomingMessage, res: ServerResponse): void;
  /** The outgoing request has a socket: bound its connect by `connect_timeout`. */
  connecting(socket: Socket): void;
  /** The upstream switched protocols unasked: its socket, detached from the agent. */
  upgraded(socket: Socket): void;
}

/** The relay to the service at `config.url`, labelled `passthrough`. */
export function createProxyRelay(config: UpstreamConfig, deps: UpstreamDeps): ProxyRelay {
  const tls =
    config.tls &&
    openUpstreamTls(config.tls, 'passthrough.tls', { logger: deps.logger, metrics: deps.metrics.tls });
  const endpoint = createEndpoint(config, 'passthrough', deps);
  const agent = outgoingAgent(endpoint.url.protocol === 'https:', {
    keepAlive: true,
    maxSockets: config.connections,
  });
  // The private CA and client certificate go on the agent: http-proxy-3 passes no TLS options of its own.
  if (tls && agent instanceof HttpsAgent) tls.keep(agent);
  // The answer is written here (`selfHandleResponse`): hop-by-hop headers stay behind, and the
  // client's own `Connection: close` is honoured by Node.
  const proxy = new ProxyServer({ target: config.url, agent, changeOrigin: true, selfHandleResponse: true });
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
  proxy.on('proxyRes', (proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse) => {
    const state = inFlight.get(req);
    if (state === undefined) {
      proxyRes.destroy();
      return;
    }
    state.answered(proxyRes, res);
  });

  return {
    async forward(ctx, request, signal, meter) {
      const body = ctx.body;
      const path = endpoint.prefix + request.target;
      const headers = await endpoint.headers(request, path, body);
      if (body !== undefined && (body.size > 0 || !BODYLESS.has(request.method))) {
        headers['content-length'] = String(body.size);
      }
      signal.throwIfAborted();
      const { tracing } = deps;
      if (tracing === undefined) return relay(ctx, signal, meter, path, headers);
      const attributes = clientAttributes(endpoint.url, request.method, request.target, 'passthrough');
      return tracing.span(request.method, 'client', attributes, (span) => {
        // The span's own id goes out: the service's spans are its children.
        headers.traceparent = span.traceparent();
        return relay(ctx, signal, meter, path, headers);
      });
    },
    ready: () => endpoint.ready(),
    async close() {
      endpoint.close();
      tls?.close();
      proxy.close();
      agent.destroy();
    },
  };

  /** Forwards the request with `headers` and relays the answer (see `forward`). */
  function relay(
    ctx: RequestContext,
    signal: AbortSignal,
    meter: { spent?(ms: number): void } | undefined,
    path: string,
    headers: Record<string, string>,
  ): Promise<void> {
    const { req, res } = ctx;
    const body = ctx.body;
    const started = performance.now();
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      const fail = (err: unknown) => {
        clearTimeout(waiting);
        clearTimeout(connectTimer);
        state.outgoing?.destroy();
        if (settled) return;
        settled = true;
        meter?.spent?.(performance.now() - started);
        reject(endpoint.failed(err, signal, started));
      };
      const onAbort = () => fail(signal.reason);
      // `headers_timeout` bounds the wait for the answer's headers; `body_timeout` each pause after.
      const waiting = setTimeout(
        () => fail(errors.upstreamTimeout('headers_timeout')),
        config.headers_timeout,
      );
      const state: InFlight = {
        connecting(socket) {
          if (!socket.connecting) return;
          connectTimer = setTimeout(
            () => fail(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })),
            config.connect_timeout,
          );
          socket.once('connect', () => clearTimeout(connectTimer));
        },
        upgraded(socket) {
          socket.destroy();
          fail(errors.upstreamBadAnswer('status'));
        },
        answered(proxyRes, out) {
          clearTimeout(waiting);
          const status = proxyRes.statusCode ?? 0;
          // A status outside 100-599, or a 101 nobody asked for (Upgrade never goes out), is garbage.
          if (!relayableStatus(status)) {
            proxyRes.destroy();
            fail(errors.upstreamBadAnswer('status'));
            return;
          }
          meter?.spent?.(performance.now() - started);
          endpoint.answered(started);
          const id = upstreamRequestId(proxyRes.headers);
          if (id !== undefined) ctx.log.upstream_request_id = id;
          try {
            writeHead(ctx, status, answerHeaders(proxyRes, id, ctx.headers.includes('RateLimit-Policy')));
          } catch (err) {
            // A header value Node will not write (a control character): the answer is unusable.
            proxyRes.destroy();
            fail(errors.upstreamBadAnswer('protocol', err));
            return;
          }
          settled = true;
          proxyRes.setTimeout(config.body_timeout, () =>
            proxyRes.destroy(Object.assign(new Error('body timeout'), { code: 'UND_ERR_BODY_TIMEOUT' })),
          );
          pipe(proxyRes, ctx).then(resolve, (err: unknown) => {
            // Cut mid-body: the client's connection is cut too (a truncated answer never looks complete).
            out.destroy();
            reject(proxyRes.complete || signal.aborted ? err : endpoint.failed(err, signal));
          });
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
}
