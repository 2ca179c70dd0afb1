/**
 * A listener's TLS (`server.tls`, `admin.tls`): the options its HTTPS server starts with, and the
 * certificate kept current afterwards with `setSecureContext` (open connections keep theirs), the
 * client-certificate switches, the shared session ticket keys, the generations of the client trust
 * and the expiry gauge. Sessions resume by ticket only: no `resumeSession` listener is installed, so
 * Node keeps no session cache and a TLS 1.2 client offering a session id gets a full handshake.
 */
import type { Server as TlsServer, TlsOptions } from 'node:tls';
import type { AdminTlsConfig, ServerTlsConfig } from '../config/tls.js';
import { type ListenerMaterial, loadListener } from './material.js';
import type { TicketKeys } from './tickets.js';
import { type ClientTrust, TrustGenerations } from './trust.js';
import { watchTls, type WatchDeps } from './watch.js';

type ListenerConfig = ServerTlsConfig | AdminTlsConfig;

export interface ListenerTls {
  /** The options to create the HTTPS server with (certificate, key, ticket keys, client certificates). */
  serverOptions(): TlsOptions;
  /** Keeps `server` current from now on. */
  attach(server: TlsServer): void;
  /** Which connections were verified against the client trust in force. */
  readonly trust: ClientTrust;
  /** A new configuration (SIGHUP): reads the files again, the block's new paths included. */
  reload(config: ListenerConfig): Promise<void>;
  close(): void;
}

/** How long a session of the admin listener resumes, in seconds (it asks for no certificate). */
const ADMIN_SESSION_TIMEOUT = 300;

/**
 * Loads the listener's certificate (a TLS file that does not load stops the start: `TlsLoadError`
 * names the key) and watches it. `listener` labels the expiry gauge (`api`, `admin`).
 */
export function openListenerTls(
  first: ListenerConfig,
  names: { at: string; listener: 'api' | 'admin' },
  tickets: TicketKeys,
  deps: WatchDeps,
): ListenerTls {
  let config = first;
  let server: TlsServer | undefined;
  const gauge = deps.metrics.get().notAfter;
  const clientAuth = () => ('client_auth' in config ? config.client_auth : 'none');
  const options = (material: ListenerMaterial): TlsOptions => ({
    ...material.options,
    ticketKeys: tickets.keys(material.trustDigest),
    // Bounds the lifetime a ticket advertises and how old a session may be to resume.
    sessionTimeout:
      'session_timeout' in config ? Math.floor(config.session_timeout / 1000) : ADMIN_SESSION_TIMEOUT,
    requestCert: clientAuth() !== 'none',
    rejectUnauthorized: clientAuth() === 'require',
  });
  const report = (material: ListenerMaterial) =>
    gauge.set({ listener: names.listener }, Math.floor(material.notAfter / 1000));
  const watched = watchTls(
    {
      at: names.at,
      load: () => loadListener(config, names.at),
      files: () =>
        [
          config.cert,
          config.key,
          ...('client_ca' in config && config.client_auth !== 'none'
            ? [config.client_ca, config.client_crl]
            : []),
        ].filter((f): f is string => f !== undefined),
      apply(material) {
        report(material);
        if (!server) return;
        const next = options(material);
        server.setSecureContext(next);
        // Read by Node for each new connection.
        server.requestCert = next.requestCert === true;
        server.rejectUnauthorized = next.rejectUnauthorized === true;
        // After the new context serves: connections verified against other trust are retired.
        trust.update(server, material.trustDigest);
      },
    },
    deps,
  );
  const trust = new TrustGenerations(watched.current().trustDigest);
  report(watched.current());
  const stopRotating = tickets.onRotate(() =>
    server?.setTicketKeys(tickets.keys(watched.current().trustDigest)),
  );
  return {
    serverOptions: () => options(watched.current()),
    attach(s) {
      server = s;
      trust.attach(s);
    },
    trust,
    async reload(next) {
      config = next;
      await watched.reload();
    },
    close() {
      watched.close();
      stopRotating();
    },
  };
}

declare module 'node:tls' {
  interface Server {
    /** Whether new connections are asked for a client certificate (Node reads it per connection). */
    requestCert: boolean;
    /** Whether a missing or unverified client certificate fails the handshake. */
    rejectUnauthorized: boolean;
  }
}
