/**
 * The ioredis client of the `redis` store for each topology: one server or a proxy (`url`), the
 * primary that Sentinel names (`sentinels` + `name`), or a Redis Cluster (`cluster`). ioredis does
 * the work (asking the Sentinels, following a failover, MOVED and ASK); this file only sets it up
 * so that a decision is never queued nor retried beyond `timeout`.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisStoreConfig } from '../config/redis-store.js';
import { loadUpstream } from '../tls/material.js';

/** A client of either kind: both answer the same commands and events that the store uses. */
export type RedisClient = Redis | Cluster;

/** Reconnect soon, then every second: a promoted primary is found about a second after its promotion. */
const retry = (times: number) => Math.min(times * 100, 1_000);

/** The client for `config`, connecting at once. Throws `TlsLoadError` for a CA that does not load. */
export function openRedisClient(config: RedisStoreConfig): RedisClient {
  const connectTimeout = Math.max(config.timeout, 1_000);
  const tls = config.tls && { ...loadUpstream(config.tls, 'rate_limits.store.tls') };
  const credentials: RedisOptions = {
    ...(config.username !== undefined && { username: config.username }),
    ...(config.password !== undefined && { password: config.password }),
  };
  const connection: RedisOptions = {
    ...credentials,
    ...(tls && { tls }),
    // A command sent while disconnected fails at once instead of waiting for a reconnect (and being
    // counted long after its request was answered).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: config.timeout,
    connectTimeout,
    retryStrategy: retry,
    // A primary demoted to a replica refuses writes: find the current primary again.
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 1 : false),
  };
  const db = config.db !== undefined ? { db: config.db } : {};
  if (config.sentinels !== undefined) {
    return new Redis({
      ...connection,
      ...db,
      sentinels: config.sentinels.map((s) => ({ ...s })),
      name: config.name as string,
      sentinelUsername: config.sentinel_username ?? config.username,
      sentinelPassword: config.sentinel_password ?? config.password,
      ...(tls && { sentinelTLS: tls, enableTLSForSentinelMode: true }),
      sentinelCommandTimeout: connectTimeout,
      sentinelRetryStrategy: retry,
      // Subscribed to the Sentinels' +switch-master: a primary that is still reachable but no longer
      // the primary (a partition) is left at once.
      failoverDetector: true,
      // Leaving a frozen primary waits this long for its goodbye before cutting the connection.
      disconnectTimeout: connectTimeout,
    });
  }
  if (config.cluster !== undefined) {
    const options: ClusterOptions = {
      enableOfflineQueue: false,
      clusterRetryStrategy: retry,
      slotsRefreshTimeout: connectTimeout,
      // Besides the refreshes that a MOVED or a lost node triggers: a failover inside the cluster
      // is seen within 5 s even by a gateway that sends nothing to the failed node meanwhile.
      slotsRefreshInterval: 5_000,
      // Each node's commands are bounded by `commandTimeout`, redirections and retries included:
      // ioredis arms that timer once, when the command is first sent.
      redisOptions: {
        ...credentials,
        ...(tls && { tls }),
        commandTimeout: config.timeout,
        connectTimeout,
        maxRetriesPerRequest: 0,
        autoResendUnfulfilledCommands: false,
      },
    };
    return new Cluster(
      config.cluster.map((n) => ({ ...n })),
      options,
    );
  }
  return new Redis(config.url as string, { ...connection, ...db });
}
