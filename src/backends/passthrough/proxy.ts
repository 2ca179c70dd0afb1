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
import { pipe } from '../../http/respond.js';
import { kindOf, type UpstreamDeps } from '../../upstream/client.js';
import { relayableStatus, upstreamRequestId } from '../../upstream/answer.js';
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
  /** The target that goes out: the URL's path prefix and the client's raw target. */
  readonly path: string;
  outgoing?: ClientRequest;
  /** Writes the upstream's answer to the client. */
  answered(proxyRes: IncomingMessage, res: ServerResponse): void;
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);
const NAME = 'passthrough';

/** The pass-through to `config.url`. */
export function createPassthrough(config: PassthroughConfig, deps: UpstreamDeps): PassthroughBackend {
  const target = new URL(config.url);
  const agent = rawTargetAgent(target.protocol === 'https:', {
    keepAlive: true,
    maxSockets: config.connections,
  });
  // The answer is written here (`selfHandleResponse`): hop-by-hop headers stay behind, and the
  // client's own `Connection: close` is honoured by Node.
  const proxy = new ProxyServer({ target: config.url, agent, changeOrigin: true, selfHandleResponse: true });
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
    if (state !== undefined) state.outgoing = proxyReq;
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
    async forward(ctx, signal) {
      const { req, res } = ctx;
      const method = req.method ?? 'GET';
      const body = ctx.body;
      const path = prefix + ctx.rawTarget;
      const headers = {
        ...forwardingHeaders(ctx),
        ...(await authHeaders(config.auth, { method, target: path, body, client: ctx }, keys)),
      };
      if (body !== undefined && (body.size > 0 || !BODYLESS.has(method))) {
        headers['content-length'] = String(body.size);
      }
      stripHeaders(req, ctx.peerTrusted);
      signal.throwIfAborted();
      const started = performance.now();
      await new Promise<void>((resolve, reject) => {
        let settled = false;
        const fail = (err: unknown, kind?: string) => {
          clearTimeout(waiting);
          state.outgoing?.destroy();
          if (kind !== undefined) metrics.upstreamErrors.inc({ backend: NAME, kind });
          if (settled) return;
          settled = true;
          reject(err);
        };
        const onAbort = () => fail(signal.reason, 'aborted');
        // `headers_timeout` bounds the wait for the answer's headers; `body_timeout` each pause after.
        const waiting = setTimeout(
          () => fail(errors.upstreamTimeout('headers_timeout'), 'headers_timeout'),
          config.headers_timeout,
        );
        const state: Forwarded = {
          path,
          answered(proxyRes, out) {
            clearTimeout(waiting);
            metrics.upstreamDuration.observe({ backend: NAME }, (performance.now() - started) / 1000);
            const status = proxyRes.statusCode ?? 0;
            // A status outside 100-599, or a 101 nobody asked for (Upgrade never goes out), is garbage.
            if (!relayableStatus(status)) {
              proxyRes.destroy();
              fail(errors.upstreamBadAnswer('status'), 'status');
              return;
            }
            reachability.mark(true);
            const id = upstreamRequestId(proxyRes.headers);
            if (id !== undefined) ctx.log.upstream_request_id = id;
            try {
              out.writeHead(status, answerHeaders(proxyRes, id));
            } catch (err) {
              // A header value Node will not write (a control character): the answer is unusable.
              proxyRes.destroy();
              fail(errors.upstreamBadAnswer('headers', err), 'protocol');
              return;
            }
            proxyRes.setTimeout(config.body_timeout, () => proxyRes.destroy(new Error('body timeout')));
            pipe(proxyRes, out).then(
              () => {
                settled = true;
                resolve();
              },
              // Cut mid-body: the client's connection is cut too (a truncated answer never looks complete).
              (err: unknown) => {
                out.destroy();
                if (!signal.aborted) fail(err, proxyRes.complete ? 'aborted' : kindOf(err));
              },
            );
          },
        };
        inFlight.set(req, state);
        signal.addEventListener('abort', onAbort, { once: true });
        res.once('close', () => signal.removeEventListener('abort', onAbort));
        proxy.web(
          req,
          res,
          {
            headers,
            // The base of the outgoing request's options: the agent sets its path from it (below).
            ssl: { [RAW_PATH]: path },
            ...(body === undefined ? {} : { buffer: body.stream() }),
          },
          (err: Error) => {
            if (signal.aborted || settled) return;
            const kind = kindOf(err);
            if (kind === 'connect' || kind === 'dns') reachability.mark(false, kind);
            fail(
              kind === 'protocol' ? errors.upstreamBadAnswer(kind) : errors.upstreamUnavailable(kind),
              kind,
            );
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

/** Where the outgoing request's options carry the target that must go on its request line. */
const RAW_PATH = Symbol('raw request target');

/**
 * A keep-alive agent that puts the raw target on each request line. http-proxy-3 builds the outgoing
 * path through a URL parser (`{x}` becomes `%7Bx%7D`, a bare `?` is dropped); the agent receives each
 * request synchronously from its constructor, before any byte of it is written, so the path set
 * here is the one that goes out whether or not a pooled connection is free.
 */
function rawTargetAgent(https: boolean, options: { keepAlive: boolean; maxSockets: number }): HttpAgent {
  const Base = https ? HttpsAgent : HttpAgent;
  const agent = new Base(options);
  const addRequest = (agent as unknown as AddRequest).addRequest;
  (agent as unknown as AddRequest).addRequest = function (req, requestOptions) {
    const path = requestOptions[RAW_PATH];
    if (typeof path === 'string') req.path = path;
    return addRequest.call(this, req, requestOptions);
  };
  return agent;
}

interface AddRequest {
  addRequest(req: ClientRequest, options: Record<string | symbol, unknown>): void;
}

/**
 * The headers of the upstream's answer that go to the client: all but the hop-by-hop ones, those
 * named in its `Connection`, and its `RequestID` (ours stays; its own comes back as
 * `X-Upstream-RequestID`) and `Preference-Applied` (ours stays).
 */
function answerHeaders(proxyRes: IncomingMessage, id: string | undefined): Record<string, string | string[]> {
  const dropped = new Set([
    ...HOP_BY_HOP,
    ...listedIn(proxyRes.headers.connection),
    'requestid',
    'preference-applied',
  ]);
  const out: Record<string, string | string[]> = {};
  const raw = proxyRes.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (dropped.has(name.toLowerCase())) continue;
    const value = raw[i + 1] as string;
    const seen = out[name];
    out[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  if (id !== undefined) out['X-Upstream-RequestID'] = id;
  return out;
}

function listedIn(connection: string | string[] | undefined): string[] {
  return typeof connection === 'string' ? connection.split(',').map((h) => h.trim().toLowerCase()) : [];
}

/** Forwarding headers a client may not set unless a trusted proxy stands in front of the gateway. */
const UNTRUSTED = ['forwarded', 'x-real-ip', 'x-client-ip', 'true-client-ip'];
/** Headers some frameworks route by: never forwarded. */
const REROUTING = [
  'x-original-url',
  'x-rewrite-url',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
];

/**
 * Removes what must not go out from the incoming headers (the proxy copies the rest); the gateway
 * sets `X-Forwarded-For`, `-Proto` and `-Host` itself. Other forwarding headers stay only when the
 * peer is a trusted proxy.
 */
function stripHeaders(req: IncomingMessage, peerTrusted: boolean): void {
  for (const name of [...HOP_BY_HOP, ...GATEWAY_SET, ...REROUTING, ...listedIn(req.headers.connection)]) {
    delete req.headers[name];
  }
  if (peerTrusted) return;
  for (const name of Object.keys(req.headers)) {
    if (name.startsWith('x-forwarded-') || UNTRUSTED.includes(name)) delete req.headers[name];
  }
}
