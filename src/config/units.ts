/**
 * Durations and byte sizes as operators write them: `500ms`, `30s`, `10m`, `1h` or plain seconds;
 * `512KiB`, `10MiB`, `1GiB`, `64kB` or plain bytes.
 */

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/;
const DURATION_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds for a duration written as a number of seconds or `<n>(ms|s|m|h)`; undefined if malformed. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number')
    return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  const m = DURATION.exec(value.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * (DURATION_MS[m[2] ?? 's'] as number));
}

const SIZE = /^(\d+)\s*(B|kB|KB|KiB|MB|MiB|GB|GiB)?$/;
const SIZE_BYTES: Record<string, number> = {
  B: 1,
  kB: 1000,
  KB: 1000,
  KiB: 1024,
  MB: 1_000_000,
  MiB: 1024 ** 2,
  GB: 1_000_000_000,
  GiB: 1024 ** 3,
};

/** Bytes for a size written as a number of bytes or `<n><unit>`; undefined if malformed. */
export function parseSize(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  const m = SIZE.exec(value.trim());
  if (!m) return undefined;
  const bytes = Number(m[1]) * (SIZE_BYTES[m[2] ?? 'B'] as number);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
