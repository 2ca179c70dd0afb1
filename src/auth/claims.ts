/**
 * A verified token's permissions (contract §3, Claims): read at `permissions_claim` (a dotted path,
 * or a list of keys for claim names holding dots), as an array of strings or a space-separated
 * string, and translated through `permission_map` when there is one.
 */
import type { ClaimsConfig } from '../config/jwt-providers.js';

/** Reads permissions from a verified payload; built once per configuration. */
export type PermissionsReader = (payload: Readonly<Record<string, unknown>>) => ReadonlySet<string>;

/** The reader for `config`. */
export function permissionsReader(config: ClaimsConfig): PermissionsReader {
  const path =
    typeof config.permissionsClaim === 'string'
      ? config.permissionsClaim.split('.')
      : config.permissionsClaim;
  const defaults: ReadonlySet<string> = new Set(config.defaultPermissions);
  const map = config.permissionMap === undefined ? undefined : new Map(Object.entries(config.permissionMap));
  return (payload) => {
    const names = namesOf(valueAt(payload, path));
    if (names === undefined) return defaults;
    if (map === undefined) return new Set(names);
    // With a map, a name it does not list grants nothing.
    return new Set(names.flatMap((name) => map.get(name) ?? []));
  };
}

/** The value at `path`, own properties only; undefined when any step is missing or not an object. */
function valueAt(payload: unknown, path: readonly string[]): unknown {
  let value = payload;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, key)) {
      return undefined;
    }
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * The names a claim value holds; undefined for an absent or `null` claim (how many identity providers
 * write an unset one: the defaults apply). Any other shape (a number, a list holding a non-string) is
 * malformed as a whole and holds no name.
 */
function namesOf(claim: unknown): string[] | undefined {
  if (claim === undefined || claim === null) return undefined;
  if (typeof claim === 'string') return claim.split(' ').filter((p) => p !== '');
  if (Array.isArray(claim) && claim.every((p) => typeof p === 'string')) return claim as string[];
  return [];
}
