import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { GatewayError } from '../../src/errors.js';
import type { HeldBody } from '../../src/http/body.js';
import { type FormRequest, readForm } from '../../src/validate/form.js';

const BOUNDARY = 'XyZzY-boundary';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;
const LIMITS = { max_parts: 4, max_field_size: 16, max_file_size: 32 };
const SPEC = { name: 'text', metadata: 'file', flag: 'text' } as const;

/** One part: its raw header lines and body bytes. */
function part(headers: string | Buffer, body: string | Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\n`),
    Buffer.from(headers),
    Buffer.from('\r\n\r\n'),
    Buffer.from(body),
    Buffer.from('\r\n'),
  ]);
}
const text = (name: string, value: string | Buffer) =>
  part(`Content-Disposition: form-data; name="${name}"`, value);
const file = (name: string, filename: string, data: string | Buffer) =>
  part(
    `Content-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/xml`,
    data,
  );
const form = (...parts: Buffer[]) => Buffer.concat([...parts, Buffer.from(`--${BOUNDARY}--\r\n`)]);

function held(bytes: Buffer, chunk = bytes.length || 1): HeldBody {
  return {
    size: bytes.length,
    stream: () =>
      Readable.from(
        Array.from({ length: Math.ceil(bytes.length / chunk) }, (_, i) =>
          bytes.subarray(i * chunk, (i + 1) * chunk),
        ),
      ),
    dispose: async () => undefined,
  };
}

function read(body: Buffer | undefined, over: Partial<FormRequest> = {}) {
  return readForm({
    contentType: CONTENT_TYPE,
    body: body && held(body),
    parts: SPEC,
    limits: LIMITS,
    signal: new AbortController().signal,
    ...over,
  });
}

async function refused(t: Test, promise: Promise<unknown>, status: number, context: string, message: string) {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.type(err, GatewayError, 'a catalogue error');
  const g = err as GatewayError;
  t.same({ status: g.status, context: g.context, message: g.message }, { status, context, message });
}

t.test('text and file parts come back in form order', async (t) => {
  const parts = await read(form(file('metadata', 'idp.xml', '<x/>'), text('name', ' Okta é ')));
  t.same(parts, [
    { kind: 'file', name: 'metadata', filename: 'idp.xml', data: Buffer.from('<x/>') },
    { kind: 'text', name: 'name', value: ' Okta é ' },
  ]);
});

t.test('a form delivered one byte at a time reads the same', async (t) => {
  const body = form(text('name', 'abc'), file('metadata', 'm.xml', '<a>b</a>'));
  const parts = await readForm({
    contentType: CONTENT_TYPE,
    body: held(body, 1),
    parts: SPEC,
    limits: LIMITS,
    signal: new AbortController().signal,
  });
  t.same(
    parts.map((p) => p.name),
    ['name', 'metadata'],
  );
  t.same(parts[1]?.kind === 'file' && parts[1].data.toString(), '<a>b</a>');
});

t.test('a form with no parts is an empty list', async (t) => {
  t.same(await read(form()), []);
});

t.test('Content-Type must be multipart/form-data with a boundary', async (t) => {
  const message = 'Content-Type must be multipart/form-data with a boundary';
  for (const contentType of [
    undefined,
    'application/json',
    'multipart/form-data',
    'multipart/mixed; boundary=x',
    'application/x-www-form-urlencoded',
  ]) {
    await refused(t, read(form(), { contentType }), 400, 'header:Content-Type', message);
  }
});

t.test('an empty body is refused', async (t) => {
  await refused(t, read(Buffer.alloc(0)), 400, 'body', 'request body is empty');
  await refused(t, read(undefined), 400, 'body', 'request body is empty');
});

t.test('an unknown part is refused by name, with control characters replaced', async (t) => {
  await refused(t, read(form(text('other', 'x'))), 400, 'form:other', 'unexpected form part "other"');
  await refused(t, read(form(text('a\u0085b', 'x'))), 400, 'form:a?b', 'unexpected form part "a?b"');
  const long = 'n'.repeat(100);
  const shown = `${'n'.repeat(64)}…`;
  await refused(t, read(form(text(long, 'x'))), 400, `form:${shown}`, `unexpected form part "${shown}"`);
  await refused(
    t,
    read(form(part('Content-Disposition: form-data', 'x'))),
    400,
    'form:',
    'unexpected form part ""',
  );
});

t.test('a part sent twice is refused', async (t) => {
  await refused(
    t,
    read(form(text('name', 'a'), text('name', 'b'))),
    400,
    'form:name',
    'expected only one "name" parameter',
  );
  await refused(
    t,
    read(form(file('metadata', 'a', 'x'), file('metadata', 'b', 'y'))),
    400,
    'form:metadata',
    'expected only one "metadata" parameter',
  );
});

t.test('a file part needs a filename', async (t) => {
  const message = '"metadata" parameter must be a file with a filename';
  await refused(t, read(form(text('metadata', '<x/>'))), 400, 'form:metadata', message);
  await refused(t, read(form(file('metadata', '', '<x/>'))), 400, 'form:metadata', message);
  const octet = part(
    'Content-Disposition: form-data; name="metadata"\r\nContent-Type: application/octet-stream',
    '<x/>',
  );
  await refused(t, read(form(octet)), 400, 'form:metadata', message);
});

t.test('a text part must not be a file', async (t) => {
  const message = '"name" parameter must be a text field, not a file';
  await refused(t, read(form(file('name', 'n.txt', 'x'))), 400, 'form:name', message);
  const octet = part(
    'Content-Disposition: form-data; name="name"\r\nContent-Type: application/octet-stream',
    'x',
  );
  await refused(t, read(form(octet)), 400, 'form:name', message);
});

t.test('text and filenames must be UTF-8 without NUL', async (t) => {
  const message = (n: string) => `"${n}" parameter must be valid UTF-8 text without NUL characters`;
  await refused(
    t,
    read(form(text('name', Buffer.from([0x61, 0xc3, 0x28])))),
    400,
    'form:name',
    message('name'),
  );
  await refused(
    t,
    read(form(text('name', Buffer.from([0x61, 0xed, 0xa0, 0x80])))),
    400,
    'form:name',
    message('name'),
  );
  await refused(t, read(form(text('name', 'a\u0000b'))), 400, 'form:name', message('name'));
  const badName = part(
    Buffer.concat([
      Buffer.from('Content-Disposition: form-data; name="metadata"; filename="a'),
      Buffer.from([0xff]),
      Buffer.from('.xml"'),
    ]),
    'x',
  );
  await refused(t, read(form(badName)), 400, 'form:metadata', message('metadata'));
  const nul = part(`Content-Disposition: form-data; name="metadata"; filename*=utf-8''a%00.xml`, 'x');
  await refused(t, read(form(nul)), 400, 'form:metadata', message('metadata'));
});

t.test('a declared charset is honoured', async (t) => {
  const latin1 = part(
    'Content-Disposition: form-data; name="name"\r\nContent-Type: text/plain; charset=iso-8859-1',
    Buffer.from([0x43, 0x61, 0x66, 0xe9]),
  );
  const utf8 = part(
    'Content-Disposition: form-data; name="flag"\r\nContent-Type: text/plain; charset=utf-8',
    'Café',
  );
  const star = part(`Content-Disposition: form-data; name="metadata"; filename*=utf-8''caf%C3%A9.xml`, 'x');
  const parts = await read(form(latin1, utf8, star));
  t.same(
    parts.map((p) => (p.kind === 'text' ? p.value : p.filename)),
    ['Café', 'Café', 'café.xml'],
  );
});

t.test('a field up to max_field_size is read, one byte more is 413', async (t) => {
  const parts = await read(form(text('name', 'x'.repeat(16))));
  t.equal(parts[0]?.kind === 'text' && parts[0].value.length, 16);
  await refused(
    t,
    read(form(text('name', 'x'.repeat(17)))),
    413,
    'form:name',
    'form part "name" is larger than the limit of 16 bytes',
  );
});

t.test('a file up to max_file_size is read, one byte more is 413', async (t) => {
  const parts = await read(form(file('metadata', 'm.xml', 'x'.repeat(32))));
  t.equal(parts[0]?.kind === 'file' && parts[0].data.length, 32);
  await refused(
    t,
    read(form(file('metadata', 'm.xml', 'x'.repeat(33)))),
    413,
    'form:metadata',
    'form part "metadata" is larger than the limit of 32 bytes',
  );
});

t.test('max_parts parts are read, one more is 413', async (t) => {
  const limits = { ...LIMITS, max_parts: 2 };
  t.equal((await read(form(text('name', 'a'), text('flag', 'b')), { limits })).length, 2);
  const three = form(text('name', 'a'), text('flag', 'b'), file('metadata', 'm', 'c'));
  await refused(
    t,
    read(three, { limits }),
    413,
    'body',
    'multipart form is over the limit: more than 2 parts',
  );
  // the part that is one too many is still read first: its own fault comes first in form order
  const unknown = form(text('name', 'a'), text('flag', 'b'), text('other', 'c'));
  await refused(t, read(unknown, { limits }), 400, 'form:other', 'unexpected form part "other"');
});

t.test('broken framing is a malformed form', async (t) => {
  await refused(t, read(text('name', 'a')), 400, 'body', 'malformed multipart form: unexpected end of form');
  await refused(
    t,
    read(Buffer.from('not a form at all')),
    400,
    'body',
    'malformed multipart form: unexpected end of form',
  );
  const badHeader = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nno colon here\r\n\r\nx\r\n`),
    Buffer.from(`--${BOUNDARY}--\r\n`),
  ]);
  await refused(t, read(badHeader), 400, 'body', 'malformed multipart form: malformed part header');
});

t.test('the first faulty part in form order is the one reported', async (t) => {
  await refused(
    t,
    read(form(text('other', 'x'), text('name', 'x'.repeat(40)))),
    400,
    'form:other',
    'unexpected form part "other"',
  );
  await refused(
    t,
    read(form(text('name', 'x'.repeat(40)), text('other', 'x'))),
    413,
    'form:name',
    'form part "name" is larger than the limit of 16 bytes',
  );
  await refused(
    t,
    read(form(file('metadata', 'm', 'x'.repeat(40)), text('name', 'a'), text('name', 'b'))),
    413,
    'form:metadata',
    'form part "metadata" is larger than the limit of 32 bytes',
  );
  // a file part is judged by its headers, before the form's end is known to be broken
  await refused(t, read(file('other', 'o.txt', 'x')), 400, 'form:other', 'unexpected form part "other"');
});

t.test('an aborted deadline stops reading with its reason', async (t) => {
  const controller = new AbortController();
  const reason = new Error('deadline');
  controller.abort(reason);
  t.equal(await read(form(text('name', 'a')), { signal: controller.signal }).catch((e) => e), reason);

  const late = new AbortController();
  let reading!: () => void;
  const consumed = new Promise<void>((resolve) => (reading = resolve));
  const slow = new Readable({ read: () => reading() });
  slow.push(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="name"\r\n\r\nabc`);
  const pending = readForm({
    contentType: CONTENT_TYPE,
    body: { size: 100, stream: () => slow, dispose: async () => undefined },
    parts: SPEC,
    limits: LIMITS,
    signal: late.signal,
  });
  await consumed; // the form is being read
  late.abort(reason);
  t.equal(await pending.catch((e) => e), reason);
  await new Promise((resolve) => setImmediate(resolve));
  t.ok(slow.destroyed, 'the body stream is released');
});
