/**
 * createApp(config): the gateway's lifecycle. It makes what outlives a configuration (logger,
 * metrics, TLS listeners), builds the configuration's runtime (`runtime.ts`) and serves it on an API
 * server and an admin server; it swaps a new runtime in on reload, and drains on close. No `listen()`
 * happens until asked, so tests run the real app in process on port 0.
 */
import type { AddressInfo } from 'node:net';
import type { DestinationStream } from 'pino';
import { AUTH_FAILURES } from './auth/authenticate.js';
import { KeySources } from './auth/key-sources.js';
import { FileLocks } from './backends/file-locks.js';
import { valueAt } from './config/load.js';
import type { Config } from './config/schema.js';
import { configWarnings } from './config/warnings.js';
import { createApiServer } from './http/api-server.js';
import { DeadlineClock } from './http/deadline-clock.js';
import { createHandler } from './http/handler.js';
import { listenOn } from './http/listen.js';
import { createAdminHandler } from './observability/admin.js';
import { createLogger, type Logger } from './observability/logger.js';
import { createMetrics, type Metrics } from './observability/metrics.js';
import { loadTracing } from './observability/tracing/load.js';
import { RateLimitCounts } from './ratelimit/index.js';
import { buildRuntime, dropKeyGauges, type Instance, lacking, type Runtime } from './runtime.js';
import { listenerServer, openListenersTls } from './tls/listeners.js';

export interface App {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * Binds the API and admin listeners; port 0 picks a free port. Logs `listening`. In a cluster
   * worker only the API listener is bound (`adminPort` is 0) and the primary logs `listening`.
   */
  listen(): Promise<{ port: number; adminPort: number }>;
  /** Whether this process takes traffic: configuration loaded, backends usable, not draining. */
  ready(): boolean;
  /**
   * Swaps in a new configuration (all but the listen addresses) once it is ready. The old one's
   * backends close once the last request that started on them has ended (or `shutdown_grace` passed).
   */
  reload(config: Config): Promise<void>;
  /**
   * Drains: readiness goes false, no new connections, in-flight requests finish within
   * `server.shutdown_grace`, then remaining connections are cut and the backends closed. With
   * `fault` (after an uncaught exception) new requests on open connections are refused with 503
   * instead of served: the process is in an unknown state.
   */
  close(options?: { fault?: boolean }): Promise<void>;
}

export interface AppOptions {
  /** Where log lines go (stdout by default). */
  logDestination?: DestinationStream;
  /**
   * Set in a cluster worker (`server.workers` > 1) to its worker id: log lines carry it as `worker`,
   * and the admin listener stays off (the primary serves it for all workers).
   */
  worker?: number;
  /** In a cluster worker: the TLS session ticket secret the primary hands to every worker. */
  ticketSecret?: Buffer;
}

/** Builds the gateway for `config`. Throws when a backend cannot start (e.g. a malformed data file). */
export async function createApp(config: Config, options: AppOptions = {}): Promise<App> {
  const root = createLogger(config.logging.level, options.logDestination);
  const logger = options.worker === undefined ? root : root.child({ worker: options.worker });
  const metrics = createMetrics({ maxWait: config.prefer.max_wait, authFailures: AUTH_FAILURES });
  // Loaded (the OpenTelemetry SDK imported) only when configured.
  const tracing = await loadTracing(config.tracing, logger);
  warn(logger, config);
  // Before anything else opens: a certificate that does not load stops the start, naming its key.
  const tls = openListenersTls(config, {
    logger,
    metrics,
    admin: options.worker === undefined,
    secret: options.ticketSecret,
  });
  const instance: Instance = {
    logger,
    metrics,
    fileLocks: new FileLocks(),
    keySources: new KeySources(),
    clock: new DeadlineClock(),
    rateLimitCounts: new RateLimitCounts(),
    ...(tracing && { tracing }),
    ...(tls.api && { clientTrust: tls.api.trust }),
  };
  const { keySources } = instance;
  let runtime: Runtime;
  try {
    runtime = await buildRuntime(config, instance);
  } catch (err) {
    tls.close();
    await tracing?.shutdown();
    throw err;
  }
  metrics.readiness.add(() => runtime.checks());
  let draining = false;
  let faulted = false;
  let closing: Promise<void> = Promise.resolve();
  /** Configurations a reload replaced, each closing once its last request has ended. */
  const retiring = new Map<Runtime, Promise<void>>();

  const handler = createHandler({
    logger,
    metrics,
    ...(tracing && { tracing }),
    take() {
      runtime.holds.take();
      return runtime;
    },
    draining: () => draining,
    faulted: () => faulted,
  });
  const server = createApiServer(tls.api, config.server, handler, { logger, metrics });
  // A connection whose client certificate was verified against trust no longer in force (a new
  // client_ca or client_crl) closes after its in-flight request: the client shakes hands again.
  tls.api?.trust.onStale((socket) => handler.retire(socket));
  const ready = () => !draining && runtime.ready();
  const admin =
    options.worker === undefined
      ? listenerServer(
          tls.admin,
          {},
          createAdminHandler(metrics, ready, () => runtime.checks()),
        )
      : undefined;

  return {
    logger,
    metrics,
    ready,
    async listen() {
      const { server: s, admin: a } = runtime.config;
      await Promise.all([listenOn(server, s.host, s.port), admin && listenOn(admin, a.host, a.port)]);
      const port = (server.address() as AddressInfo).port;
      if (!admin) return { port, adminPort: 0 };
      const adminPort = (admin.address() as AddressInfo).port;
      logger.info({ port, admin_port: adminPort }, 'listening');
      return { port, adminPort };
    },
    async reload(next) {
      try {
        await swap(next);
      } catch (err) {
        metrics.configReloads.inc({ result: 'error' });
        throw err;
      }
      metrics.configReloads.inc({ result: 'ok' });
      metrics.configLastReloadSuccess.setToCurrentTime();
    },
    async close(options = {}) {
      if (options.fault) faulted = true;
      if (draining) return closing;
      draining = true;
      closing = drain();
      return closing;
    },
  };

  /** Builds `next` and swaps it in; throws (the old configuration staying) when it cannot serve. */
  async function swap(next: Config): Promise<void> {
    const old = runtime;
    const built = await buildRuntime(next, instance, old);
    // The new configuration takes over once its key sources and backends are ready (a JWKS
    // fetched, an upstream probed), so a reload does not flip /readyz; bounded, it never hangs.
    // An unchanged key source starts from its last good keys; a new one that cannot load keys in
    // time fails the reload, and the old configuration stays.
    await readyWithin(built, RELOAD_READY_WAIT);
    const before = new Set(old.keySources().map((s) => s.id));
    const missing = built.keySources().filter((s) => s.required && !s.loaded && !before.has(s.id));
    // A configuration that cannot serve yet (a pool whose first connection failed) does not take
    // over from one that can: the reload fails and the old one stays, so no request is refused.
    const unready = old.ready() && !built.ready();
    if (missing.length > 0 || unready || draining) {
      await built.close();
      keySources.retain(before);
      dropKeyGauges(metrics, built, old);
      if (draining) throw new Error('the gateway is stopping');
      if (missing.length > 0) {
        const names = missing.map((s) => `${s.at} (${s.name})`).join(', ');
        throw new Error(`${names}: no keys loaded within ${RELOAD_READY_WAIT / 1000} s`);
      }
      const names = lacking(built, old).join(', ') || 'the new configuration';
      throw new Error(`${names}: not ready within ${RELOAD_READY_WAIT / 1000} s`);
    }
    runtime = built;
    retire(old, next.server.shutdown_grace);
    keySources.retain(built.keySources().map((s) => s.id));
    dropKeyGauges(metrics, old, built);
    warn(logger, next);
    logger.level = next.logging.level;
    const restartOnly = [
      'server.host',
      'server.port',
      'server.max_header_size',
      'admin.host',
      'admin.port',
    ].filter((key) => valueAt(old.config, key) !== valueAt(next, key));
    if (restartOnly.length > 0) logger.warn({ keys: restartOnly }, 'these keys change only on restart');
    server.headersTimeout = next.server.headers_timeout;
    server.keepAliveTimeout = next.server.keep_alive_timeout;
    if (next.prefer.max_wait !== old.config.prefer.max_wait) {
      logger.warn(
        { keys: ['prefer.max_wait'] },
        'the latency histograms keep the buckets of prefer.max_wait at start until a restart',
      );
    }
    await tls.reload(next);
    logger.info('configuration reloaded');
  }

  /** Closes `old` once the last request that started on it has ended, or after `grace` ms. */
  function retire(old: Runtime, grace: number): void {
    const closed = old.holds
      .released(grace)
      .then(() => {
        const requests = old.holds.count;
        if (requests > 0 && !draining)
          logger.warn(
            { requests },
            'replaced configuration closed with requests still on it: server.shutdown_grace passed',
          );
        return old.close();
      })
      .catch((err: unknown) => logger.error({ err }, 'closing the replaced configuration failed'))
      .finally(() => retiring.delete(old));
    retiring.set(old, closed);
  }

  async function drain(): Promise<void> {
    const grace = runtime.config.server.shutdown_grace;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Keep-alive connections become idle as their requests finish: close them as they do.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const cut = setTimeout(() => server.closeAllConnections(), grace);
    server.closeIdleConnections();
    await closed;
    clearInterval(sweep);
    clearTimeout(cut);
    // Connections are gone; let the requests' own clean-up (temporary files, log lines) finish.
    await Promise.race([handler.settled(), delay(SETTLE_AFTER_CLOSE)]);
    if (admin) {
      await new Promise<void>((resolve) => admin.close(() => resolve()));
      admin.closeAllConnections();
    }
    tls.close();
    // Whatever still holds a replaced configuration has had its time: close them all now.
    for (const old of retiring.keys()) old.holds.cut();
    await Promise.all([runtime.close(), ...retiring.values()]);
    // The spans of the last requests go out before the process exits.
    await tracing?.shutdown();
    logger.info('stopped');
  }
}

/** Logs what `check-config` warns about (each `key.path: reason`). */
function warn(logger: Logger, config: Config): void {
  for (const warning of configWarnings(config)) logger.warn({ warning }, 'configuration warning');
}

/** How long a reload waits for the new configuration to be ready (see `swap`). */
const RELOAD_READY_WAIT = 5_000;

async function readyWithin(runtime: Runtime, ms: number): Promise<void> {
  const until = performance.now() + ms;
  while (!runtime.ready() && performance.now() < until) await delay(25);
}

/** How long a stop waits, once every connection is closed, for requests to finish their clean-up. */
const SETTLE_AFTER_CLOSE = 2_000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
