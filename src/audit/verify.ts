/**
 * `verify`: walks a trail and checks its chain (contract §12). Each entry must follow the previous
 * one's id by one and carry the hash of the previous hash and its own canonical JSON; the first
 * entry where either fails is named. Intents without an outcome are listed, never a failure: a
 * process killed between an update's intent and its outcome leaves one.
 */
import { type AuditEntry, entryHash, GENESIS_HASH } from './entry.js';
import type { TrailItem } from './store.js';

/** The head an auditor noted (from the log or a previous run): `ID:HASH`. */
export interface ExpectedHead {
  readonly id: number;
  readonly hash: string;
}

/** An intent whose update has no `success` or `failure` entry. */
export interface PendingIntent {
  readonly commit_id: string;
  readonly id: number;
  readonly created_at: string;
}

export interface VerifyReport {
  /** True when the chain holds (and the head is the expected one, when one was given). */
  readonly ok: boolean;
  /** Whole entries checked. */
  readonly entries: number;
  readonly head: ExpectedHead | undefined;
  /** Where the chain breaks: the first entry that fails, and why. */
  readonly broken?: { readonly at: string; readonly reason: string };
  readonly pending: readonly PendingIntent[];
  /** A file's last line being written or cut by a crash (not counted, not a break). */
  readonly incompleteTail?: string;
}

/** `ID:HASH` as an expected head; undefined when it is not one. */
export function parseExpectedHead(text: string): ExpectedHead | undefined {
  const m = /^(\d{1,15}):([0-9a-fA-F]{64})$/.exec(text);
  return m ? { id: Number(m[1]), hash: (m[2] as string).toLowerCase() } : undefined;
}

/** Checks the chain of `items` (in the trail's order) and, when given, its head against `expect`. */
export async function verifyTrail(
  items: AsyncIterable<TrailItem>,
  expect?: ExpectedHead,
): Promise<VerifyReport> {
  let previous: ExpectedHead | undefined;
  let entries = 0;
  let incompleteTail: string | undefined;
  /** The hash of the entry whose id the expected head names, once walked past. */
  let atExpected: string | undefined;
  const intents = new Map<string, PendingIntent>();
  const report = (broken?: VerifyReport['broken']): VerifyReport => ({
    ok: broken === undefined,
    entries,
    head: previous,
    ...(broken ? { broken } : {}),
    pending: [...intents.values()].sort((a, b) => a.id - b.id),
    ...(incompleteTail ? { incompleteTail } : {}),
  });

  for await (const item of items) {
    if (item.incomplete) {
      incompleteTail = item.at;
      continue;
    }
    const problem = item.problem ?? checkEntry(item.entry, previous);
    if (problem !== undefined) return report({ at: item.at, reason: problem });
    const entry = item.entry as AuditEntry;
    entries++;
    previous = { id: entry.id, hash: entry.hash };
    if (entry.id === expect?.id) atExpected = entry.hash;
    if (entry.status === 'intent') {
      intents.set(entry.commit_id, {
        commit_id: entry.commit_id,
        id: entry.id,
        created_at: entry.created_at,
      });
    } else {
      intents.delete(entry.commit_id);
    }
  }
  if (expect !== undefined) {
    const reason = headProblem(previous, expect, atExpected);
    if (reason !== undefined) return report({ at: 'head', reason });
  }
  return report();
}

/** Why `entry` does not continue the chain after `previous`, or undefined when it does. */
function checkEntry(entry: unknown, previous: ExpectedHead | undefined): string | undefined {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return 'not a JSON entry';
  const { id, hash, ...rest } = entry as Record<string, unknown>;
  if (!Number.isSafeInteger(id)) return 'its id is not an integer';
  const expectedId = (previous?.id ?? 0) + 1;
  if (id !== expectedId) {
    return previous === undefined
      ? `the trail starts at id ${id as number}, not 1 (its first entries are missing)`
      : `id ${id as number} follows id ${previous.id} (entries are missing or out of order)`;
  }
  if (typeof hash !== 'string') return 'it has no hash';
  const computed = entryHash(previous?.hash ?? GENESIS_HASH, { id, ...rest } as Omit<AuditEntry, 'hash'>);
  if (computed !== hash) {
    return 'its hash does not match its content and the previous entry (edited, or an entry before it was removed)';
  }
  return undefined;
}

function headProblem(
  head: ExpectedHead | undefined,
  expect: ExpectedHead,
  atExpected: string | undefined,
): string | undefined {
  const shown = (h: ExpectedHead) => `${h.id}:${h.hash}`;
  if (head === undefined) return `the trail is empty, expected head ${shown(expect)} (a cut tail)`;
  if (head.id === expect.id && head.hash === expect.hash) return undefined;
  if (head.id < expect.id) {
    return `the head is ${shown(head)}, expected ${shown(expect)}: entries after ${head.id} are missing (a cut tail)`;
  }
  const entry =
    atExpected === expect.hash
      ? `entry ${expect.id} matches, and ${head.id - expect.id} entries follow it`
      : `entry ${expect.id} has another hash`;
  return `the head is ${shown(head)}, not the expected ${shown(expect)} (${entry})`;
}
