/**
 * Times of the audit query language, in microseconds since the epoch: PostgreSQL's precision, so
 * that both stores compare a filter's time exactly alike (an entry's own times are milliseconds).
 */

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

const FIRST = new Date(0).setUTCFullYear(1, 0, 1);
const LAST = new Date(0).setUTCFullYear(9999, 11, 31) + 86_400_000 - 1;

/**
 * The instant `text` names (RFC 3339, as Go's `time.RFC3339Nano` reads it: up to nine fraction
 * digits, an offset or `Z`), in whole microseconds (further digits are dropped); undefined when it
 * is not one.
 */
export function parseTime(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  // An impossible day (February 30th) rolls over into the next month: not a date.
  if (date.getUTCDate() !== day || date.getUTCMonth() !== month - 1) return undefined;
  date.setUTCHours(hour, minute, second, 0);
  let offset = 0;
  if (m[8] === undefined) {
    const hours = Number(m[10]);
    const minutes = Number(m[11]);
    if (hours > 23 || minutes > 59) return undefined;
    offset = (m[9] === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  }
  const ms = date.getTime() - offset;
  // Years 1 to 9999 only: what every store reads and writes alike.
  if (ms < FIRST || ms > LAST) return undefined;
  return ms * 1000 + Number((m[7] ?? '').padEnd(6, '0').slice(0, 6));
}

/** `micros` as RFC 3339 in UTC with six fraction digits, as PostgreSQL reads a timestamptz exactly. */
export function formatMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const rest = micros - ms * 1000;
  return `${new Date(ms).toISOString().slice(0, -1)}${String(rest).padStart(3, '0')}Z`;
}

/** An entry's `created_at` in microseconds. */
export function entryMicros(createdAt: string): number {
  return Date.parse(createdAt) * 1000;
}
