/**
 * Pass-through: every other authenticated `/api/v2` request, forwarded to the service with
 * http-proxy-3 on a keep-alive agent. The raw target goes out as it came (`toProxy`: no URL parser
 * in between), the hop-by-hop headers stay behind, the credentials are the gateway's (or the
 * client's), and the deadline is a real deadline (`proxyTimeout` is only an idle timer).
 */
import { Agent as HttpAgent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { performance } from 'node:perf_hooks';
import { ProxyServer } from 'http-proxy-3';
import type { Config } from '../../config/schema.js';
import { RequestKeys } from '../../auth/signature.js';
import { errors } from '../../errors.js';
import type { RequestContext } from '../../http/context.js';
import { kindOf, type UpstreamDeps } from '../../upstream/client.js';
import { upstreamRequestId } from '../../upstream/answer.js';
import { authHeaders, forwardingHeaders } from '../../upstream/outgoing.js';
import { probeReachability } from '../../upstream/probe.js';

type PassthroughConfig = NonNullable<Config['passthrough']>;

/** The pass-through's one method: forward the request and relay the answer. */
export interface PassthroughBackend {
  /** Resolves once the answer is relayed; rejects with a catalogue error when the upstream fails. */
  forward(ctx: RequestContext, signal: AbortSignal): Promise<void>;
  ready(): boolean;
  close(): Promise<void>;
}

/** Headers that describe one connection only (RFC 9110 §7.6.1), never forwarded. */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
];
/** Headers the gateway sets itself: a client's own values never go out. */
const GATEWAY_SET = [
  'authorization',
  'requestdate',
  'signature',
  'x-gateway-subject',
  'prefer',
  'content-length',
];
/** One forwarded request, as the proxy's events see it. */
interface Forwarded {
  readonly started: number;
  outgoing?: ClientRequest;
  /** True once the upstream stayed silent past `headers_timeout`. */
  idle: boolean;
  upstreamId?: string;
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);
const NAME = 'passthrough';

/** The pass-through to `config.url`. */
export function createPassthrough(config: PassthroughConfig, deps: UpstreamDeps): PassthroughBackend {
  const target = new URL(config.url);
  const agentOptions = { keepAlive: true, maxSockets: config.connections, timeout: config.body_timeout };
  const agent = target.protocol === 'https:' ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
  const proxy = new ProxyServer({
    target: config.url,
    agent,
    toProxy: true,
    changeOrigin: true,
    proxyTimeout: config.headers_timeout,
  });
  const reachability = probeReachability(target, config.connect_timeout, NAME, deps.logger);
  const keys = new RequestKeys();
  const prefix = target.pathname.replace(/\/+$/, '');
  const { metrics } = deps;
  /** What one forwarded request needs from the proxy's events, by its incoming request. */
  const inFlight = new WeakMap<IncomingMessage, Forwarded>();

  // Without an `error` listener an upstream failure would crash the process; each call has its own callback.
  proxy.on('error', () => undefined);
  proxy.on('proxyReq', (proxyReq: ClientRequest, req: IncomingMessage) => {
    const state = inFlight.get(req);
    if (state === undefined) return;
    state.outgoing = proxyReq;
    proxyReq.once('timeout', () => (state.idle = true));
  });
  // Relabels the upstream's answer before http-proxy-3 copies its headers onto ours: our RequestID
  // and Preference-Applied stay, the upstream's id comes back as X-Upstream-RequestID.
  proxy.on('proxyRes', (proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse) => {
    const state = inFlight.get(req);
    if (state !== undefined) {
      metrics.upstreamDuration.observe({ backend: NAME }, (performance.now() - state.started) / 1000);
    }
    const id = upstreamRequestId(proxyRes.headers);
    delete proxyRes.headers.requestid;
    delete proxyRes.headers['preference-applied'];
    if (id !== undefined) proxyRes.headers['x-upstream-requestid'] = id;
    if (state !== undefined) state.upstreamId = id;
    // An answer cut mid-body must not look complete: the client's connection is cut too.
    proxyRes.once('close', () => {
      if (!proxyRes.complete) res.destroy();
    });
    reachability.mark(true);
  });

  return {
    async forward(ctx, signal) {
      const { req, res } = ctx;
      const method = req.method ?? 'GET';
      const body = ctx.body;
      const headers = {
        ...forwardingHeaders(ctx, deps.trustProxy),
        ...(await authHeaders(
          config.auth,
          { method, target: prefix + ctx.rawTarget, body, client: ctx },
          keys,
        )),
      };
      if (body !== undefined && (body.size > 0 || !BODYLESS.has(method))) {
        headers['content-length'] = String(body.size);
      }
      stripHeaders(req);
      signal.throwIfAborted();
      const state: Forwarded = { started: performance.now(), idle: false };
      inFlight.set(req, state);
      await new Promise<void>((resolve, reject) => {
        const fail = (err: unknown) => {
          state.outgoing?.destroy();
          reject(err);
        };
        const onAbort = () => fail(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        res.once('close', () => signal.removeEventListener('abort', onAbort));
        res.once('finish', () => {
          if (state.upstreamId !== undefined) ctx.log.upstream_request_id = state.upstreamId;
          resolve();
        });
        proxy.web(
          req,
          res,
          { headers, ...(body === undefined ? {} : { buffer: body.stream() }) },
          (err: Error) => {
            if (signal.aborted) return;
            const kind = state.idle ? 'headers_timeout' : kindOf(err);
            metrics.upstreamErrors.inc({ backend: NAME, kind });
            if (kind === 'connect' || kind === 'dns') reachability.mark(false, kind);
            fail(state.idle ? errors.upstreamTimeout(kind) : errors.upstreamUnavailable(kind));
          },
        );
      });
    },
    ready: () => reachability.ready(),
    async close() {
      reachability.close();
      proxy.close();
      agent.destroy();
    },
  };
}

/** Removes what must not go out from the incoming headers (the proxy copies the rest). */
function stripHeaders(req: IncomingMessage): void {
  const named = req.headers.connection;
  const listed = typeof named === 'string' ? named.split(',').map((h) => h.trim().toLowerCase()) : [];
  for (const name of [...HOP_BY_HOP, ...GATEWAY_SET, ...listed]) delete req.headers[name];
}
