/**
 * The process edge: read the configuration, start the gateway, reload on SIGHUP, drain on SIGTERM and
 * SIGINT. Nothing else happens here. With `server.workers` > 1 this process becomes the cluster
 * primary (src/cluster/primary.ts) and each forked worker runs this same function.
 */
import cluster from 'node:cluster';
import { type App, createApp } from './app.js';
import { runPrimary, workerCount } from './cluster/primary.js';
import { answerPrimary } from './cluster/rpc.js';
import { askTicketSecret } from './cluster/tickets.js';
import { ConfigError, loadConfigFile } from './config/load.js';
import { flushLogs } from './observability/logger.js';

/** Starts the gateway with the configuration file `file`; resolves with the exit code once stopped. */
export async function runGateway(file: string): Promise<number> {
  let app: App;
  try {
    const config = loadConfigFile(file);
    const workers = workerCount(config.server.workers);
    if (cluster.isPrimary && workers > 1) {
      return await runPrimary(file, config, workers, { killsOnHandoff: testKills(process.env) });
    }
    // Workers share the TLS session ticket keys: the primary hands out their secret.
    const ticketSecret =
      cluster.worker && config.server.tls ? await askTicketSecret(TICKET_SECRET_WAIT) : undefined;
    app = await createApp(
      config,
      cluster.worker ? { worker: cluster.worker.id, ...(ticketSecret && { ticketSecret }) } : {},
    );
    await app.listen();
  } catch (err) {
    process.stderr.write(`gateway: ${(err as Error).message}\n`);
    return 1;
  }
  const { logger } = app;
  if (cluster.isWorker)
    answerPrimary({ metrics: () => app.metrics.registry.getMetricsAsJSON(), ready: app.ready });
  let reloading = Promise.resolve();
  process.on('SIGHUP', () => {
    reloading = reloading.then(async () => {
      try {
        let next;
        try {
          next = loadConfigFile(file);
        } catch (err) {
          // A file that does not load is a failed reload too (`app.reload` counts its own).
          app.metrics.configReloads.inc({ result: 'error' });
          throw err;
        }
        await app.reload(next);
      } catch (err) {
        const problems = err instanceof ConfigError ? err.problems : [(err as Error).message];
        logger.error({ problems }, 'configuration reload failed; keeping the old configuration');
      }
    });
  });

  return new Promise((resolve) => {
    let stopping = false;
    let code = 0;
    const stop = (signal: string, fault = false) => {
      if (fault) code = 1;
      // A fault while draining still refuses the requests that arrive from then on.
      const closed = app.close({ fault });
      if (stopping) return;
      stopping = true;
      if (!fault) logger.info({ signal }, 'draining');
      closed.then(
        () => flushLogs(logger).then(() => resolve(code)),
        (err) => {
          logger.error({ err }, 'shutdown failed');
          void flushLogs(logger).then(() => resolve(1));
        },
      );
    };
    // `on`, not `once`: a second signal while draining must not fall back to Node's default (kill).
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    // After an uncaught exception the process is in an unknown state (a file update or a
    // transaction half done): it stops taking work, lets what is in flight finish, and exits 1.
    process.on('uncaughtException', (err) => {
      logger.fatal({ err }, 'uncaught exception; stopping');
      stop('uncaughtException', true);
    });
    process.on('unhandledRejection', (err) => {
      logger.fatal({ err }, 'unhandled rejection; stopping');
      stop('unhandledRejection', true);
    });
  });
}

/** How long a worker waits for the primary's TLS ticket secret before it gives up starting. */
const TICKET_SECRET_WAIT = 10_000;

/**
 * Test only: `GATEWAY_TEST_KILL_ON_HANDOFF=N` has the cluster primary kill a worker right after
 * handing it a connection, N times (the tests of a worker dying under load); unset, or anything but
 * a count, is 0.
 */
function testKills(env: NodeJS.ProcessEnv): number {
  const value = env.GATEWAY_TEST_KILL_ON_HANDOFF;
  return value !== undefined && /^[0-9]{1,3}$/.test(value) ? Number(value) : 0;
}
