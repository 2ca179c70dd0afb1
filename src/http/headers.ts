/**
 * Headers that must appear at most once (`Prefer` and the authentication headers). Node keeps only
 * the first `Authorization` and joins other repeats, so duplicates are found in the raw header list.
 */
import type { IncomingMessage } from 'node:http';
import { errors } from '../errors.js';

/** The value of `name` (case-insensitive), undefined when absent; 400 when it is sent more than once. */
export function singleHeader(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders;
  const lower = name.toLowerCase();
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).length === lower.length && (raw[i] as string).toLowerCase() === lower) {
      if (value !== undefined) throw errors.duplicateHeader(name);
      value = raw[i + 1] as string;
    }
  }
  return value;
}

/**
 * A reader of several single headers at once: their values, in `names`' order, in one pass over the
 * raw list. Each is as `singleHeader` reads it; when several are repeated, the 400 names the first of
 * them in `names`' order (the answer `singleHeader` called on each in turn would give).
 */
export function singleHeaders(names: readonly string[]): (req: IncomingMessage) => (string | undefined)[] {
  const lower = names.map((name) => name.toLowerCase());
  return (req) => {
    const raw = req.rawHeaders;
    const values = new Array<string | undefined>(lower.length);
    let repeated = lower.length;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      for (let j = 0; j < lower.length; j++) {
        const wanted = lower[j] as string;
        if (name.length !== wanted.length || (name !== wanted && name.toLowerCase() !== wanted)) continue;
        if (values[j] === undefined) values[j] = raw[i + 1] as string;
        else if (j < repeated) repeated = j;
        break;
      }
    }
    if (repeated < lower.length) throw errors.duplicateHeader(names[repeated] as string);
    return values;
  };
}
