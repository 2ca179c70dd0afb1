/**
 * The API listener's server: Node's HTTP (or, with TLS, HTTPS) server set up so that every request,
 * including an `Expect` and one Node's parser refuses, is answered by the gateway in its envelope.
 */
import type { Server } from 'node:http';
import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ListenerTls } from '../tls/listener.js';
import { listenerServer } from '../tls/listeners.js';
import type { RequestHandler } from './handler.js';
import { answerParserRefusals } from './parser-refusals.js';

/** The API server for `server`'s settings, over `tls` when given, running `handler`. */
export function createApiServer(
  tls: ListenerTls | undefined,
  server: Config['server'],
  handler: RequestHandler,
  deps: { readonly logger: Logger; readonly metrics: Metrics },
): Server {
  const api = listenerServer(
    tls,
    {
      maxHeaderSize: server.max_header_size,
      // The deadline and the body idle timeout bound a request; Node's own timer only checks headers.
      requestTimeout: 0,
      headersTimeout: server.headers_timeout,
      // Node checks headersTimeout every 30 s by default, far coarser than the timeout itself.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, server.headers_timeout / 4)),
      keepAliveTimeout: server.keep_alive_timeout,
      // A missing Host is answered in the envelope by the route stage, not by Node's bare 400.
      requireHostHeader: false,
    },
    handler,
  );
  // `Expect: 100-continue` is answered only once the request is authenticated (see
  // auth/verified-body.ts), so a refused upload is never sent.
  // Over TLS the HTTP connection is the TLS socket (the one a client's FIN shows on).
  api.on(tls ? 'secureConnection' : 'connection', handler.connection);
  api.on('checkContinue', handler);
  // Any other `Expect` goes through the pipeline too, which answers 417 after routing.
  api.on('checkExpectation', handler);
  // A client that half-closes after its request (shutdown(SHUT_WR)) still gets the answer (Node's
  // own switch, false by default, read by its HTTP server on the client's FIN).
  (api as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  answerParserRefusals(api, deps);
  return api;
}
