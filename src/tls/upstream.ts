/**
 * The TLS an upstream is reached with (`<upstream>.tls`, contract §5): a private CA to trust, a
 * client certificate to present (mTLS to the service), the name to check. Its files are watched and
 * reloaded like a listener's; new connections use the new material, open ones finish with theirs.
 */
import type { Agent } from 'node:https';
import { createRequire } from 'node:module';
import type { buildConnector as BuildConnector } from 'undici';
import type { UpstreamTlsConfig } from '../config/tls.js';
import { loadUpstream, type UpstreamMaterial } from './material.js';
import { watchTls, type WatchDeps } from './watch.js';

export interface UpstreamTls {
  /** undici's `connect` option: each new connection made with the current material. */
  connector(timeout: number): BuildConnector.connector;
  /** Keeps `agent`'s options (read for each new connection, and part of its pool's key) current. */
  keep(agent: Agent): void;
  close(): void;
}

/**
 * The key path of an upstream's `tls` block by the upstream's name (`collectors`, …, `passthrough`;
 * `public`, the front door's public requests, goes to pass-through's service).
 */
export function upstreamTlsKey(name: string): string {
  return name === 'passthrough' || name === 'public' ? 'passthrough.tls' : `backends.${name}.tls`;
}

/** Loads the block (a file that does not load stops the start, naming its key) and watches it. */
export function openUpstreamTls(config: UpstreamTlsConfig, at: string, deps: WatchDeps): UpstreamTls {
  const agents = new Set<Agent>();
  let build: (() => void) | undefined;
  const watched = watchTls<UpstreamMaterial>(
    {
      at,
      load: () => loadUpstream(config, at),
      files: () => [config.ca, config.cert, config.key].filter((f): f is string => f !== undefined),
      apply(material) {
        build?.();
        for (const agent of agents) Object.assign(agent.options, material);
      },
    },
    deps,
  );
  return {
    connector(timeout) {
      // undici is loaded here, by its first user (a gateway without an upstream never loads it).
      const buildConnector = createRequire(import.meta.url)('undici').buildConnector as typeof BuildConnector;
      let connect = buildConnector({ ...watched.current(), timeout });
      build = () => {
        connect = buildConnector({ ...watched.current(), timeout });
      };
      return (options, callback) => connect(options, callback);
    },
    keep(agent) {
      agents.add(agent);
      Object.assign(agent.options, watched.current());
    },
    close: () => watched.close(),
  };
}
