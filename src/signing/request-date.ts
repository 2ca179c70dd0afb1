/**
 * The `RequestDate` header of signed requests: strict RFC 3339 with a zone, as read when verifying
 * (every field range-checked: `Date.parse` accepts values without a zone and rolls Feb 30 into
 * March) and as written when signing.
 */
import { errors } from '../errors.js';

/** A `RequestDate` read: its instant and the zone it was written in. */
export interface RequestDate {
  /** ms since the epoch. */
  readonly at: number;
  /** The zone offset, in minutes east of UTC (`Z`, `+00:00` and `-00:00` are 0). */
  readonly offset: number;
}

// RFC 3339 §5.6 date-time; `T` and `Z` may be lower case (its note), the zone is required.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const NO_ZONE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/;

/** The instant and zone of a `RequestDate` value, or the catalogue's 400 `malformed request date: <reason>`. */
export function parseRequestDate(value: string): RequestDate {
  const m = DATE_TIME.exec(value);
  if (!m) {
    if (DATE_ONLY.test(value)) throw errors.malformedRequestDate('a date without a time and zone');
    if (NO_ZONE.test(value)) throw errors.malformedRequestDate('no time zone offset');
    throw errors.malformedRequestDate('not an RFC 3339 date-time');
  }
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = Number(m[6]);
  if (month < 1 || month > 12) throw errors.malformedRequestDate('month out of range');
  if (day < 1 || day > daysInMonth(year, month)) throw errors.malformedRequestDate('day out of range');
  if (hour > 23) throw errors.malformedRequestDate('hour out of range');
  if (minute > 59) throw errors.malformedRequestDate('minute out of range');
  if (second > 59) throw errors.malformedRequestDate('second out of range');
  let offset = 0;
  if (m[8] === undefined) {
    const zoneHours = Number(m[10]);
    const zoneMinutes = Number(m[11]);
    if (zoneHours > 23 || zoneMinutes > 59) throw errors.malformedRequestDate('zone offset out of range');
    offset = (m[9] === '-' ? -1 : 1) * (zoneHours * 60 + zoneMinutes);
  }
  const fraction = m[7] === undefined ? 0 : Number(`0.${m[7]}`) * 1000;
  let at = Date.UTC(year, month - 1, day, hour, minute, second);
  if (year < 100) {
    // Date.UTC maps years 0–99 to 1900–1999: set the year on a leap year's date instead.
    const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second));
    date.setUTCFullYear(year);
    at = date.getTime();
  }
  return { at: at + Math.floor(fraction) - offset * 60_000, offset };
}

/**
 * `parseRequestDate` with the last value read kept: a client signs with second precision, so the
 * requests of one second carry the same `RequestDate` and are read once. A value that does not parse
 * is not kept (it throws every time).
 */
export class RequestDateReader {
  #text: string | undefined;
  #date: RequestDate | undefined;

  read(value: string): RequestDate {
    if (value === this.#text) return this.#date as RequestDate;
    const date = parseRequestDate(value);
    this.#text = value;
    this.#date = date;
    return date;
  }
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * An instant as `RequestDate` is written: RFC 3339 with second precision (truncated), in the zone
 * `offset` minutes east of UTC: `2024-01-01T10:15:00Z`, `2024-01-01T12:15:00+02:00`.
 */
export function formatRequestDate(ms: number, offset = 0): string {
  const local = new Date(Math.floor(ms / 1000) * 1000 + offset * 60_000).toISOString().slice(0, 19);
  if (offset === 0) return `${local}Z`;
  const abs = Math.abs(offset);
  const zone = `${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${local}${offset < 0 ? '-' : '+'}${zone}`;
}
