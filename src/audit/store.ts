/**
 * Where an audit trail is kept: one interface for the PostgreSQL table and the JSON-lines file.
 * A store allocates each entry's id and time and chains its hash; it never loses an append it
 * resolved (the database committed it, or the file was synced).
 */
import type { QueryResultRow } from 'pg';
import type { AuditEntry, AuditHead, NewAuditEntry } from './entry.js';
import type { AuditListQuery, AuditPage } from './query.js';

/** One statement of a transaction that someone else opened and commits. */
export type AuditSql = <R extends QueryResultRow = QueryResultRow>(
  text: string,
  values?: unknown[],
) => Promise<R[]>;

/** The database an audit store uses: the gateway's shared pool fits it as it is. */
export interface AuditDatabase {
  /** One statement in a transaction of its own (committed when it answers). */
  query<R extends QueryResultRow = QueryResultRow>(
    text: string,
    values: unknown[],
    signal: AbortSignal,
  ): Promise<R[]>;
  /** False while the database is known to be away. */
  ready?(): boolean;
}

/** One entry of a trail as read back for `verify`: parsed, or why it could not be. */
export interface TrailItem {
  /** Where it is: `line 12` of a file, `id 12` of a table. */
  readonly at: string;
  readonly entry?: unknown;
  readonly problem?: string;
  /** A file's last line without its newline: being written, or cut by a crash (not a break). */
  readonly incomplete?: boolean;
}

export interface AuditStore {
  /** `postgres` or `file`: what `/readyz` and the logs name. */
  readonly kind: 'postgres' | 'file';
  /** The file's path, or `audit_logs` for the table. */
  readonly where: string;
  /** Appends `entry` after the trail's head, in a transaction of its own; durable when it resolves. */
  append(entry: NewAuditEntry, signal?: AbortSignal): Promise<AuditEntry>;
  /**
   * PostgreSQL only: appends inside the caller's transaction (which must be READ COMMITTED), so
   * that the entry commits or rolls back with the caller's change. Holds the trail's lock until then.
   */
  appendIn?(query: AuditSql, entry: NewAuditEntry): Promise<AuditEntry>;
  /** The page `query` asks for. */
  list(query: AuditListQuery, signal?: AbortSignal): Promise<AuditPage>;
  /** Every entry in the order the trail keeps them (a file's lines, a table's ids). */
  walk(): AsyncIterable<TrailItem>;
  /** The last entry's id, hash and time; undefined for an empty trail. */
  head(): Promise<AuditHead | undefined>;
  /** False while appends are known to fail (the database away, the file gone). */
  ready(): boolean;
  close(): Promise<void>;
}

/** A signal that never aborts: for writes that must finish once begun. */
export const NEVER = new AbortController().signal;
