/**
 * The `audit` key (contract §12): where the audit trail is kept, whether 403 refusals are recorded,
 * and whether `GET /api/v2/audit` is answered from the trail. Without `store` the trail follows the
 * `sso_providers` backend (see `audit/store-for.ts`).
 */
import { z } from 'zod';
import { bool, duration, int, leaf, str } from './leaves.js';

const postgresStore = z.strictObject({
  type: z.literal('postgres'),
  url: leaf(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')),
  // Used only when the trail has a database of its own (the providers' pool is shared otherwise).
  pool_size: int(1, 100).default(4),
  connect_timeout: duration(3_600_000, 1).default(5_000),
  statement_timeout: duration(3_600_000, 1).default(10_000),
  migrate: bool().default(true),
});

const fileStore = z.strictObject({
  type: z.literal('file'),
  /** A JSON-lines file; relative to the configuration file's folder. */
  path: str(1),
});

/** The `audit` key. */
export const auditSchema = z.strictObject({
  store: z
    .discriminatedUnion('type', [postgresStore, fileStore], { error: 'type must be "postgres" or "file"' })
    .optional(),
  refused: bool().default(true),
  serve_api: bool().default(false),
});

/** The validated `audit` key. */
export type AuditConfig = z.output<typeof auditSchema>;

/** A `type: postgres` audit store, with its pool settings. */
export type AuditPostgresConfig = z.output<typeof postgresStore>;

/** The pool settings an audit store of its own uses when the configuration gives only a URL. */
export const auditPoolDefaults = postgresStore.parse({ type: 'postgres', url: 'postgres://defaults' });
