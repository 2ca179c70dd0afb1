/**
 * A listener's TLS (`server.tls`, `admin.tls`): the options its HTTPS server starts with, and the
 * certificate kept current afterwards with `setSecureContext` (open connections keep theirs), the
 * client-certificate switches, the shared session ticket keys and the expiry gauge.
 */
import type { Server as TlsServer, TlsOptions } from 'node:tls';
import type { AdminTlsConfig, ServerTlsConfig } from '../config/tls.js';
import { type ListenerMaterial, loadListener } from './material.js';
import type { TicketKeys } from './tickets.js';
import { watchTls, type WatchDeps } from './watch.js';

type ListenerConfig = ServerTlsConfig | AdminTlsConfig;

export interface ListenerTls {
  /** The options to create the HTTPS server with (certificate, key, ticket keys, client certificates). */
  serverOptions(): TlsOptions;
  /** Keeps `server` current from now on. */
  attach(server: TlsServer): void;
  /** A new configuration (SIGHUP): reads the files again, the block's new paths included. */
  reload(config: ListenerConfig): Promise<void>;
  close(): void;
}

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
    ticketKeys: tickets.keys(material.caDigest),
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
      },
    },
    deps,
  );
  report(watched.current());
  const stopRotating = tickets.onRotate(() =>
    server?.setTicketKeys(tickets.keys(watched.current().caDigest)),
  );
  return {
    serverOptions: () => options(watched.current()),
    attach(s) {
      server = s;
    },
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
