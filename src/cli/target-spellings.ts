/**
 * Other spellings of a request target that a client may have signed while its HTTP library sent the
 * target it captured (`gateway verify`): the signature covers the target's bytes exactly as on the
 * request line, so a target signed before percent-encoding, or encoded by another encoder, or sent
 * with a `//` its base URL made, fails although it means the same resource.
 */
import { cleanedTarget } from '../http/router.js';

/** A spelling of the target, with what to tell the client author when it is the one signed. */
export interface Spelling {
  /** Names the spelling, the target itself in parentheses. */
  readonly label: string;
  readonly fix: string;
  readonly target: string;
}

/** Runs of percent-escapes, decoded together (a UTF-8 character spans several). */
const ESCAPES = /(?:%[0-9A-Fa-f]{2})+/g;
const HEX_ESCAPE = /%[0-9A-Fa-f]{2}/g;

/**
 * The spellings of `sent` a client may have signed instead, each differing from `sent` and from the
 * targets in `tried`, in the order tried: decoded once (with `+` in the query a space, too),
 * re-encoded as `encodeURI` would, its escapes' hex digits in the other case, `+` and `%20` swapped
 * in the query, the path cleaned as the gateway's `301` cleans it.
 */
export function targetSpellings(sent: string, tried: readonly string[] = []): Spelling[] {
  const q = sent.indexOf('?');
  const path = q === -1 ? sent : sent.slice(0, q);
  const query = q === -1 ? undefined : sent.slice(q + 1);
  const candidates: Array<[string, string, string | undefined]> = [
    [
      'the target before percent-encoding',
      'sign the target exactly as sent, after percent-encoding it (the bytes of the request line)',
      decodeOnce(sent),
    ],
    [
      'the target before percent-encoding, with "+" in the query as a space',
      'sign the target exactly as sent, after encoding its query (a space sent as "+" is signed as "+")',
      query === undefined ? undefined : `${decodeOnce(path)}?${decodeOnce(query.replaceAll('+', ' '))}`,
    ],
    [
      'the target re-encoded as encodeURI would',
      'sign the target exactly as sent: the HTTP library percent-encodes it otherwise than the encoder the signature was computed over',
      reencode(sent),
    ],
    [
      'the target with upper-case percent-escapes',
      'sign the target exactly as sent: the hex digits of a percent-escape keep their case (%2f and %2F differ)',
      sent.replace(HEX_ESCAPE, (e) => e.toUpperCase()),
    ],
    [
      'the target with lower-case percent-escapes',
      'sign the target exactly as sent: the hex digits of a percent-escape keep their case (%2F and %2f differ)',
      sent.replace(HEX_ESCAPE, (e) => e.toLowerCase()),
    ],
    [
      'the target with "+" and "%20" swapped in the query',
      'sign the query exactly as sent: "+" and "%20" are both a space to a decoder but not to the signature',
      query === undefined
        ? undefined
        : `${path}?${query.replace(/\+|%20/g, (m) => (m === '+' ? '%20' : '+'))}`,
    ],
    [
      'the path cleaned',
      'sign the target exactly as sent: it holds "//" or a dot segment (a base URL ending in "/"?), which the gateway answers with 301 to the cleaned path; send that path',
      cleanedTarget(sent),
    ],
  ];
  const seen = new Set([sent, ...tried]);
  const out: Spelling[] = [];
  for (const [label, fix, target] of candidates) {
    if (target === undefined || seen.has(target)) continue;
    seen.add(target);
    out.push({ label: `${label} (${target})`, fix, target });
  }
  return out;
}

/** `target` percent-decoded once; escapes that are not UTF-8 stay as they are. */
function decodeOnce(target: string): string {
  return target.replace(ESCAPES, (run) => decoded(run) ?? run);
}

/** `target` decoded once and encoded again as `encodeURI` encodes; escapes that are not UTF-8 stay. */
function reencode(target: string): string | undefined {
  let out = '';
  let from = 0;
  try {
    for (const m of target.matchAll(ESCAPES)) {
      out += encodeURI(target.slice(from, m.index));
      const value = decoded(m[0]);
      out += value === undefined ? m[0] : encodeURI(value);
      from = m.index + m[0].length;
    }
    return out + encodeURI(target.slice(from));
  } catch {
    // A lone surrogate, which no encoder would send.
    return undefined;
  }
}

function decoded(run: string): string | undefined {
  try {
    return decodeURIComponent(run);
  } catch {
    return undefined;
  }
}
