/**
 * What `check-config` says of the TLS files (contract §8): each missing or unreadable file by its key
 * path (`server.tls.cert`), and each block whose files do not load together (a key that is not the
 * certificate's, an expired certificate). Never any of the files' content.
 */
import { ConfigReference } from '../config/leaves.js';
import type { Config } from '../config/schema.js';
import { tlsFiles } from '../config/tls.js';
import { loadListener, loadUpstream, TlsLoadError } from '../tls/material.js';
import { readFileSync } from 'node:fs';

/** Each problem of the TLS files of `config`, as `key.path: reason`. */
export function tlsProblems(config: Config): string[] {
  const plain = config as unknown as Record<string, unknown>;
  const problems: string[] = [];
  for (const { at, file } of tlsFiles(plain)) {
    try {
      readFileSync(file);
    } catch (err) {
      problems.push(`${at}: file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (problems.length > 0) return problems;
  const check = (run: () => unknown) => {
    try {
      run();
    } catch (err) {
      // A reference not resolved (check-config without --resolve) leaves a block unloadable: skip it.
      if (err instanceof TlsLoadError) problems.push(err.message);
    }
  };
  const resolved = (block: object) => Object.values(block).every((v) => !(v instanceof ConfigReference));
  const { server, admin, backends, passthrough } = config;
  if (server.tls && resolved(server.tls)) check(() => loadListener(server.tls!, 'server.tls'));
  if (admin.tls && resolved(admin.tls)) check(() => loadListener(admin.tls!, 'admin.tls'));
  for (const [name, backend] of Object.entries(backends)) {
    if ('tls' in backend && backend.tls && resolved(backend.tls)) {
      const tls = backend.tls;
      check(() => loadUpstream(tls, `backends.${name}.tls`));
    }
  }
  if (passthrough?.tls && resolved(passthrough.tls))
    check(() => loadUpstream(passthrough.tls!, 'passthrough.tls'));
  const store = config.rate_limits?.store;
  if (store?.type === 'redis' && store.tls && resolved(store.tls)) {
    const tls = store.tls;
    check(() => loadUpstream(tls, 'rate_limits.store.tls'));
  }
  return problems;
}
