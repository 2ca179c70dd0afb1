/**
 * Client certificates as the third scheme (contract §8): a request with no `Authorization` header on
 * a connection whose client presented a certificate. A verified certificate is the identity of the
 * first `auth.client_certificates` entry it matches; one matching none, or one the CA did not
 * verify (`client_auth: optional`), is no identity. What the certificate says is read once per
 * connection; nothing of it but the configured subject reaches a log line.
 *
 * A resumed session reports the certificate and the verdict of its first handshake, so two things
 * are checked on every request: the certificate is not past its `notAfter`, and the connection was
 * verified against the client trust in force (a CA or CRL changed since makes it untrusted).
 */
import type { TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import type { ClientCertificateConfig } from '../../config/tls.js';
import { errors } from '../../errors.js';
import type { Identity } from '../../http/identity.js';
import type { ClientTrust } from '../../tls/trust.js';
import { type AuthScheme, NOT_MINE } from './scheme.js';

/**
 * The client-certificate scheme: it claims a request without `Authorization` whose connection
 * presented a certificate, and only where a listener asks for one (contract §8). Its refusals carry
 * no challenge of its own (the certificate is TLS's): the stage's, naming the schemes that are on.
 */
export const clientCertificate: AuthScheme = {
  name: 'client_certificate',
  reasons: ['unknown_certificate', 'untrusted_certificate'],
  open(deps) {
    const certificates =
      (deps.server.tls?.client_auth ?? 'none') === 'none'
        ? undefined
        : createCertificateScheme(deps.auth.client_certificates, { now: deps.now, trust: deps.clientTrust });
    return {
      on: false,
      claim(ctx, credentials) {
        if (credentials.word !== undefined || certificates === undefined) return NOT_MINE;
        const outcome = certificates.identify(ctx.req.socket);
        if (outcome === undefined) return NOT_MINE;
        if (!outcome.ok) throw errors.notAuthenticated(outcome.reason);
        return outcome.identity;
      },
    };
  },
};

/** What a connection's client certificate names. */
interface Presented {
  readonly verified: boolean;
  readonly uri: readonly string[];
  /** DNS names and e-mail addresses, lower-cased (matched case-insensitively). */
  readonly dns: readonly string[];
  readonly email: readonly string[];
  readonly cn: readonly string[];
  /** When the certificate expires (ms since the epoch). */
  readonly notAfter: number;
}

/** The outcome for a request without `Authorization`: no certificate, an identity, or a refusal reason. */
type CertificateOutcome =
  | undefined
  | { readonly ok: true; readonly identity: Identity }
  | { readonly ok: false; readonly reason: 'unknown_certificate' | 'untrusted_certificate' };

interface CertificateScheme {
  /** Who the client certificate of `socket` is (undefined: none was presented, or TLS is off). */
  identify(socket: Socket): CertificateOutcome;
}

/** What the scheme reads besides the connection: the clock, and the client trust's generations. */
interface CertificateSchemeDeps {
  /** ms since the epoch. */
  readonly now: () => number;
  /** Absent where no TLS listener follows the trust (every handshake then counts as current). */
  readonly trust?: ClientTrust | undefined;
}

/** The scheme for the configured entries. */
function createCertificateScheme(
  entries: readonly ClientCertificateConfig[],
  deps: CertificateSchemeDeps,
): CertificateScheme {
  const { now, trust } = deps;
  const identities = entries.map((e): Identity => ({
    scheme: 'client_certificate',
    subject: e.subject,
    principal: `cert:${e.subject}`,
    permissions: new Set(e.permissions),
  }));
  const seen = new WeakMap<Socket, Presented | null>();
  return {
    identify(socket) {
      let presented = seen.get(socket);
      if (presented === undefined) {
        presented = presentedBy(socket);
        seen.set(socket, presented);
      }
      if (presented === null) return undefined;
      if (!presented.verified || now() > presented.notAfter || trust?.current(socket) === false) {
        return { ok: false, reason: 'untrusted_certificate' };
      }
      const found = entries.findIndex((e) => matches(e.match, presented));
      return found === -1
        ? { ok: false, reason: 'unknown_certificate' }
        : { ok: true, identity: identities[found] as Identity };
    },
  };
}

function matches(match: ClientCertificateConfig['match'], p: Presented): boolean {
  if (match.uri !== undefined) return p.uri.includes(match.uri);
  if (match.dns !== undefined) return p.dns.includes(match.dns.toLowerCase());
  if (match.email !== undefined) return p.email.includes(match.email.toLowerCase());
  return match.cn !== undefined && p.cn.includes(match.cn);
}

/** What the peer certificate of a TLS connection names; null when there is none. */
function presentedBy(socket: Socket): Presented | null {
  const tls = socket as Partial<TLSSocket>;
  if (typeof tls.getPeerCertificate !== 'function') return null;
  const cert = tls.getPeerCertificate();
  if (cert === null || typeof cert !== 'object' || Object.keys(cert).length === 0) return null;
  const names = subjectAltNames(cert.subjectaltname ?? '');
  const of = (type: string) => names.filter(([t]) => t === type).map(([, v]) => v);
  const cn = cert.subject?.CN as string | string[] | undefined;
  return {
    verified: tls.authorized === true,
    uri: of('URI'),
    dns: of('DNS').map((n) => n.toLowerCase()),
    email: of('email').map((n) => n.toLowerCase()),
    cn: cn === undefined ? [] : Array.isArray(cn) ? cn : [cn],
    // Unreadable counts as expired.
    notAfter: Date.parse(cert.valid_to) || 0,
  };
}

/**
 * The entries of Node's `subjectaltname` text (`DNS:a, URI:b, email:c`): Node writes a value holding a
 * comma, quote or other special character as a JSON string, so that one entry cannot pose as two.
 */
export function subjectAltNames(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let i = 0;
  while (i < text.length) {
    const colon = text.indexOf(':', i);
    if (colon === -1) break;
    const type = text.slice(i, colon);
    let value: string;
    let end: number;
    if (text[colon + 1] === '"') {
      end = colon + 2;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      end++;
      try {
        value = JSON.parse(text.slice(colon + 1, end)) as string;
      } catch {
        break;
      }
    } else {
      end = text.indexOf(', ', colon + 1);
      if (end === -1) end = text.length;
      value = text.slice(colon + 1, end);
    }
    out.push([type, value]);
    i = end + 2;
  }
  return out;
}
