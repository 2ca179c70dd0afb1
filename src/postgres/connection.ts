/**
 * What every connection of the gateway's to PostgreSQL is opened with, whoever opens it (a backend's
 * pool, the token store, a command of the CLI): the URL, a bounded connect, and a name that says in
 * `pg_stat_activity` which part of the gateway holds it.
 */
import type { ClientConfig } from 'pg';

/** Where to connect, how long a connect may take (ms), and which part of the gateway connects. */
export interface ConnectionOptions {
  readonly url: string;
  readonly connectTimeout: number;
  /** Added to `bh-gateway` in `application_name` (`tokens`, `cancel`, …); absent for the backends' pool. */
  readonly role?: string;
}

/** A short-lived connection's settings (one cancel, one command of the CLI). */
export function clientSettings(options: ConnectionOptions): ClientConfig {
  return {
    connectionString: options.url,
    connectionTimeoutMillis: options.connectTimeout,
    application_name: options.role === undefined ? 'bh-gateway' : `bh-gateway ${options.role}`,
  };
}

/** A pool's or a long-lived connection's settings: TCP keep-alive on, so that a dead peer shows. */
export function poolSettings(options: ConnectionOptions): ClientConfig {
  return { ...clientSettings(options), keepAlive: true };
}
