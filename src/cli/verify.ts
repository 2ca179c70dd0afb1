/**
 * `gateway verify`: replays the signature chain for a captured request step by step, prints each
 * step's input and digest, the signature the gateway expects and whether the given one matches; when
 * it does not, tries the usual mistakes of client authors (contract §3, Explaining a mismatch) and
 * names the one that matches. Exit 0 on a match, 1 otherwise, 2 on usage. The key is never printed.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { signatureSteps } from '../signing/chain.js';
import { formatRequestDate as rfc3339, parseRequestDate } from '../signing/request-date.js';
import { canonicalTokenId } from '../signing/token-id.js';
import { CliError, reportFailure } from './error.js';
import type { SignIo } from './sign.js';
import { targetSpellings } from './target-spellings.js';

const USAGE = `usage: gateway verify --token-id ID (--token-key-file F | env GATEWAY_TOKEN_KEY)
                      --method M --uri U --date D --signature S [--body FILE]
  Replays the signature of a captured request (the method, the target exactly as sent, the
  RequestDate and Signature values, the body) and says which usual mistake explains a mismatch.
  Exit 0 when the signature matches, 1 when it does not, 2 on usage.`;

const OPTIONS = {
  'token-id': { type: 'string' },
  'token-key-file': { type: 'string' },
  method: { type: 'string' },
  uri: { type: 'string' },
  date: { type: 'string' },
  signature: { type: 'string' },
  body: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/; // an HTTP method (RFC 9110 token)

/** What a client may have signed instead of the request it sent. */
interface Variant {
  readonly label: string;
  /** What to tell the client author when this variant matches. */
  readonly fix: string;
  readonly method: string;
  readonly target: string;
  /** The date whose first 13 characters are signed. */
  readonly hour: string;
  readonly body: Buffer;
}

/** Runs `gateway verify` with `argv` (the arguments after `verify`); resolves to the exit code. */
export async function runVerify(argv: string[], io: SignIo): Promise<number> {
  try {
    const values = parse(argv);
    if (values.help) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    const tokenId = required(values['token-id'], '--token-id');
    if (canonicalTokenId(tokenId) === undefined) throw CliError.usage('--token-id must be a UUID');
    const method = required(values.method, '--method');
    if (!TOKEN.test(method)) throw CliError.usage('--method must be an HTTP method such as GET or PATCH');
    const uri = required(values.uri, '--uri');
    if (!uri.startsWith('/') || /\s/.test(uri))
      throw CliError.usage('--uri must be the target as sent, from "/"');
    const date = required(values.date, '--date');
    let instant: number;
    let offset: number;
    try {
      ({ at: instant, offset } = parseRequestDate(date));
    } catch {
      throw CliError.usage('--date must be the RequestDate value as sent (RFC 3339 with a zone)');
    }
    const given = required(values.signature, '--signature');
    const key = await tokenKey(values['token-key-file'], io.env);
    const body = values.body === undefined ? Buffer.alloc(0) : await readFile(values.body);

    const sent: Variant = { label: 'as sent', fix: '', method, target: uri, hour: date, body };
    const [first, second, expected] = signatureSteps(key, method, uri, date, body);
    io.stdout(
      [
        'step 1: HMAC-SHA256(token key, method + target, nothing between)',
        `  input:  ${method}${uri}`,
        `  digest: ${first.toString('hex')}`,
        'step 2: HMAC-SHA256(step 1, the first 13 characters of RequestDate)',
        `  input:  ${date.slice(0, 13)}`,
        `  digest: ${second.toString('hex')}`,
        'step 3: HMAC-SHA256(step 2, the body)',
        `  input:  ${describeBody(body)}`,
        `  digest: ${expected.toString('hex')}`,
        `expected Signature: ${expected.toString('base64')}`,
        `given Signature:    ${given}`,
        '',
      ].join('\n'),
    );
    if (expected.toString('base64') === given) {
      io.stdout('result: the signature matches\n');
      return 0;
    }
    io.stdout(`result: the signature does not match${malformed(given)}\ntrying the usual mistakes:\n`);
    const variants = mistakes(sent, instant, offset);
    let found: Variant | undefined;
    for (const v of variants) {
      const matches = signatureSteps(key, v.method, v.target, v.hour, v.body)[2].toString('base64') === given;
      io.stdout(`  ${v.label}: ${matches ? 'matches' : 'no'}\n`);
      found ??= matches ? v : undefined;
    }
    io.stdout(
      found
        ? `the client signed ${found.label}: ${found.fix}\n`
        : 'none of them matches: the key or the body differs (check the token key, and that the body signed is the body sent)\n',
    );
    return 1;
  } catch (err) {
    return reportFailure(err, io.stderr, 'verify', USAGE);
  }
}

/**
 * The usual mistakes: the query, another spelling of the target, the neighbouring hours, the hour in
 * UTC, an empty body, the method's case.
 */
function mistakes(sent: Variant, instant: number, offset: number): Variant[] {
  const out: Variant[] = [];
  const q = sent.target.indexOf('?');
  if (q !== -1) {
    const path = sent.target.slice(0, q);
    out.push({
      ...sent,
      label: `the target without its query (${path})`,
      fix: 'sign the target exactly as sent, its query string included',
      target: path,
    });
  } else {
    out.push({
      ...sent,
      label: `the target with an empty query (${sent.target}?)`,
      fix: 'sign the target exactly as sent: no "?" without a query',
      target: `${sent.target}?`,
    });
  }
  // Another spelling of the same target: encoded otherwise, or the path as the gateway's 301 cleans it.
  const tried = out.map((v) => v.target);
  for (const spelling of targetSpellings(sent.target, tried)) out.push({ ...sent, ...spelling });
  for (const [step, which] of [
    [-1, 'before'],
    [1, 'after'],
  ] as const) {
    const hour = rfc3339(instant + step * 3_600_000, offset);
    out.push({
      ...sent,
      label: `the hour ${which} (${hour.slice(0, 13)})`,
      fix: 'sign the first 13 characters of the RequestDate value sent (read the clock once)',
      hour,
    });
  }
  if (offset !== 0) {
    const hour = rfc3339(instant, 0);
    out.push({
      ...sent,
      label: `the hour in UTC (${hour.slice(0, 13)})`,
      fix: 'sign the first 13 characters of the RequestDate value exactly as sent, in its own zone',
      hour,
    });
  }
  if (sent.body.length > 0) {
    out.push({
      ...sent,
      label: 'an empty body instead of the one sent',
      fix: 'sign the body bytes exactly as sent (a multipart body as written, boundary included)',
      body: Buffer.alloc(0),
    });
  }
  const cases = new Set([sent.method.toUpperCase(), sent.method.toLowerCase(), capitalized(sent.method)]);
  cases.delete(sent.method);
  for (const method of cases) {
    out.push({
      ...sent,
      label: `the method as ${method}`,
      fix: 'sign the method exactly as on the request line',
      method,
    });
  }
  return out;
}

function capitalized(method: string): string {
  return method.charAt(0).toUpperCase() + method.slice(1).toLowerCase();
}

function describeBody(body: Buffer): string {
  if (body.length === 0) return 'empty (0 bytes)';
  return `${body.length} bytes, sha256 ${createHash('sha256').update(body).digest('hex')}`;
}

/** Why the gateway would refuse `given` before comparing it, if it would. */
function malformed(given: string): string {
  const canonical =
    /^[A-Za-z0-9+/]{43}=$/.test(given) && Buffer.from(given, 'base64').toString('base64') === given;
  return canonical ? '' : ' (and it is not padded standard base64 of 32 bytes: the gateway answers 400)';
}

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (err) {
    // A stray positional argument may be a key typed in the wrong place: never echo it.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') throw CliError.usage('unexpected argument');
    throw CliError.usage((err as Error).message);
  }
}

function required(value: string | undefined, name: string): string {
  if (value === undefined || value === '') throw CliError.usage(`${name} is required`);
  return value;
}

/** The key from `--token-key-file` (one trailing newline dropped) or `GATEWAY_TOKEN_KEY`. */
async function tokenKey(file: string | undefined, env: SignIo['env']): Promise<string> {
  const key =
    file !== undefined ? (await readFile(file, 'utf8')).replace(/\r?\n$/, '') : env.GATEWAY_TOKEN_KEY;
  if (key === undefined || key === '') {
    throw CliError.usage(
      'a token key is required: --token-key-file F or the environment variable GATEWAY_TOKEN_KEY',
    );
  }
  return key;
}
