/**
 * Makes a table hold exactly a given set of rows, writing only the difference, so that loading the
 * same data twice changes nothing the second time (`gateway import` is idempotent) and rows that
 * did not change are never rewritten (a replica reading them is not disturbed).
 *
 * The rows go to a temporary table in chunks (`unnest` of one array per column), then one
 * `INSERT … ON CONFLICT DO UPDATE … WHERE IS DISTINCT FROM` writes the new and changed rows.
 * Deleting the rows that are no longer there is a separate step, so a caller can upsert parents
 * before children and delete children before parents.
 */
import type { ClientBase } from 'pg';

/** A column: its name, and the element type of the array it travels in (`text[]` travels as JSON). */
export interface Column {
  readonly name: string;
  readonly type: 'integer' | 'bigint' | 'text' | 'boolean' | 'timestamptz' | 'jsonb' | 'text[]';
}

export interface TableSpec {
  readonly table: string;
  /** The primary key's columns. */
  readonly key: readonly string[];
  /** Every column, the key's included. */
  readonly columns: readonly Column[];
}

/** What a sync did to one table. */
export interface SyncCounts {
  inserted: number;
  updated: number;
  deleted: number;
}

const CHUNK = 5_000;

/** The value of one column as sent: JSON text for jsonb and text[] columns. */
function encode(column: Column, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  return column.type === 'jsonb' || column.type === 'text[]' ? JSON.stringify(value) : value;
}

/** The SQL that turns the sent value `ref` into the column's type. */
function decode(column: Column, ref: string): string {
  if (column.type === 'text[]') return `ARRAY(SELECT jsonb_array_elements_text(${ref}::jsonb))`;
  return column.type === 'jsonb' ? `${ref}::jsonb` : ref;
}

/**
 * Stages `rows` (keyed by `spec.key`, without duplicates) and writes the new and changed ones into
 * `spec.table`. Runs inside the caller's transaction; the staging table is dropped at its commit.
 */
export async function upsertRows(
  client: ClientBase,
  spec: TableSpec,
  rows: ReadonlyArray<Record<string, unknown>>,
): Promise<Pick<SyncCounts, 'inserted' | 'updated'>> {
  const staging = `import_${spec.table}`;
  const names = spec.columns.map((c) => c.name);
  await client.query(`CREATE TEMP TABLE ${staging} (LIKE ${spec.table}) ON COMMIT DROP`);
  const sentType = (c: Column) => (c.type === 'jsonb' || c.type === 'text[]' ? 'text' : c.type);
  const unnest = spec.columns.map((c, i) => `$${i + 1}::${sentType(c)}[]`).join(', ');
  const decoded = spec.columns.map((c) => decode(c, `u.${c.name}`)).join(', ');
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK);
    const arrays = spec.columns.map((c) => chunk.map((r) => encode(c, r[c.name])));
    await client.query(
      `INSERT INTO ${staging} (${names.join(', ')})
       SELECT ${decoded} FROM unnest(${unnest}) AS u(${names.join(', ')})`,
      arrays,
    );
  }
  const rest = names.filter((n) => !spec.key.includes(n));
  const onConflict =
    rest.length === 0
      ? 'DO NOTHING'
      : `DO UPDATE SET ${rest.map((n) => `${n} = EXCLUDED.${n}`).join(', ')}
         WHERE (${rest.map((n) => `t.${n}`).join(', ')}) IS DISTINCT FROM
               (${rest.map((n) => `EXCLUDED.${n}`).join(', ')})`;
  // xmax is 0 on a row this statement inserted, and set on one it updated.
  const { rows: written } = await client.query<{ inserted: boolean }>(
    `INSERT INTO ${spec.table} AS t (${names.join(', ')})
     SELECT ${names.join(', ')} FROM ${staging}
     ON CONFLICT (${spec.key.join(', ')}) ${onConflict}
     RETURNING (xmax = 0) AS inserted`,
  );
  const inserted = written.filter((r) => r.inserted).length;
  return { inserted, updated: written.length - inserted };
}

/** Deletes the rows of `spec.table` that the staged rows (of `upsertRows`, same transaction) lack. */
export async function deleteMissing(client: ClientBase, spec: TableSpec): Promise<number> {
  const match = spec.key.map((k) => `s.${k} = t.${k}`).join(' AND ');
  const result = await client.query(
    `DELETE FROM ${spec.table} AS t WHERE NOT EXISTS (SELECT 1 FROM import_${spec.table} s WHERE ${match})`,
  );
  return result.rowCount as number;
}
