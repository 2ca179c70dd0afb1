/**
 * Reading a multipart/form-data body into its parts, with limits, and checking its structure: which
 * parts may appear, each at most once, as text or as a file, in UTF-8. What a part's value means is
 * the operation's business; this file only hands over well-formed parts, in form order.
 */
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { Config } from '../config/schema.js';
import { errors, type GatewayError } from '../errors.js';
import type { HeldBody } from '../http/body.js';

/** How a named part must arrive: a text field, or a file part with a filename. */
export type PartKind = 'text' | 'file';

/** A part as read, in form order. */
export type FormPart =
  | { readonly kind: 'text'; readonly name: string; readonly value: string }
  | { readonly kind: 'file'; readonly name: string; readonly filename: string; readonly data: Buffer };

export interface FormRequest {
  /** The request's `Content-Type`. */
  readonly contentType: string | undefined;
  /** The verified body (absent when the request had none). */
  readonly body: HeldBody | undefined;
  /** Every part that may appear, and its kind; any other name is refused. */
  readonly parts: Readonly<Record<string, PartKind>>;
  readonly limits: Config['forms'];
  /** The request's deadline: parsing stops when it fires. */
  readonly signal: AbortSignal;
}

const MULTIPART = /^multipart\/form-data\s*;/i;

/**
 * The parts of the form in `req.body`. Faults are reported one at a time, the first in the byte
 * stream winning: a broken multipart framing (400), a limit (413), or a part that is unknown, repeated,
 * of the wrong kind or not UTF-8 (400). A form with no parts gives an empty list.
 */
export async function readForm(req: FormRequest): Promise<FormPart[]> {
  const { limits } = req;
  if (req.contentType === undefined || !MULTIPART.test(req.contentType)) throw errors.notMultipart();
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': req.contentType },
      // busboy decodes text itself; UTF-8 turns invalid bytes into U+FFFD, which `checkText` refuses.
      defCharset: 'utf8',
      defParamCharset: 'utf8',
      // busboy reports a limit when a count or size *reaches* it: give one more than we allow.
      limits: {
        parts: limits.max_parts + 1,
        fieldSize: limits.max_field_size + 1,
        fileSize: limits.max_file_size + 1,
      },
    });
  } catch {
    throw errors.notMultipart();
  }
  if (req.body === undefined || req.body.size === 0) throw errors.emptyBody();
  req.signal.throwIfAborted();
  return parse(parser, req.body.stream(), req);
}

function parse(parser: busboy.Busboy, source: Readable, req: FormRequest): Promise<FormPart[]> {
  const { limits, parts: spec } = req;
  const found: FormPart[] = [];
  const seen = new Set<string>();
  return new Promise((resolve, reject) => {
    let settled = false;
    const stop = (err: unknown) => {
      if (settled) return;
      settled = true;
      req.signal.removeEventListener('abort', onAbort);
      reject(err);
      // Not from inside one of busboy's own events: it goes on using its state after emitting them.
      setImmediate(() => {
        source.unpipe(parser);
        source.destroy();
        parser.destroy();
      });
    };
    const onAbort = () => stop(req.signal.reason);
    req.signal.addEventListener('abort', onAbort, { once: true });

    /** The checks every part goes through, in this order, as soon as its headers are read. */
    const admit = (name: string, isFile: boolean, filename: string | undefined): GatewayError | undefined => {
      const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
      if (kind === undefined) return errors.unexpectedPart(name);
      if (seen.has(name)) return errors.duplicatePart(name);
      seen.add(name);
      if (kind === 'file' && filename === undefined) return errors.partMustBeFile(name);
      if (kind === 'text' && isFile) return errors.partMustBeText(name);
      if (filename !== undefined && !checkText(filename)) return errors.invalidText(name);
      return undefined;
    };

    parser.on('field', (name, value, info) => {
      if (settled) return;
      const fault =
        admit(name ?? '', false, undefined) ??
        (info.valueTruncated ? errors.partTooLarge(name, limits.max_field_size) : undefined) ??
        (checkText(value) ? undefined : errors.invalidText(name));
      if (fault) return stop(fault);
      found.push({ kind: 'text', name, value });
    });

    // busboy makes a file of a part with a filename or with Content-Type application/octet-stream.
    parser.on('file', (name, stream, info) => {
      stream.on('error', () => undefined); // reported through the parser
      stream.resume();
      if (settled) return;
      const filename = info.filename === '' ? undefined : info.filename;
      const fault = admit(name ?? '', true, filename);
      if (fault) return stop(fault);
      const chunks: Buffer[] = [];
      const part = { kind: 'file' as const, name, filename: filename as string, data: Buffer.alloc(0) };
      found.push(part);
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      // Emitted while the parser reads the part, before any later part: faults stay in form order.
      stream.on('limit', () => stop(errors.partTooLarge(name, limits.max_file_size)));
      stream.on('end', () => {
        part.data = Buffer.concat(chunks);
      });
    });

    const tooMany = () => stop(errors.formTooLarge(`more than ${limits.max_parts} parts`));
    parser.on('partsLimit', tooMany);
    parser.on('filesLimit', tooMany);
    parser.on('fieldsLimit', tooMany);
    parser.on('error', (err) => stop(errors.malformedForm(reasonOf(err))));
    parser.on('finish', () => {
      if (settled) return;
      settled = true;
      req.signal.removeEventListener('abort', onAbort);
      resolve(found);
    });
    source.on('error', (err) => stop(err));
    source.pipe(parser);
  });
}

const REFUSED = /[\u0000\uFFFD]|\p{Cs}/u;

/**
 * True for text that came from valid UTF-8 without NUL. busboy has already decoded it, turning every
 * invalid byte sequence into U+FFFD, so a replacement character is refused as a sign of one.
 */
function checkText(text: string): boolean {
  return !REFUSED.test(text);
}

/** busboy's own messages are fixed texts ("Unexpected end of form"); keep them short and lower-case. */
function reasonOf(err: unknown): string {
  const message = err instanceof Error ? err.message : 'unreadable form';
  return message
    .replace(/^Multipart: /, '')
    .toLowerCase()
    .slice(0, 80);
}
