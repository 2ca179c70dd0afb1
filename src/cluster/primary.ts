/**
 * The cluster primary (`server.workers` > 1). It serves no API request itself: it forks the workers,
 * which share the API port through node:cluster, serves the admin listener with the workers' metrics
 * aggregated and their readiness combined, and relays SIGTERM/SIGINT (drain) and SIGHUP (reload).
 */
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { Registry } from 'prom-client';
import { ConfigError, loadConfigFile, valueAt } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { listenOn } from '../http/listen.js';
import { openListenerTls, type ListenerTls } from '../tls/listener.js';
import { loadListener } from '../tls/material.js';
import { listenerServer } from '../tls/listeners.js';
import { tlsMetrics } from '../observability/tls-metrics.js';
import { ticketKeys, ticketSecret } from '../tls/tickets.js';
import { createAdminHandler } from '../observability/admin.js';
import { createLogger, flushLogs } from '../observability/logger.js';
import { createPrimaryMetrics, type WorkerMetrics } from '../observability/cluster-metrics.js';
import { createPool } from './pool.js';
import { createAsker } from './rpc.js';
import { serveTicketSecret } from './tickets.js';

/** How many processes serve the API: `auto` is one per core the process may use. */
export function workerCount(workers: Config['server']['workers']): number {
  return workers === 'auto' ? availableParallelism() : workers;
}

/** How long the primary waits for a worker to answer a scrape or a readiness question. */
const ASK_TIMEOUT = 3_000;
/**
 * Beyond `shutdown_grace`, how long a draining worker may take (its requests' clean-up, closing the
 * backends) before the primary kills it.
 */
const STOP_MARGIN = 5_000;
/** Keys the workers cannot change by reloading: the primary owns them. */
const PRIMARY_KEYS = ['server.workers', 'admin.host', 'admin.port'] as const;

/** Options of the primary that no configuration file sets. */
export interface PrimaryOptions {
  /** Test only: see `PoolOptions.killsOnHandoff`. */
  killsOnHandoff?: number;
}

/** Runs the primary for the configuration file `file`; resolves with the exit code once stopped. */
export async function runPrimary(
  file: string,
  config: Config,
  count: number,
  options: PrimaryOptions = {},
): Promise<number> {
  const logger = createLogger(config.logging.level);
  let grace = config.server.shutdown_grace;
  let draining = false;
  cluster.setupPrimary({ serialization: 'advanced' });
  const asker = createAsker(ASK_TIMEOUT);
  const own = createPrimaryMetrics();
  const pool = createPool(count, logger, { restarted: own.restarted, ...options });
  // The primary's own series (the admin listener's TLS), combined with the workers' aggregate.
  const ownTls = tlsMetrics(own.shared);
  const secret = ticketSecret();
  let adminTls: ListenerTls | undefined;
  try {
    // The workers load server.tls; checked here first, so that a bad file stops the start at once.
    if (config.server.tls) loadListener(config.server.tls, 'server.tls');
    adminTls =
      config.admin.tls &&
      openListenerTls(config.admin.tls, { at: 'admin.tls', listener: 'admin' }, ticketKeys(secret), {
        logger,
        metrics: ownTls,
      });
  } catch (err) {
    process.stderr.write(`gateway: ${(err as Error).message}\n`);
    return 1;
  }
  const stopServing = serveTicketSecret(secret);

  const metrics = async () => {
    const workers = pool.listening();
    const answers = await Promise.all(workers.map((w) => asker.ask(w, 'metrics')));
    const present = answers.filter((a): a is WorkerMetrics => a !== undefined);
    return own.text(present);
  };
  const ready = async () => {
    const workers = pool.listening();
    if (draining || workers.length === 0) return false;
    // A worker that exited meanwhile (undefined) is being replaced; the others carry the traffic.
    const answers = await Promise.all(workers.map((w) => asker.ask(w, 'ready')));
    return !draining && answers.includes(true) && !answers.includes(false);
  };
  const admin = listenerServer(
    adminTls,
    {},
    createAdminHandler({ registry: { contentType: Registry.PROMETHEUS_CONTENT_TYPE, metrics } }, ready),
  );
  try {
    await listenOn(admin, config.admin.host, config.admin.port);
  } catch (err) {
    adminTls?.close();
    stopServing();
    process.stderr.write(`gateway: ${(err as Error).message}\n`);
    return 1;
  }
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals, failed: boolean) => {
      if (draining) return;
      draining = true;
      if (!failed) logger.info({ signal }, 'draining');
      pool.stop(signal, grace + STOP_MARGIN).then((clean) => {
        asker.close();
        stopServing();
        adminTls?.close();
        admin.close();
        admin.closeAllConnections();
        logger.info('stopped');
        void flushLogs(logger).then(() => resolve(clean && !failed ? 0 : 1));
      });
    };
    // `on`, not `once`: a second signal while draining must not fall back to Node's default (kill).
    process.on('SIGTERM', () => stop('SIGTERM', false));
    process.on('SIGINT', () => stop('SIGINT', false));
    // The primary in an unknown state stops its workers (each drains) and exits 1.
    process.on('uncaughtException', (err) => {
      logger.fatal({ err }, 'uncaught exception; stopping');
      stop('SIGTERM', true);
    });
    process.on('unhandledRejection', (err) => {
      logger.fatal({ err }, 'unhandled rejection; stopping');
      stop('SIGTERM', true);
    });
    process.on('SIGHUP', () => {
      if (draining) return;
      // Each worker reloads the file itself and logs why when it is invalid.
      pool.signal('SIGHUP');
      try {
        const next = loadConfigFile(file);
        logger.level = next.logging.level;
        grace = next.server.shutdown_grace;
        const keys: string[] = PRIMARY_KEYS.filter((key) => valueAt(config, key) !== valueAt(next, key));
        if ((adminTls === undefined) !== (next.admin.tls === undefined)) keys.push('admin.tls');
        if (keys.length > 0) logger.warn({ keys }, 'these keys change only on restart');
        if (adminTls && next.admin.tls) void adminTls.reload(next.admin.tls);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
      }
    });
    pool.start().then(
      (port) => {
        const adminPort = (admin.address() as AddressInfo).port;
        logger.info({ port, admin_port: adminPort, workers: count }, 'listening');
      },
      (err: Error) => {
        logger.error({ err }, 'a worker failed to start');
        stop('SIGTERM', true);
      },
    );
  });
}
