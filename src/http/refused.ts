/**
 * What can be read of a request Node's HTTP parser refused (`clientError`), for its log line: the
 * method, path and user agent when the bytes the parser was reading (`rawPacket`) begin with a
 * request line, else `null` (contract §6). Only these fields are taken, never other headers or the
 * query.
 */

/** The most of a `User-Agent` that goes into a log line (as for any request). */
const USER_AGENT = 256;
/** A request line: a method token, a target without spaces, the HTTP version. */
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) ([^\s]{1,8192}) HTTP\/\d\.\d\r?\n/;
const AGENT = /\r?\nuser-agent:[ \t]*([^\r\n]*)/i;

/** The fields of a refused request's log line. */
export interface RefusedRequest {
  readonly method: string | null;
  readonly path: string | null;
  readonly user_agent?: string;
}

/** Reads `raw` (the parser's current bytes, if any) as far as a log line needs. */
export function readRefused(raw: Buffer | undefined): RefusedRequest {
  if (raw === undefined || raw.length === 0) return { method: null, path: null };
  const text = raw.toString('latin1', 0, Math.min(raw.length, 16_384));
  const line = REQUEST_LINE.exec(text);
  if (line === null) return { method: null, path: null };
  const target = line[2] as string;
  const q = target.indexOf('?');
  const agent = AGENT.exec(text)?.[1];
  return {
    method: line[1] as string,
    path: q === -1 ? target : target.slice(0, q),
    ...(agent === undefined ? {} : { user_agent: agent.slice(0, USER_AGENT) }),
  };
}
