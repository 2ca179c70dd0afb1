/**
 * The `fields` of an entry: what an update changed and of which provider, or what a refusal was
 * for. Never a metadata document, a key, a token or a query string: only names, ids and digests.
 */
import { createHash } from 'node:crypto';

/** How `changed` spells the fields of a provider (as the audit log line spells them). */
export const CHANGED_FIELDS = [
  'name',
  'display_name',
  'idp_issuer_uri',
  'idp_sso_uri',
  'metadata_xml',
  'config.auto_provision',
] as const;

/** At most this many bytes of a refused request's path are kept. */
const MAX_PATH_BYTES = 256;
/** At most this many bytes of a failure's message are kept. */
const MAX_ERROR_BYTES = 512;

/** The provider an update is about: its record's own `id` and its `name`. */
export interface AuditedProvider {
  readonly id: number;
  readonly name: string;
}

/** The fields a form asks to set, spelled as `changed` spells them: the `intent`'s list. */
export function requestedChanges(asked: {
  readonly name?: boolean;
  readonly metadata?: boolean;
  readonly autoProvision?: boolean;
}): string[] {
  const changed: string[] = [];
  if (asked.name) changed.push('name', 'display_name');
  if (asked.metadata) changed.push('idp_issuer_uri', 'idp_sso_uri', 'metadata_xml');
  if (asked.autoProvision) changed.push('config.auto_provision');
  return changed;
}

/**
 * A store's list of changed fields (`config.auto_provision.enabled`, …) as `changed` spells it:
 * the auto-provision settings are one field, named once.
 */
export function auditedChanges(changed: readonly string[]): string[] {
  const out: string[] = [];
  for (const field of changed) {
    const name = field.startsWith('config.auto_provision') ? 'config.auto_provision' : field;
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

/** The lower-case hex SHA-256 of a metadata file as it was sent. */
export function metadataSha256(file: Uint8Array | string): string {
  return createHash('sha256').update(file).digest('hex');
}

/** The `fields` of an `UpdateSSOIdentityProvider` entry. */
export function updateFields(update: {
  readonly ssoProviderId: number;
  /** Unknown through an upstream: `id` and `name` are then left out. */
  readonly provider: AuditedProvider | undefined;
  readonly changed: readonly string[];
  readonly metadataSha256?: string | undefined;
  readonly error?: string | undefined;
}): Record<string, unknown> {
  const fields: Record<string, unknown> = { sso_provider_id: update.ssoProviderId };
  if (update.provider !== undefined) {
    fields.id = update.provider.id;
    fields.name = update.provider.name;
  }
  fields.changed = [...update.changed];
  if (update.metadataSha256 !== undefined) fields.metadata_sha256 = update.metadataSha256;
  if (update.error !== undefined) fields.error = cutUtf8(update.error, MAX_ERROR_BYTES);
  return fields;
}

/** The `fields` of an `UnauthorizedAccessAttempt` entry; `path` is cut at its query. */
export function refusalFields(refusal: {
  readonly method: string;
  readonly path: string;
  readonly permission: string;
}): Record<string, unknown> {
  const query = refusal.path.search(/[?#]/);
  const path = query === -1 ? refusal.path : refusal.path.slice(0, query);
  return {
    method: cutUtf8(refusal.method, 32),
    path: cutUtf8(path, MAX_PATH_BYTES),
    permission: refusal.permission,
  };
}

/** `text` cut to at most `max` UTF-8 bytes, never inside a character. */
export function cutUtf8(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let end = max;
  // Back off over continuation bytes (10xxxxxx) to the start of the character that did not fit.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
