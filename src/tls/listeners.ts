/**
 * The TLS of an app's own listeners: the API listener's (`server.tls`) and, where this process
 * serves it, the admin listener's (`admin.tls`). A SIGHUP reads their files again; adding or
 * removing a block takes a restart (the reload warns).
 */
import {
  createServer as createHttpServer,
  type RequestListener,
  type Server,
  type ServerOptions,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import { type ListenerTls, openListenerTls } from './listener.js';
import type { TlsMetrics } from '../observability/tls-metrics.js';
import { ticketKeys, ticketSecret } from './tickets.js';

export interface ListenersTls {
  readonly api: ListenerTls | undefined;
  readonly admin: ListenerTls | undefined;
  /** A new configuration: each listener's files read again. */
  reload(config: Config): Promise<void>;
  close(): void;
}

export interface ListenersDeps {
  readonly logger: Logger;
  readonly metrics: { readonly tls: { get(): TlsMetrics } };
  /** Whether this process serves the admin listener (not a cluster worker). */
  readonly admin: boolean;
  /** The session ticket secret shared by the cluster (a lone process makes its own). */
  readonly secret?: Buffer | undefined;
}

/** Loads the listeners' certificates; throws `TlsLoadError` (naming the key) when one does not load. */
export function openListenersTls(config: Config, deps: ListenersDeps): ListenersTls {
  const watchDeps = { logger: deps.logger, metrics: deps.metrics.tls };
  const tickets = ticketKeys(deps.secret ?? ticketSecret());
  const api =
    config.server.tls &&
    openListenerTls(config.server.tls, { at: 'server.tls', listener: 'api' }, tickets, watchDeps);
  let admin: ListenerTls | undefined;
  try {
    admin =
      deps.admin && config.admin.tls
        ? openListenerTls(config.admin.tls, { at: 'admin.tls', listener: 'admin' }, tickets, watchDeps)
        : undefined;
  } catch (err) {
    api?.close();
    throw err;
  }
  return {
    api,
    admin,
    async reload(next) {
      const changed = [
        ...((api === undefined) !== (next.server.tls === undefined) ? ['server.tls'] : []),
        ...(deps.admin && (admin === undefined) !== (next.admin.tls === undefined) ? ['admin.tls'] : []),
      ];
      if (changed.length > 0) deps.logger.warn({ keys: changed }, 'these keys change only on restart');
      await Promise.all([
        api && next.server.tls && api.reload(next.server.tls),
        admin && next.admin.tls && admin.reload(next.admin.tls),
      ]);
    },
    close() {
      api?.close();
      admin?.close();
    },
  };
}

/** An HTTP server, or an HTTPS one kept current by `tls`, for `handler`. */
export function listenerServer(
  tls: ListenerTls | undefined,
  options: ServerOptions,
  handler: RequestListener,
): Server {
  if (!tls) return createHttpServer(options, handler);
  const server = createHttpsServer({ ...options, ...tls.serverOptions() }, handler);
  tls.attach(server);
  return server as unknown as Server;
}
