/**
 * A throw-away PKI made with `openssl` at run time (nothing is committed): a CA, server and client
 * certificates signed by it, expired ones, and other CAs. Files go to a temporary folder.
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { Agent as HttpsAgent, request as httpsRequestRaw } from 'node:https';
import { constants as cryptoConstants } from 'node:crypto';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface Pair {
  readonly cert: string;
  readonly key: string;
}

export interface IssueOptions {
  /** The subject's common name. */
  cn: string;
  /** subjectAltName entries (`DNS:localhost`, `IP:127.0.0.1`, `URI:spiffe://…`, `email:…`). */
  san?: string[];
  /** Valid from yesterday for this many days (default 30); negative: expired that many days ago. */
  days?: number;
  /** Valid only from this many days from now (a certificate not yet valid). */
  startsInDays?: number;
  /** Valid from yesterday until this many seconds from now (a certificate about to expire). */
  expiresInSeconds?: number;
  /** `server` or `client` key usage (default server). */
  usage?: 'server' | 'client';
}

export interface Ca extends Pair {
  readonly name: string;
  /** Issues a certificate signed by this CA; the files are named `<name>.pem` and `<name>.key`. */
  issue(name: string, options: IssueOptions): Pair;
  /** Revokes `pair` and writes the CA's CRL; returns its path. */
  revoke(pair: Pair): string;
  /** Writes the CA's CRL as it stands (every certificate revoked so far) to a new file; returns its path. */
  crl(): string;
}

const openssl = (args: string[], cwd: string) =>
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });

/** `YYYYMMDDHHMMSSZ` for `ms` (what `openssl ca` takes). */
const stamp = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/[-:T]/g, '')
    .replace(/\.\d+Z$/, 'Z')
    .slice(2);

const DAY = 86_400_000;

/** A folder of generated keys and certificates; `close()` removes it. */
export class Pki {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'gateway-pki-'));

  /** A new self-signed CA named `name`. */
  ca(name: string): Ca {
    const dir = path.join(this.dir, `ca-${name}`);
    mkdirSync(path.join(dir, 'new'), { recursive: true });
    writeFileSync(path.join(dir, 'index.txt'), '');
    writeFileSync(path.join(dir, 'index.txt.attr'), 'unique_subject = no\n');
    writeFileSync(path.join(dir, 'serial'), '1000\n');
    writeFileSync(path.join(dir, 'crlnumber'), '1000\n');
    writeFileSync(
      path.join(dir, 'ca.cnf'),
      `[ca]\ndefault_ca = d\n[d]\ndir = ${dir}\ndatabase = ${dir}/index.txt\nnew_certs_dir = ${dir}/new\n` +
        `serial = ${dir}/serial\ncrlnumber = ${dir}/crlnumber\ndefault_md = sha256\ndefault_crl_days = 30\n` +
        `policy = p\ncopy_extensions = none\n[p]\ncommonName = supplied\n`,
    );
    const cert = path.join(dir, 'ca.pem');
    const key = path.join(dir, 'ca.key');
    openssl(
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '60',
        '-subj',
        `/CN=${name}`,
      ],
      dir,
    );
    const issue = (file: string, o: IssueOptions): Pair => {
      const out = path.join(this.dir, file);
      const pair = { cert: `${out}.pem`, key: `${out}.key` };
      const csr = `${out}.csr`;
      openssl(
        [
          'req',
          '-new',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          pair.key,
          '-out',
          csr,
          '-subj',
          `/CN=${o.cn}`,
        ],
        dir,
      );
      const ext = `${out}.ext`;
      const usage = o.usage === 'client' ? 'clientAuth' : 'serverAuth';
      writeFileSync(
        ext,
        `basicConstraints = CA:FALSE\nextendedKeyUsage = ${usage}\n` +
          (o.san && o.san.length > 0 ? `subjectAltName = ${o.san.join(',')}\n` : ''),
      );
      const days = o.days ?? 30;
      const now = Date.now();
      const [from, to] =
        o.expiresInSeconds !== undefined
          ? [now - DAY, now + o.expiresInSeconds * 1000]
          : o.startsInDays !== undefined
            ? [now + o.startsInDays * DAY, now + (o.startsInDays + days) * DAY]
            : days >= 0
              ? [now - DAY, now + days * DAY]
              : [now + (days - 2) * DAY, now + days * DAY];
      openssl(
        [
          'ca',
          '-batch',
          '-notext',
          '-config',
          path.join(dir, 'ca.cnf'),
          '-cert',
          cert,
          '-keyfile',
          key,
          '-extfile',
          ext,
          '-startdate',
          stamp(from),
          '-enddate',
          stamp(to),
          '-in',
          csr,
          '-out',
          pair.cert,
        ],
        dir,
      );
      return pair;
    };
    const cnf = path.join(dir, 'ca.cnf');
    let crls = 0;
    const gencrl = (out: string) => {
      openssl(['ca', '-config', cnf, '-cert', cert, '-keyfile', key, '-gencrl', '-out', out], dir);
      return out;
    };
    return {
      name,
      cert,
      key,
      issue,
      revoke(pair) {
        openssl(['ca', '-config', cnf, '-cert', cert, '-keyfile', key, '-revoke', pair.cert], dir);
        return gencrl(path.join(dir, 'crl.pem'));
      },
      crl: () => gencrl(path.join(dir, `crl-${++crls}.pem`)),
    };
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Replaces `target` with a copy of `source` in one step (a rename), as an operator's tooling would. */
export function replaceFile(target: string, source: string): void {
  copyFileSync(source, `${target}.new`);
  renameSync(`${target}.new`, target);
}

/**
 * A gateway's client trust files that a test may change: copies of `ca`'s certificate and of its CRL
 * as it stands, in a folder of their own.
 */
export function trustFiles(pki: Pki, ca: Ca): { ca: string; crl: string } {
  const dir = mkdtempSync(path.join(pki.dir, 'trust-'));
  const files = { ca: path.join(dir, 'ca.pem'), crl: path.join(dir, 'crl.pem') };
  copyFileSync(ca.cert, files.ca);
  copyFileSync(ca.crl(), files.crl);
  return files;
}

/** What a TLS client presents and trusts. */
export interface ClientTls {
  ca?: string;
  cert?: string;
  key?: string;
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
  session?: Buffer;
}

const tlsOptions = (o: ClientTls) => ({
  ...(o.ca && { ca: readFileSync(o.ca) }),
  ...(o.cert && { cert: readFileSync(o.cert) }),
  ...(o.key && { key: readFileSync(o.key) }),
  ...(o.minVersion && { minVersion: o.minVersion }),
  ...(o.maxVersion && { maxVersion: o.maxVersion }),
  servername: 'localhost',
});

/** The common name of the certificate a new connection to `port` gets (rejects when the handshake fails). */
export function servedCertificate(port: number, o: ClientTls): Promise<{ cn: string; serial: string }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ...tlsOptions(o) }, () => {
      const cert = socket.getPeerCertificate();
      resolve({ cn: String(cert.subject.CN), serial: cert.serialNumber });
      socket.end();
    });
    socket.on('error', reject);
  });
}

export interface HttpsResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json(): any;
  /** The serial number of the certificate the connection was made with. */
  serial: string;
}

/** One HTTPS request to `127.0.0.1:port` (a new connection unless `agent` keeps one alive). */
export function httpsRequest(
  port: number,
  o: ClientTls & {
    method?: string;
    target: string;
    headers?: Record<string, string>;
    agent?: HttpsAgent;
  },
): Promise<HttpsResponse> {
  return new Promise((resolve, reject) => {
    const req = httpsRequestRaw(
      {
        host: '127.0.0.1',
        port,
        method: o.method ?? 'GET',
        path: o.target,
        headers: o.headers,
        ...(o.agent ? { agent: o.agent } : { agent: false, ...tlsOptions(o) }),
      },
      (res) => {
        // Read now: a kept-alive socket goes back to its agent once the answer ends.
        const serial = (res.socket as TLSSocket).getPeerCertificate().serialNumber;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('error', reject);
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            json: () => JSON.parse(body),
            serial,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A keep-alive agent with one connection, for checking that an open connection survives a reload. */
export function keepAliveAgent(o: ClientTls): HttpsAgent {
  return new HttpsAgent({ keepAlive: true, maxSockets: 1, ...tlsOptions(o) });
}

/**
 * A folder laid out as Kubernetes mounts a TLS Secret: `tls.crt` and `tls.key` are links through
 * `..data`, itself a link to a versioned folder; `swap` points `..data` at a new version atomically.
 */
export class SecretMount {
  private version = 0;
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }
  get cert(): string {
    return path.join(this.dir, 'tls.crt');
  }
  get key(): string {
    return path.join(this.dir, 'tls.key');
  }
  /** Makes `files` (name → source path) the mounted content. */
  swap(files: Record<string, string>): void {
    const version = path.join(this.dir, `..v${++this.version}`);
    mkdirSync(version);
    for (const [name, source] of Object.entries(files)) copyFileSync(source, path.join(version, name));
    const tmp = path.join(this.dir, '..data_tmp');
    symlinkSync(path.basename(version), tmp);
    renameSync(tmp, path.join(this.dir, '..data'));
    for (const name of Object.keys(files)) {
      const link = path.join(this.dir, name);
      if (!existsSync(link)) symlinkSync(path.join('..data', name), link);
    }
  }
  /** Mounts `pair` as `tls.crt` and `tls.key`. */
  mount(pair: Pair): void {
    this.swap({ 'tls.crt': pair.cert, 'tls.key': pair.key });
  }
}

/** What one request on a connection of its own answered, and how its TLS session was made. */
export interface SessionAnswer {
  /** The HTTP status; 0 when the gateway ended the connection without an answer (a refused handshake). */
  status: number;
  /** Whether the connection resumed the session offered. */
  reused: boolean;
  /** The last session the server handed out on this connection (a ticket, or a session id). */
  session: Buffer | undefined;
  /** The answer's head and body as sent. */
  text: string;
}

/**
 * One GET on a new TLS connection, resuming `o.session` when given; the answer is read to the
 * connection's end (`Connection: close`), so that TLS 1.3 tickets sent after the handshake arrive.
 * `noTicket` asks for no ticket (a TLS 1.2 client that can only offer a session id); `over` is a TCP
 * connection already open to `port` to shake hands on.
 */
export function sessionRequest(
  port: number,
  o: ClientTls & { target: string; noTicket?: boolean; over?: Socket },
): Promise<SessionAnswer> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      ...(o.over ? { socket: o.over } : { host: '127.0.0.1', port }),
      ...tlsOptions(o),
      ...(o.session && { session: o.session }),
      ...(o.noTicket && { secureOptions: cryptoConstants.SSL_OP_NO_TICKET }),
    });
    let session: Buffer | undefined;
    let reused = false;
    let connected = false;
    const chunks: Buffer[] = [];
    socket.on('session', (s: Buffer) => (session = s));
    socket.on('secureConnect', () => {
      connected = true;
      reused = socket.isSessionReused();
      socket.write(`GET ${o.target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (err) => {
      // A refused client certificate shows after the handshake in TLS 1.3, as an alert or a reset.
      if (!connected) reject(err);
    });
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      if (!connected) return;
      resolve({ status, reused, session, text });
    });
  });
}

/** One answer read off a kept-alive connection: a 1xx head alone, or a head and its body. */
export interface RawAnswer {
  /** 0 when the connection closed before an answer. */
  status: number;
  head: string;
  body: string;
}

/**
 * A kept-alive TLS connection driven by hand: requests are written as raw bytes, answers read one by
 * one (bodies by their `Content-Length`); once the gateway closes it, the next answer has status 0.
 */
export class TlsConnection {
  readonly socket: TLSSocket;
  /** The last session the gateway handed out on this connection. */
  session: Buffer | undefined;
  #text = '';
  #ended = false;
  #wake: (() => void) | undefined;

  private constructor(socket: TLSSocket, session: Buffer | undefined) {
    this.socket = socket;
    this.session = session;
    socket.on('session', (s: Buffer) => (this.session = s));
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => {
      this.#text += c;
      this.#wake?.();
    });
    // A reset by the gateway is a close like any other here.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.#ended = true;
      this.#wake?.();
    });
  }

  /** Opens a connection to `127.0.0.1:port` (resuming `o.session` when given). */
  static open(port: number, o: ClientTls): Promise<TlsConnection> {
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port,
        ...tlsOptions(o),
        ...(o.session && { session: o.session }),
      });
      // A TLS 1.2 ticket comes during the handshake.
      let session: Buffer | undefined;
      const early = (s: Buffer) => (session = s);
      socket.on('session', early);
      socket.once('secureConnect', () => {
        socket.off('error', reject);
        socket.off('session', early);
        resolve(new TlsConnection(socket, session));
      });
      socket.once('error', reject);
    });
  }

  write(bytes: string): void {
    this.socket.write(bytes);
  }

  /** A GET of `target` on this connection, and its answer. */
  get(target: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    this.write(`GET ${target} HTTP/1.1\r\nHost: localhost\r\n${lines.join('')}\r\n`);
    return this.next();
  }

  /** The next answer on the connection (status 0 if it closes first). */
  async next(): Promise<RawAnswer> {
    for (;;) {
      const end = this.#text.indexOf('\r\n\r\n');
      if (end !== -1) {
        const head = this.#text.slice(0, end);
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
        const length = status < 200 ? 0 : Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (this.#text.length >= end + 4 + length) {
          const body = this.#text.slice(end + 4, end + 4 + length);
          this.#text = this.#text.slice(end + 4 + length);
          return { status, head, body };
        }
      }
      if (this.#ended) return { status: 0, head: '', body: '' };
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  close(): void {
    this.socket.destroy();
  }
}
