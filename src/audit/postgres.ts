/**
 * The audit trail in PostgreSQL's `audit_logs`. Each append is one call of `audit_append` (see
 * `schema.ts`), which takes a transaction-scoped advisory lock on the table before it reads the head
 * and allocates the next id, so replicas appending to one database keep one chain: the next append
 * waits for this one's transaction to end, then reads the head it left. The gateway sends the time
 * and the entry's canonical JSON; the database computes the hash where the id is known.
 */
import { type AuditEntry, type AuditHead, canonicalParts, headOf, type NewAuditEntry } from './entry.js';
import type { AuditListQuery, AuditPage } from './query.js';
import { ENTRY_COLUMNS, type EntryRow, orderOf, whereOf } from './sql-query.js';
import { type AuditDatabase, type AuditSql, type AuditStore, NEVER, type TrailItem } from './store.js';

/** One append (`audit_append` of `schema.ts`): lock, head, id, time, hash and insert. */
const APPEND = `SELECT entry_id, entry_time, entry_hash
  FROM audit_append($1::timestamptz, $2::text[], $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11)`;

/** Rows `walk` reads at a time. */
const BATCH = 500;

/** The trail in `db`'s `audit_logs` (its schema already migrated); `now` is the gateway's clock. */
export function createPostgresAuditStore(
  db: AuditDatabase,
  options: { readonly now?: () => number } = {},
): AuditStore {
  const now = options.now ?? Date.now;

  /** Appends `entry` with `run`: in the caller's transaction, or a statement of its own. */
  const appendWith = async (run: AuditSql, entry: NewAuditEntry): Promise<AuditEntry> => {
    const { parts, clean } = canonicalParts(entry);
    const [row] = await run<{ entry_id: string; entry_time: string; entry_hash: string }>(APPEND, [
      new Date(now()).toISOString(),
      parts,
      clean.actor_id,
      clean.actor_name,
      clean.actor_email,
      clean.action,
      JSON.stringify(clean.fields),
      clean.request_id,
      clean.source_ip_address,
      clean.status,
      clean.commit_id,
    ]);
    const { entry_id: id, entry_time: createdAt, entry_hash: hash } = row as NonNullable<typeof row>;
    return { id: Number(id), created_at: createdAt, ...clean, hash };
  };

  return {
    kind: 'postgres',
    where: 'audit_logs',
    // One statement: its own transaction, committed when it answers.
    append: (entry, signal = NEVER) =>
      appendWith((text, values) => db.query(text, values ?? [], signal), entry),
    appendIn: appendWith,

    async list(query: AuditListQuery, signal = NEVER): Promise<AuditPage> {
      const { where, values } = whereOf(query);
      const [counted] = await db.query<{ count: string }>(
        `SELECT count(*)::text AS count FROM audit_logs WHERE ${where}`,
        values,
        signal,
      );
      const n = values.length;
      const rows = await db.query<EntryRow>(
        `SELECT ${ENTRY_COLUMNS} FROM audit_logs WHERE ${where}
          ORDER BY ${orderOf(query)} LIMIT $${n + 1}::bigint OFFSET $${n + 2}::bigint`,
        [...values, String(query.limit), String(query.skip)],
        signal,
      );
      return {
        count: Number(counted?.count ?? 0),
        limit: query.limit,
        skip: query.skip,
        logs: rows.map(rowToEntry),
      };
    },

    walk: () => walkRows((text, values) => db.query<EntryRow>(text, values, NEVER)),

    async head(): Promise<AuditHead | undefined> {
      const [row] = await db.query<EntryRow>(
        `SELECT ${ENTRY_COLUMNS} FROM audit_logs ORDER BY id DESC LIMIT 1`,
        [],
        NEVER,
      );
      return row && headOf(rowToEntry(row));
    },

    ready: () => db.ready?.() ?? true,
    // The database belongs to whoever opened it.
    async close() {},
  };
}

/** Every row of `audit_logs` in id order, read in batches with `run`. */
export async function* walkRows(
  run: (text: string, values: unknown[]) => Promise<EntryRow[]>,
): AsyncGenerator<TrailItem> {
  let after = '0';
  for (;;) {
    const rows = await run(
      `SELECT ${ENTRY_COLUMNS} FROM audit_logs WHERE id > $1::bigint ORDER BY id LIMIT ${BATCH}`,
      [after],
    );
    for (const row of rows) yield { at: `id ${row.id}`, entry: rowToEntry(row) };
    if (rows.length < BATCH) return;
    after = (rows.at(-1) as EntryRow).id;
  }
}

/**
 * A row as the entry it stores. `created_at` is read with microseconds: a time the gateway wrote
 * ends in `000` and reads back as it was hashed; any other was changed in the database.
 */
export function rowToEntry(row: EntryRow): AuditEntry {
  return {
    id: Number(row.id),
    created_at: row.created_time.replace(/(\.\d{3})000Z$/, '$1Z'),
    actor_id: row.actor_id,
    actor_name: row.actor_name,
    actor_email: row.actor_email,
    action: row.action as AuditEntry['action'],
    fields: row.fields,
    request_id: row.request_id,
    source_ip_address: row.source_ip_address,
    status: row.status as AuditEntry['status'],
    commit_id: row.commit_id,
    hash: row.hash,
  };
}
