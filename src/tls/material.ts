/**
 * Reading TLS files into what Node's TLS takes: a certificate chain and its key (checked to match and
 * to be in date), the CA and CRL of client certificates, an upstream's CA and client certificate.
 * Every failure names the configuration key of the file at fault and never any of its content.
 */
import { createHash, createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { AdminTlsConfig, ServerTlsConfig, UpstreamTlsConfig } from '../config/tls.js';

/** A TLS file that does not load; the message names its key path (`server.tls.cert`). */
export class TlsLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsLoadError';
  }
}

/** A listener's loaded certificate: the secure context's options and facts the gateway reports. */
export interface ListenerMaterial {
  readonly options: SecureContextOptions;
  /** When the certificate expires (ms since the epoch). */
  readonly notAfter: number;
  /**
   * The client trust, as digests of the CA's and the CRL's bytes (`<ca>:<crl>`; '' without client
   * certificates): the session ticket keys derive from it, so a session verified against other trust
   * never resumes, and open connections verified against other trust are retired.
   */
  readonly trustDigest: string;
}

/** An upstream's loaded TLS options (for undici's connector and an https.Agent alike). */
export interface UpstreamMaterial {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly servername?: string;
}

/** The bytes of the file at `file`, configured at `at`. */
function read(at: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new TlsLoadError(
      `${at}: file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
}

/**
 * Checks that `certPem` (a chain: the first certificate is the leaf) is a certificate in date whose
 * key is `keyPem`; returns its expiry (ms since the epoch).
 */
function checkPair(at: string, certPem: Buffer, keyPem: Buffer, now: number): number {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    throw new TlsLoadError(`${at}.cert: is not a PEM certificate`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    throw new TlsLoadError(`${at}.key: is not a PEM private key (or it is encrypted)`);
  }
  if (!cert.checkPrivateKey(key)) throw new TlsLoadError(`${at}.key: does not match ${at}.cert`);
  const notAfter = Date.parse(cert.validTo);
  if (notAfter <= now) {
    throw new TlsLoadError(`${at}.cert: the certificate expired at ${new Date(notAfter).toISOString()}`);
  }
  if (Date.parse(cert.validFrom) > now) {
    throw new TlsLoadError(
      `${at}.cert: the certificate is not valid before ${new Date(Date.parse(cert.validFrom)).toISOString()}`,
    );
  }
  return notAfter;
}

/** A CA file's bytes, checked to hold a PEM certificate (Node would ignore anything else silently). */
function readCa(at: string, file: string): Buffer {
  const pem = read(at, file);
  try {
    new X509Certificate(pem);
  } catch {
    throw new TlsLoadError(`${at}: is not a PEM certificate`);
  }
  return pem;
}

/** Builds a secure context once to catch what the checks above do not (a malformed CA or CRL). */
function tryContext(at: string, options: SecureContextOptions): void {
  try {
    createSecureContext(options);
  } catch (err) {
    // OpenSSL's reason (`no start line`, `bad base64 decode`) names no content.
    const reason = (err as { reason?: string }).reason ?? (err as NodeJS.ErrnoException).code ?? 'error';
    throw new TlsLoadError(`${at}: the files cannot be used together (${reason})`);
  }
}

/** Loads `server.tls` or `admin.tls` (named by `at`). Throws `TlsLoadError`. */
export function loadListener(
  config: ServerTlsConfig | AdminTlsConfig,
  at: string,
  now = Date.now(),
): ListenerMaterial {
  const cert = read(`${at}.cert`, config.cert);
  const key = read(`${at}.key`, config.key);
  const client = 'client_auth' in config && config.client_auth !== 'none' ? config : undefined;
  const ca = client?.client_ca === undefined ? undefined : readCa(`${at}.client_ca`, client.client_ca);
  const crl = client?.client_crl === undefined ? undefined : read(`${at}.client_crl`, client.client_crl);
  const notAfter = checkPair(at, cert, key, now);
  const options: SecureContextOptions = {
    cert,
    key,
    minVersion: config.min_version,
    ...(ca && { ca }),
    ...(crl && { crl }),
  };
  tryContext(at, options);
  return { options, notAfter, trustDigest: ca ? `${digest(ca)}:${crl ? digest(crl) : ''}` : '' };
}

const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Loads an upstream's `tls` block (named by `at`). Throws `TlsLoadError`. */
export function loadUpstream(config: UpstreamTlsConfig, at: string, now = Date.now()): UpstreamMaterial {
  const ca = config.ca === undefined ? undefined : readCa(`${at}.ca`, config.ca);
  const cert = config.cert === undefined ? undefined : read(`${at}.cert`, config.cert);
  const key = config.key === undefined ? undefined : read(`${at}.key`, config.key);
  if (cert && key) checkPair(at, cert, key, now);
  const material: UpstreamMaterial = {
    ...(ca && { ca }),
    ...(cert && { cert }),
    ...(key && { key }),
    ...(config.servername !== undefined && { servername: config.servername }),
  };
  tryContext(at, material);
  return material;
}
