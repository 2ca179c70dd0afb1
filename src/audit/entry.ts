/**
 * An audit entry in the service's shape (its `audit_logs` row), and the hash chain over entries
 * (contract §12): each entry's `hash` is the lower-case hex SHA-256 of the UTF-8 bytes of the
 * previous entry's hash (64 zeros for the first) followed by the entry's canonical JSON.
 */
import { createHash } from 'node:crypto';

/** The actions the gateway records. */
export const AUDIT_ACTIONS = ['UpdateSSOIdentityProvider', 'UnauthorizedAccessAttempt'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** An update's `intent`, then its `success` or `failure`; a refusal is one `failure`. */
export const AUDIT_STATUSES = ['intent', 'success', 'failure'] as const;
export type AuditStatus = (typeof AUDIT_STATUSES)[number];

/** A stored entry. */
export interface AuditEntry {
  id: number;
  created_at: string;
  actor_id: string;
  actor_name: string;
  actor_email: string;
  action: AuditAction;
  fields: Record<string, unknown>;
  request_id: string;
  source_ip_address: string;
  status: AuditStatus;
  commit_id: string;
  hash: string;
}

/** What a caller appends: the store allocates `id` and `created_at` and computes `hash`. */
export type NewAuditEntry = Omit<AuditEntry, 'id' | 'created_at' | 'hash'>;

/** The last entry of a trail: where the next one continues the chain from. */
export interface AuditHead {
  readonly id: number;
  readonly hash: string;
  /** Its `created_at`, in milliseconds since the epoch. */
  readonly time: number;
}

/** The hash the first entry chains from. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * The canonical JSON of `value`: object keys sorted (by UTF-16 code units, as `Array.sort` does) at
 * every level, then `JSON.stringify` without whitespace. (JavaScript writes integer-like keys first;
 * entries never have such keys.)
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort())
    sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

/** The hash of `entry` (without its own `hash`) chained after `previous`. */
export function entryHash(previous: string, entry: Omit<AuditEntry, 'hash'>): string {
  return createHash('sha256')
    .update(previous + canonicalJson(entry), 'utf8')
    .digest('hex');
}

/**
 * `entry` as the entry after `head`: the next id, `created_at` from `now` (never earlier than the
 * head's, so that ids and times agree even when a replica's clock is behind), and its hash.
 */
export function sealEntry(head: AuditHead | undefined, entry: NewAuditEntry, now: number): AuditEntry {
  const time = Math.max(now, head?.time ?? 0);
  // Written in this order (a file's line is read by people and SIEMs too); the hash sorts the keys.
  const unsealed: Omit<AuditEntry, 'hash'> = {
    id: (head?.id ?? 0) + 1,
    created_at: new Date(time).toISOString(),
    ...cleanEntry(entry),
  };
  return { ...unsealed, hash: entryHash(head?.hash ?? GENESIS_HASH, unsealed) };
}

/**
 * The canonical JSON of `entry` (cleaned by `cleanEntry`) in three parts, around where its `created_at` (a time of
 * `toISOString`'s form) and its `id` go: `parts[0] + time + parts[1] + id + parts[2]`. For a store
 * that allocates both where the hash is computed (the database).
 */
export function canonicalParts(entry: NewAuditEntry): [string, string, string] {
  // A NUL is in no cleaned string, so each placeholder's JSON occurs exactly once.
  const text = canonicalJson({ ...entry, id: '\u0000', created_at: '\u0000' });
  const parts = text.split('"\\u0000"');
  if (parts.length !== 3) throw new Error('canonicalParts takes a cleaned entry (see cleanEntry)');
  const [before, between, after] = parts as [string, string, string];
  return [`${before}"`, `"${between}`, after];
}

/** The head that `entry` makes. */
export function headOf(entry: AuditEntry): AuditHead {
  return { id: entry.id, hash: entry.hash, time: Date.parse(entry.created_at) };
}

/**
 * `entry` with every string made storable and hashable alike in every store: well-formed UTF-16
 * (a lone surrogate has no UTF-8 bytes) and no NUL (PostgreSQL text refuses it).
 */
export function cleanEntry(entry: NewAuditEntry): NewAuditEntry {
  return cleanValue(entry) as NewAuditEntry;
}

/** A NUL, or a surrogate without its pair. */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function cleanValue(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(UNSTORABLE, '\uFFFD');
  if (Array.isArray(value)) return value.map(cleanValue);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[cleanValue(key) as string] = cleanValue(v);
  return out;
}
