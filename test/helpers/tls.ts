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
import { Agent as HttpsAgent, request as httpsRequestRaw } from 'node:https';
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
  /** `server` or `client` key usage (default server). */
  usage?: 'server' | 'client';
}

export interface Ca extends Pair {
  readonly name: string;
  /** Issues a certificate signed by this CA; the files are named `<name>.pem` and `<name>.key`. */
  issue(name: string, options: IssueOptions): Pair;
  /** Revokes `pair` and writes the CA's CRL; returns its path. */
  revoke(pair: Pair): string;
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
        o.startsInDays !== undefined
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
    return {
      name,
      cert,
      key,
      issue,
      revoke(pair) {
        const cnf = path.join(dir, 'ca.cnf');
        openssl(['ca', '-config', cnf, '-cert', cert, '-keyfile', key, '-revoke', pair.cert], dir);
        const crl = path.join(dir, 'crl.pem');
        openssl(['ca', '-config', cnf, '-cert', cert, '-keyfile', key, '-gencrl', '-out', crl], dir);
        return crl;
      },
    };
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
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
