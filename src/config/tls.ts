/**
 * The TLS keys of the configuration (contract §8 and §5's `<upstream>.tls`): the API and admin
 * listeners' certificates, client certificates as an authentication scheme, and the certificates an
 * upstream is reached with. Paths are taken relative to the configuration file's folder.
 */
import path from 'node:path';
import { z } from 'zod';
import { duration, leaf, str } from './leaves.js';
import { permission } from './permissions.js';

const minVersion = leaf(z.enum(['TLSv1.2', 'TLSv1.3'], { error: 'must be "TLSv1.2" or "TLSv1.3"' })).default(
  'TLSv1.2',
);

/** `admin.tls`: a certificate only (probes must still reach the admin listener). */
export const adminTlsSchema = z.strictObject({ cert: str(1), key: str(1), min_version: minVersion });

/** `server.tls`: the API listener's certificate, and the client certificates it asks for. */
export const serverTlsSchema = z
  .strictObject({
    cert: str(1),
    key: str(1),
    min_version: minVersion,
    client_auth: leaf(
      z.enum(['none', 'optional', 'require'], { error: 'must be "none", "optional" or "require"' }),
    ).default('none'),
    client_ca: str(1).optional(),
    client_crl: str(1).optional(),
    // How long a session ticket is accepted (and the lifetime it advertises); TLS 1.3 allows 7 days.
    session_timeout: duration(7 * 24 * 3_600_000, 1000).default(300_000),
  })
  .refine((t) => t.client_auth === 'none' || t.client_ca !== undefined, {
    message: 'is required when client_auth is "optional" or "require"',
    path: ['client_ca'],
  });

/** `<upstream>.tls`: a private CA to trust, a client certificate to present, the name to check. */
export const upstreamTlsSchema = z
  .strictObject({
    ca: str(1).optional(),
    cert: str(1).optional(),
    key: str(1).optional(),
    servername: str(1).optional(),
  })
  .refine((t) => (t.cert === undefined) === (t.key === undefined), {
    message: 'cert and key go together',
    path: ['key'],
  });

/** How an entry of `auth.client_certificates` names a certificate: exactly one of four fields. */
const match = z
  .strictObject({
    uri: str(1).optional(),
    dns: str(1).optional(),
    email: str(1).optional(),
    cn: str(1).optional(),
  })
  .refine((m) => Object.values(m).filter((v) => v !== undefined).length === 1, {
    message: 'must name exactly one of uri, dns, email, cn',
  });

/** `auth.client_certificates`: who a verified client certificate is. */
export const clientCertificatesSchema = z
  .array(z.strictObject({ match, subject: str(1), permissions: z.array(permission).default([]) }))
  .default([]);

export type ServerTlsConfig = z.output<typeof serverTlsSchema>;
export type AdminTlsConfig = z.output<typeof adminTlsSchema>;
export type UpstreamTlsConfig = z.output<typeof upstreamTlsSchema>;
export type ClientCertificateConfig = z.output<typeof clientCertificatesSchema>[number];

/** The file keys of each TLS block, in the order they are read. */
const FILE_KEYS = ['cert', 'key', 'ca', 'client_ca', 'client_crl'] as const;

/** A TLS block found in a configuration, with its key path (`server.tls`, `backends.collectors.tls`). */
interface TlsBlock {
  readonly at: string;
  readonly block: Record<string, unknown>;
}

/** Every TLS block of a validated configuration object. */
function blocksOf(config: Record<string, unknown>): TlsBlock[] {
  const out: TlsBlock[] = [];
  const add = (at: string, owner: unknown) => {
    const tls = (owner as { tls?: unknown } | undefined)?.tls;
    if (tls && typeof tls === 'object') out.push({ at: `${at}.tls`, block: tls as Record<string, unknown> });
  };
  add('server', config.server);
  add('admin', config.admin);
  for (const [name, backend] of Object.entries((config.backends ?? {}) as Record<string, unknown>)) {
    add(`backends.${name}`, backend);
  }
  add('passthrough', config.passthrough);
  add('rate_limits.store', (config.rate_limits as { store?: unknown } | undefined)?.store);
  return out;
}

/** Makes every TLS file path of `config` (validated, not yet frozen) absolute against `baseDir`. */
export function resolveTlsPaths(config: Record<string, unknown>, baseDir: string): void {
  for (const { block } of blocksOf(config)) {
    for (const key of FILE_KEYS) {
      if (typeof block[key] === 'string') block[key] = path.resolve(baseDir, block[key]);
    }
  }
}

/** Each TLS file of `config` by its key path (`server.tls.cert`); unresolved references are left out. */
export function tlsFiles(config: Record<string, unknown>): Array<{ at: string; file: string }> {
  const out: Array<{ at: string; file: string }> = [];
  for (const { at, block } of blocksOf(config)) {
    for (const key of FILE_KEYS) {
      const file = block[key];
      if (typeof file === 'string') out.push({ at: `${at}.${key}`, file });
    }
  }
  return out;
}

/** What a valid TLS configuration still does that an operator should know (said by check-config). */
export function tlsWarnings(config: {
  server: { tls?: ServerTlsConfig | undefined };
  auth: { client_certificates: readonly unknown[] };
  backends: Record<string, unknown>;
  passthrough?: unknown;
}): string[] {
  const warnings: string[] = [];
  const clientAuth = config.server.tls?.client_auth ?? 'none';
  if (config.auth.client_certificates.length > 0 && clientAuth === 'none') {
    warnings.push(
      'auth.client_certificates: no listener asks for client certificates (set server.tls.client_auth to optional or require)',
    );
  }
  const upstreams: Array<[string, unknown]> = [
    ...Object.entries(config.backends).map(([name, b]): [string, unknown] => [`backends.${name}`, b]),
    ['passthrough', config.passthrough],
  ];
  for (const [at, upstream] of upstreams) {
    const u = upstream as { url?: unknown; tls?: unknown } | undefined;
    if (u?.tls !== undefined && typeof u.url === 'string' && u.url.startsWith('http://')) {
      warnings.push(`${at}.tls: has no effect on an http:// url (use https://)`);
    }
  }
  return warnings;
}
