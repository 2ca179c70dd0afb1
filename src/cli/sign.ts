/**
 * `gateway sign`: prints the three signed-request headers for a request, so that operators and
 * client authors can call the API with curl. With `--form`/`--file` it also writes the multipart
 * body it signed to `--out` and prints its `Content-Type`. The key is never printed.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { signatureOf } from '../signing/chain.js';
import { formatRequestDate, parseRequestDate } from '../signing/request-date.js';
import { canonicalTokenId } from '../signing/token-id.js';
import { CliError, reportFailure } from './error.js';

/** Where the command writes, and the environment it reads `GATEWAY_TOKEN_KEY` from. */
export interface SignIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  env: Record<string, string | undefined>;
}

const USAGE = `usage: gateway sign --token-id ID (--token-key-file F | env GATEWAY_TOKEN_KEY | --token-key K)
                    --method M --uri PATH[?QUERY]
                    [--body FILE | --form name=value ... --file name=@path ... --out BODY]
                    [--date RFC3339] [--scheme WORD]
  Prints Authorization, RequestDate and Signature (and Content-Type for a form) for curl -H.
  --uri is signed exactly as given, query included: send it unchanged. Prefer a key file or the
  environment to --token-key, which other users of this machine can see in the process list.`;

const OPTIONS = {
  'token-id': { type: 'string' },
  'token-key-file': { type: 'string' },
  'token-key': { type: 'string' },
  method: { type: 'string' },
  uri: { type: 'string' },
  body: { type: 'string' },
  form: { type: 'string', multiple: true },
  file: { type: 'string', multiple: true },
  out: { type: 'string' },
  date: { type: 'string' },
  scheme: { type: 'string', default: 'bhesignature' },
  help: { type: 'boolean', short: 'h' },
} as const;

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/; // an HTTP method or scheme word (RFC 9110 token)

/** Runs `gateway sign` with `argv` (the arguments after `sign`); resolves to the exit code. */
export async function runSign(argv: string[], io: SignIo): Promise<number> {
  try {
    const { values } = parse(argv);
    if (values.help) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    const tokenId = required(values['token-id'], '--token-id');
    if (canonicalTokenId(tokenId) === undefined) throw CliError.usage('--token-id must be a UUID');
    const method = required(values.method, '--method');
    if (!TOKEN.test(method)) throw CliError.usage('--method must be an HTTP method such as GET or PATCH');
    const uri = required(values.uri, '--uri');
    if (!uri.startsWith('/') || /[\s]/.test(uri))
      throw CliError.usage('--uri must be a path starting with "/"');
    if (!TOKEN.test(values.scheme)) throw CliError.usage('--scheme must be a single word');
    const date = values.date ?? formatRequestDate(Date.now());
    checkDate(date);
    const key = await tokenKey(values, io.env);

    const fields = values.form ?? [];
    const files = values.file ?? [];
    const isForm = fields.length > 0 || files.length > 0;
    if (isForm && values.body !== undefined)
      throw CliError.usage('--body cannot be combined with --form/--file');
    if (isForm && values.out === undefined) throw CliError.usage('--out is required with --form/--file');
    if (!isForm && values.out !== undefined) throw CliError.usage('--out is only used with --form/--file');

    let body: Buffer | undefined;
    let contentType: string | undefined;
    if (isForm) {
      ({ body, contentType } = await formBody(fields, files));
      await writeFile(values.out as string, body);
    } else if (values.body !== undefined) {
      body = await readFile(values.body);
    }

    const lines = [
      `Authorization: ${values.scheme} ${tokenId}`,
      `RequestDate: ${date}`,
      `Signature: ${signatureOf(key, method, uri, date, body)}`,
    ];
    if (contentType) lines.push(`Content-Type: ${contentType}`);
    io.stdout(`${lines.join('\n')}\n`);
    return 0;
  } catch (err) {
    return reportFailure(err, io.stderr, 'sign', USAGE);
  }
}

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false });
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

function checkDate(date: string): void {
  try {
    parseRequestDate(date);
  } catch {
    throw CliError.usage('--date must be an RFC 3339 date-time with a zone');
  }
}

/** The key from exactly one source: a file (one trailing newline dropped), the flag, or the environment. */
async function tokenKey(values: { 'token-key-file'?: string; 'token-key'?: string }, env: SignIo['env']) {
  const file = values['token-key-file'];
  if (file !== undefined && values['token-key'] !== undefined) {
    throw CliError.usage('give --token-key-file or --token-key, not both');
  }
  const key =
    file !== undefined
      ? (await readFile(file, 'utf8')).replace(/\r?\n$/, '')
      : (values['token-key'] ?? env.GATEWAY_TOKEN_KEY);
  if (key === undefined || key === '') {
    throw CliError.usage('a token key is required: --token-key-file, GATEWAY_TOKEN_KEY or --token-key');
  }
  return key;
}

/** A multipart/form-data body of the text fields (`name=value`) and files (`name=@path`), in order. */
async function formBody(fields: string[], files: string[]): Promise<{ body: Buffer; contentType: string }> {
  const boundary = `----gateway-sign-${randomBytes(12).toString('hex')}`;
  const chunks: Buffer[] = [];
  const part = (disposition: string, type: string | undefined, value: Buffer) => {
    const head = `--${boundary}\r\nContent-Disposition: form-data; ${disposition}\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n`;
    chunks.push(Buffer.from(head), value, Buffer.from('\r\n'));
  };
  for (const field of fields) {
    const [name, value] = split(field, '--form', 'name=value');
    part(`name="${name}"`, undefined, Buffer.from(value));
  }
  for (const file of files) {
    const [name, at] = split(file, '--file', 'name=@path');
    if (!at.startsWith('@') || at.length === 1) throw CliError.usage('--file must be name=@path');
    const filename = path.basename(at.slice(1));
    if (!safe(filename)) throw CliError.usage('--file names a file whose name cannot go in a form');
    const type = /\.xml$/i.test(filename) ? 'text/xml' : 'application/octet-stream';
    part(`name="${name}"; filename="${filename}"`, type, await readFile(at.slice(1)));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

function split(arg: string, flag: string, form: string): [string, string] {
  const eq = arg.indexOf('=');
  const name = eq === -1 ? '' : arg.slice(0, eq);
  if (name === '' || !safe(name)) throw CliError.usage(`${flag} must be ${form}`);
  return [name, arg.slice(eq + 1)];
}

/** A name that can be written inside a quoted Content-Disposition parameter as it is. */
function safe(name: string): boolean {
  return !/["\\\u0000-\u001f\u007f]/.test(name);
}
