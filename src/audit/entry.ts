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
 * `canonical` is the entry's canonical JSON (what its hash covers, and what a file line is made of).
 */
export function sealEntry(
  head: AuditHead | undefined,
  entry: NewAuditEntry,
  now: number,
): { entry: AuditEntry; canonical: string; head: AuditHead } {
  const time = Math.max(now, head?.time ?? 0);
  const id = (head?.id ?? 0) + 1;
  const createdAt = new Date(time).toISOString();
  const { parts, clean } = canonicalParts(entry);
  const canonical = `${parts[0]}${createdAt}${parts[1]}${id}${parts[2]}`;
  const hash = createHash('sha256')
    .update((head?.hash ?? GENESIS_HASH) + canonical, 'utf8')
    .digest('hex');
  return {
    entry: { id, created_at: createdAt, ...clean, hash },
    canonical,
    head: { id, hash, time },
  };
}

/**
 * The canonical JSON of `entry`, cleaned (see `cleanEntry`), in three parts around where its
 * `created_at` (a time of `toISOString`'s form) and its `id` go: `parts[0] + time + parts[1] + id +
 * parts[2]` is the text `canonicalJson` makes of the whole entry. Written key by key in sorted
 * order (only `fields` is sorted generically): this is every append's cost, and a store that
 * allocates id and time where the hash is computed (the database) sends the parts.
 */
export function canonicalParts(entry: NewAuditEntry): {
  parts: [string, string, string];
  clean: NewAuditEntry;
} {
  let clean = entry;
  let parts = partsOf(entry);
  // JSON.stringify escapes a NUL and a lone surrogate: only then is there anything to clean.
  if (ESCAPED_UNSTORABLE.test(parts[0] + parts[1] + parts[2])) {
    clean = cleanEntry(entry);
    parts = partsOf(clean);
  }
  return { parts, clean };
}

/** A NUL or a lone surrogate as `JSON.stringify` writes them. */
const ESCAPED_UNSTORABLE = /\\u(?:0000|d[89a-f])/;

function partsOf(e: NewAuditEntry): [string, string, string] {
  const q = JSON.stringify;
  return [
    `{"action":${q(e.action)},"actor_email":${q(e.actor_email)},"actor_id":${q(e.actor_id)},` +
      `"actor_name":${q(e.actor_name)},"commit_id":${q(e.commit_id)},"created_at":"`,
    `","fields":${canonicalJson(e.fields)},"id":`,
    `,"request_id":${q(e.request_id)},"source_ip_address":${q(e.source_ip_address)},"status":${q(e.status)}}`,
  ];
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
