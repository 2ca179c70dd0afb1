/**
 * The test harness: the real gateway in process on port 0 with a fresh copy of the sample data, and
 * raw HTTP helpers that send the request target exactly as given.
 */
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { type App, createApp } from '../../src/app.js';
import { signatureOf as computeSignature } from '../../src/signing/chain.js';
import { formatRequestDate as rfc3339 } from '../../src/signing/request-date.js';
import { loadConfigFile } from '../../src/config/load.js';

export interface Tok {
  id: string;
  key: string;
  subject: string;
  permissions: string[];
}

export const TOKENS: { admin: Tok; reader: Tok; writer: Tok; none: Tok } = {
  admin: {
    id: '5f0c3b8e-1d2a-4c7e-9b1f-0a1b2c3d4e5f',
    key: 'admin-key',
    subject: 'admin',
    permissions: ['*'],
  },
  reader: {
    id: '6a1d4c9f-2e3b-4d8f-8c2a-1b2c3d4e5f60',
    key: 'reader-key',
    subject: 'reader',
    permissions: ['collectors:read', 'asset_group_tags:read'],
  },
  writer: {
    id: '7b2e5d0a-3f4c-4e9a-9d3b-2c3d4e5f6071',
    key: 'writer-key',
    subject: 'writer',
    permissions: ['sso_providers:write'],
  },
  none: { id: '8c3f6e1b-4a5d-4fab-8e4c-3d4e5f607182', key: 'none-key', subject: 'nobody', permissions: [] },
};

/** Standard base64 of the HS256 secret the test gateway accepts. */
export const JWT_SECRET = Buffer.from('test-jwt-secret-of-32-bytes-long').toString('base64');

/** The repository: the nearest folder above this file holding package.json (from test/ or dist-test/). */
export const ROOT = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return dir;
})();

export interface TestGateway {
  url: string;
  adminUrl: string;
  port: number;
  adminPort: number;
  dataDir: string;
  /** The configuration file the gateway was started from. */
  configFile: string;
  logs: Array<Record<string, unknown>>;
  app: App;
  close(): Promise<void>;
}

/** The base configuration object (before overrides), with data paths relative to the data dir. */
export function baseConfig(): Record<string, unknown> {
  return {
    server: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    logging: { level: 'info' },
    auth: {
      signature: { tokens: Object.values(TOKENS) },
      jwt: { hs256_secret: JWT_SECRET },
    },
    backends: {
      collectors: { type: 'local', path: 'collectors' },
      sso_providers: { type: 'local', path: 'sso-providers.json' },
      asset_group_tags: { type: 'local', path: 'asset-group-tags.json' },
    },
  };
}

/** Deep-merges plain objects; arrays and scalars in `over` replace. */
export function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? merge(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

/** A fresh temporary copy of the sample data in `config/`. */
export function copySampleData(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'gateway-test-'));
  for (const name of ['collectors', 'sso-providers.json', 'asset-group-tags.json']) {
    cpSync(path.join(ROOT, 'config', name), path.join(dir, name), { recursive: true });
  }
  return dir;
}

/** Starts the real gateway in process on port 0; `overrides` is deep-merged into the configuration. */
export async function startGateway(overrides: Record<string, unknown> = {}): Promise<TestGateway> {
  const dataDir = copySampleData();
  const configFile = path.join(dataDir, 'gateway.yaml');
  writeFileSync(configFile, stringify(merge(baseConfig(), overrides)));
  const logs: Array<Record<string, unknown>> = [];
  const app = await createApp(loadConfigFile(configFile), {
    logDestination: {
      write(line: string) {
        for (const l of line.split('\n')) if (l) logs.push(JSON.parse(l));
      },
    },
  });
  const { port, adminPort } = await app.listen();
  return {
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    port,
    adminPort,
    dataDir,
    configFile,
    logs,
    app,
    async close() {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A gateway's `/readyz`: its status and the state of each check. */
export async function readyz(gw: { adminUrl: string }) {
  const res = await fetch(`${gw.adminUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as { checks: Record<string, string> } };
}

/** `RequestDate` for now: RFC 3339, UTC, second precision. */
export function nowDate(): string {
  return rfc3339(Date.now());
}

/** The three signed-request headers for a request. */
export function signed(opts: {
  method: string;
  target: string;
  body?: Buffer | string;
  token?: Tok;
  date?: string;
}): Record<string, string> {
  const token = opts.token ?? TOKENS.admin;
  const date = opts.date ?? nowDate();
  const body = opts.body === undefined ? undefined : Buffer.from(opts.body);
  return {
    Authorization: `bhesignature ${token.id}`,
    RequestDate: date,
    Signature: computeSignature(token.key, opts.method, opts.target, date, body),
  };
}

export interface TestResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json(): any;
}

/** One HTTP request over node:http; the target goes on the request line exactly as given. */
export function request(
  gw: { port: number },
  opts: {
    method: string;
    target: string;
    headers?: Record<string, string | string[]>;
    body?: Buffer | string;
  },
): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: gw.port,
        method: opts.method,
        path: opts.target,
        headers: opts.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            json: () => JSON.parse(body.toString()),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** `request()` with signed headers for `token` (default admin); `headers` are added on top. */
export function call(
  gw: { port: number },
  opts: {
    method: string;
    target: string;
    body?: Buffer | string;
    token?: Tok;
    headers?: Record<string, string | string[]>;
  },
): Promise<TestResponse> {
  const auth = signed({ method: opts.method, target: opts.target, body: opts.body, token: opts.token });
  return request(gw, {
    method: opts.method,
    target: opts.target,
    body: opts.body,
    headers: { ...auth, ...opts.headers },
  });
}

/** A signed PATCH whose body is still arriving: `finish()` sends the rest; `answered` is its status. */
export interface PatchInFlight {
  answered: Promise<number>;
  finish(): void;
  /** Gives the request up (closes its connection). */
  cancel(): void;
}

const DRAINED_FORM = '--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nDrained Name\r\n--b--\r\n';

/**
 * Starts a signed multipart PATCH of SSO provider 1 (by default, a new name) and resolves once its
 * first `sent` bytes are written, the rest held back until `finish()`: a request a drain or a stop
 * finds in flight.
 */
export async function patchInFlight(
  gw: { port: number },
  form: string | Buffer = DRAINED_FORM,
  sent = 10,
): Promise<PatchInFlight> {
  const target = '/api/v2/sso-providers/1';
  const req = httpRequest({
    host: '127.0.0.1',
    port: gw.port,
    method: 'PATCH',
    path: target,
    headers: {
      ...signed({ method: 'PATCH', target, body: form }),
      'Content-Type': 'multipart/form-data; boundary=b',
      'Content-Length': Buffer.byteLength(form),
    },
  });
  const answered = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  // A caller that only cuts the request never awaits its answer.
  answered.catch(() => undefined);
  await new Promise<void>((resolve) => req.write(form.slice(0, sent), () => resolve()));
  return { answered, finish: () => req.end(form.slice(sent)), cancel: () => req.destroy() };
}

/**
 * Sends raw bytes on a new connection and resolves with everything the server answered: once it
 * closes the connection, once the answer is complete by its `Content-Length`, or else once it has
 * been silent for `waitMs` after answering (a kept-alive connection). Waiting for the first byte
 * is bounded by the test's timeout only, so a slow machine never cuts an answer short.
 */
export function rawRequest(gw: { port: number }, bytes: string | Buffer, waitMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(gw.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    socket.on('data', (c) => {
      chunks.push(c);
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)\r\n/i.exec(text.slice(0, end + 2));
      if (end !== -1 && length && text.length - end - 4 >= Number(length[1])) {
        socket.destroy();
        return;
      }
      clearTimeout(timer);
      timer = setTimeout(() => socket.destroy(), waitMs);
    });
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.write(bytes);
  });
}

/** A multipart/form-data body. */
export function multipart(
  parts: Array<{ name: string; value: string | Buffer; filename?: string; contentType?: string }>,
): {
  body: Buffer;
  contentType: string;
} {
  const boundary = `----gatewaytest${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.from(p.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Parses an error envelope and checks nothing; returns status, context and message for assertions. */
export function errorOf(res: TestResponse): { status: number; context: string; message: string } {
  const body = res.json();
  return { status: body.http_status, context: body.errors?.[0]?.context, message: body.errors?.[0]?.message };
}
