/** Token ids of signed requests, as the reference's UUID parser reads them. */

/**
 * The forms the reference reads: canonical, 32 hex digits, either of them in braces or after
 * `urn:uuid:`. Group 1 or 2 holds the hex digits.
 */
const UUID =
  /^(?:urn:uuid:|\{(?=.*\}$))?(?:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})|([0-9a-f]{32}))\}?$/i;

/** The canonical form itself, as clients mostly send it. */
const CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The canonical lower-case form of a token id, or undefined when it is not a UUID. */
export function canonicalTokenId(value: string): string | undefined {
  if (CANONICAL.test(value)) return value;
  const m = UUID.exec(value);
  if (!m || (value.endsWith('}') && !value.startsWith('{'))) return undefined;
  const hex = (m[1] ?? (m[2] as string)).replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
