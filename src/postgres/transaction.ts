/**
 * One transaction on one client, for the commands that change the database as a whole (the token
 * administration, the import of the local stores).
 */
import type { ClientBase } from 'pg';

/** Runs `work` between `BEGIN` and `COMMIT` on `client`; rolled back, and rethrown, when it fails. */
export async function inTransaction<T>(client: ClientBase, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
