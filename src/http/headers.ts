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
