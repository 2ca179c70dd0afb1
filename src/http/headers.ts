/**
 * Headers that must appear at most once (`Prefer` and the authentication headers). Node keeps only
 * the first `Authorization` and joins other repeats, so duplicates are found in the raw header list.
 */
import type { IncomingMessage } from 'node:http';
import { errors } from '../errors.js';

/**
 * A reader of headers that must appear at most once: the values of `names` (case-insensitive), in
 * `names`' order, undefined when absent, in one pass over the raw list; 400 when one is sent more
 * than once, naming the first repeated one in `names`' order.
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
