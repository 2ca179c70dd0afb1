/**
 * Which audit store a configuration names (contract §12), and opening it. Without `audit.store` the
 * trail follows the `sso_providers` backend: `postgres`, the same database; `local`, the JSON-lines
 * file `<providers file>.audit.jsonl`; `upstream`, no trail.
 */
import path from 'node:path';
import { type AuditConfig, auditPoolDefaults } from '../config/audit.js';
import type { Logger } from '../observability/logger.js';
import { openFileAuditStore } from './file.js';
import { openAuditPool } from './pool.js';
import { createPostgresAuditStore } from './postgres.js';
import type { AuditDatabase, AuditStore } from './store.js';

/** The parts of a gateway configuration the audit trail reads. */
export interface AuditConfigSource {
  readonly audit?: AuditConfig | undefined;
  readonly backends: {
    readonly sso_providers: { readonly type: string; readonly url?: string; readonly path?: string };
  };
  readonly server?: { readonly workers?: number | 'auto' };
}

/** Where the trail is kept. */
export type AuditTarget =
  | {
      readonly type: 'postgres';
      readonly url: string;
      /** The providers' own database: `success` is written in the change's transaction. */
      readonly sharesProviders: boolean;
      readonly pool_size: number;
      readonly connect_timeout: number;
      readonly statement_timeout: number;
      readonly migrate: boolean;
    }
  | { readonly type: 'file'; readonly path: string };

/** The trail `config` names, or undefined for none (an upstream providers backend, no `audit.store`). */
export function auditStoreFor(config: AuditConfigSource): AuditTarget | undefined {
  const providers = config.backends.sso_providers;
  const store = config.audit?.store;
  if (store?.type === 'file') return { type: 'file', path: store.path };
  if (store?.type === 'postgres') {
    const { type: _type, ...pool } = store;
    return {
      type: 'postgres',
      ...pool,
      sharesProviders: providers.type === 'postgres' && providers.url === store.url,
    };
  }
  if (providers.type === 'postgres' && providers.url !== undefined) {
    const { type: _type, url: _url, ...pool } = auditPoolDefaults;
    return { type: 'postgres', ...pool, url: providers.url, sharesProviders: true };
  }
  if (providers.type === 'local' && providers.path !== undefined) {
    return { type: 'file', path: `${providers.path}.audit.jsonl` };
  }
  return undefined;
}

/** What `check-config` refuses about the trail of `config`, each naming the key. */
export function auditConfigProblems(config: AuditConfigSource): string[] {
  const target = auditStoreFor(config);
  const workers = config.server?.workers ?? 1;
  if (target?.type === 'file' && workers !== 1) {
    const key = config.audit?.store ? 'audit.store.type' : 'server.workers';
    return [
      `${key}: a file audit trail has one writer: use server.workers: 1, or an audit store of type postgres`,
    ];
  }
  return [];
}

/** What `check-config` warns about the trail of `config`. */
export function auditWarnings(config: AuditConfigSource): string[] {
  if (auditStoreFor(config) !== undefined) return [];
  return [
    'audit: backends.sso_providers is "upstream" and no audit.store is set: the service records SSO provider ' +
      "changes under the gateway's credentials; configure audit.store to record the real actor",
  ];
}

/** A file path of the `audit` key as the configuration file's folder makes it. */
export function resolveAuditPath(audit: AuditConfig | undefined, baseDir: string): AuditConfig | undefined {
  if (audit?.store?.type !== 'file') return audit;
  return { ...audit, store: { ...audit.store, path: path.resolve(baseDir, audit.store.path) } };
}

/**
 * Opens the store of `target`. A PostgreSQL trail in the providers' database uses `database` (the
 * shared pool) when given; otherwise it opens a pool of its own, closed with the store.
 */
export async function openAuditStore(
  target: AuditTarget,
  deps: { readonly logger: Logger; readonly database?: AuditDatabase; readonly now?: () => number },
): Promise<AuditStore> {
  const { logger, now } = deps;
  if (target.type === 'file') return openFileAuditStore(target.path, { logger, ...(now ? { now } : {}) });
  if (deps.database !== undefined) return createPostgresAuditStore(deps.database, now ? { now } : {});
  const pool = await openAuditPool(target, (err) =>
    logger.warn({ err: err.message }, 'audit database connection lost'),
  );
  const store = createPostgresAuditStore(pool, now ? { now } : {});
  return {
    ...store,
    async close() {
      await store.close();
      await pool.close();
    },
  };
}
