/**
 * The embedded SSO providers store: one JSON file (contract §1), read at start and rewritten whole,
 * durably, on every update that changes something. Updates are serialised, so concurrent PATCHes
 * never lose one another; the rename is the one commit point.
 */
import { randomUUID } from 'node:crypto';
import { open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Metrics } from '../../observability/metrics.js';
import { type BackendType, type SeededLocalConfig, seededLocalShape } from '../backend-type.js';
import { FileLocks } from '../file-locks.js';
import { seedFile } from '../seed.js';
import type { SsoProvider, SsoProviderPatch, SsoProviderUpdate, SsoProvidersStore } from './backend.js';
import { changesOf } from './patch.js';

const MAX_ID = 2_147_483_647;
const time = z.iso.datetime({ error: 'must be an RFC 3339 time in UTC' });
const int32 = z
  .number()
  .int()
  .min(-MAX_ID - 1)
  .max(MAX_ID);

/** A provider as stored: the wire shape without `config`, plus `metadata_xml` and `auto_provision`. */
const storedProvider = z.strictObject({
  id: int32,
  created_at: time,
  updated_at: time,
  deleted_at: z.strictObject({ time, valid: z.boolean() }),
  name: z.string(),
  display_name: z.string(),
  idp_issuer_uri: z.string(),
  idp_sso_uri: z.string(),
  principal_attribute_mappings: z.array(z.string()),
  sp_issuer_uri: z.string(),
  sp_sso_uri: z.string(),
  sp_metadata_uri: z.string(),
  sp_acs_uri: z.string(),
  sso_provider_id: z.strictObject({ int32, valid: z.boolean() }),
  metadata_xml: z.string(),
  auto_provision: z.strictObject({
    enabled: z.boolean(),
    default_role_id: int32,
    role_provision: z.boolean(),
  }),
});

const storeSchema = z
  .strictObject({
    roles: z.array(z.number().int().min(1).max(MAX_ID)).optional(),
    providers: z.array(storedProvider),
  })
  .superRefine((store, ctx) => {
    const seen = new Set<number>();
    store.providers.forEach((p, i) => {
      if (!p.sso_provider_id.valid) return;
      if (seen.has(p.sso_provider_id.int32)) {
        ctx.addIssue({ code: 'custom', path: ['providers', i, 'sso_provider_id'], message: 'is used twice' });
      }
      seen.add(p.sso_provider_id.int32);
    });
  });

type Store = z.output<typeof storeSchema>;
type StoredProvider = Store['providers'][number];

/** What identifies one version of the file on disk. */
const versionOf = (s: { ino: number; size: number; mtimeMs: number }) => `${s.ino}:${s.size}:${s.mtimeMs}`;

/** `{type: local, path: <file.json>, seed: <sample.json>}` for the SSO providers. */
export const localSsoProviders: BackendType<SeededLocalConfig, SsoProvidersStore> = {
  config: seededLocalShape,
  async open(config, deps) {
    if (config.seed !== undefined) await seedFile(config.seed, config.path);
    return createLocalSsoProviders(config.path, deps);
  },
};

/**
 * Opens the store in `file`. Throws, naming the file, when it cannot be read or its shape is wrong:
 * the gateway must not start on a store it would later rewrite wrongly. Updates of one file take
 * turns through `fileLocks`, which outlives a configuration: after a SIGHUP reload the old instance
 * may still be finishing a write while the new one takes requests.
 */
export async function createLocalSsoProviders(
  file: string,
  deps: { metrics: Metrics; fileLocks?: FileLocks; now?: () => Date },
): Promise<SsoProvidersStore> {
  const now = deps.now ?? (() => new Date());
  const fileLocks = deps.fileLocks ?? new FileLocks();
  let loaded: { state: Store; version: string };
  try {
    loaded = await load(file);
  } catch (err) {
    if (err instanceof StoreError) throw err;
    throw new Error(`cannot read the SSO providers file ${file}: ${(err as Error).message}`, { cause: err });
  }
  let state = loaded.state;
  let version = loaded.version;
  const roles = state.roles === undefined ? undefined : new Set(state.roles);

  const observe = (operation: string, started: number) =>
    deps.metrics.storeDuration.observe(
      { backend: 'local', operation: `sso_providers.${operation}` },
      (performance.now() - started) / 1000,
    );

  async function apply(ssoProviderId: number, patch: SsoProviderPatch, signal: AbortSignal) {
    signal.throwIfAborted();
    // Another instance (the one before a reload) or an operator may have rewritten the file, or
    // changed its permissions (`chmod 600`): the new file keeps the mode the current one has.
    let mode: number;
    try {
      const info = await stat(file);
      mode = info.mode & 0o777;
      if (versionOf(info) !== version) ({ state, version } = await load(file));
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new Error(`reading the SSO providers file ${file} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const index = state.providers.findIndex((p) => addressable(p, ssoProviderId));
    if (index === -1) return undefined;
    const current = state.providers[index] as StoredProvider;
    const { next, changed } = applyPatch(current, patch);
    if (changed.length === 0) return { provider: toWire(current), changed };
    next.updated_at = now().toISOString();
    const providers = state.providers.with(index, next);
    const nextState: Store = { ...state, providers };
    await writeDurably(file, `${JSON.stringify(nextState, null, 2)}\n`, mode, signal);
    state = nextState;
    version = versionOf(await stat(file));
    return { provider: toWire(next), changed };
  }

  return {
    async get(ssoProviderId, { signal }): Promise<SsoProvider | undefined> {
      const started = performance.now();
      signal.throwIfAborted();
      const found = state.providers.find((p) => addressable(p, ssoProviderId));
      observe('get', started);
      return found && toWire(found);
    },

    async roleExists(roleId: number): Promise<boolean> {
      if (!Number.isInteger(roleId) || roleId < 1 || roleId > MAX_ID) return false;
      return roles === undefined || roles.has(roleId);
    },

    async update(ssoProviderId, patch, { signal }): Promise<SsoProviderUpdate | undefined> {
      const started = performance.now();
      try {
        return await fileLocks.run(file, () => apply(ssoProviderId, patch, signal));
      } finally {
        observe('update', started);
      }
    },

    async close(): Promise<void> {
      // Whatever this file's queue holds now has finished.
      await fileLocks.run(file, async () => undefined);
    },
  };
}

/** The path's id names `sso_provider_id.int32`; a deleted provider is gone for this API. */
function addressable(p: StoredProvider, ssoProviderId: number): boolean {
  return p.sso_provider_id.valid && p.sso_provider_id.int32 === ssoProviderId && !p.deleted_at.valid;
}

/** The record after `patch`, and the names of the fields whose value it changed. */
function applyPatch(
  current: StoredProvider,
  patch: SsoProviderPatch,
): { next: StoredProvider; changed: string[] } {
  const next: StoredProvider = { ...current, auto_provision: { ...current.auto_provision } };
  const changes = changesOf(current, patch);
  for (const change of changes) {
    if (change.field.startsWith('config.')) {
      (next.auto_provision as Record<string, unknown>)[change.key] = change.value;
    } else {
      (next as Record<string, unknown>)[change.key] = change.value;
    }
  }
  return { next, changed: changes.map((c) => c.field) };
}

/** A store file that cannot be used. */
class StoreError extends Error {}

/** The file's store and which version of the file it is. */
async function load(file: string): Promise<{ state: Store; version: string }> {
  const handle = await open(file, 'r');
  try {
    const info = await handle.stat();
    const state = parseStore(await handle.readFile('utf8'), file);
    return { state, version: versionOf(info) };
  } finally {
    await handle.close();
  }
}

/** The store in `text`, or an error naming `file` and the first faulty key. */
function parseStore(text: string, file: string): Store {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new StoreError(`the SSO providers file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  const result = storeSchema.safeParse(json);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue?.path.length ? issue.path.join('.') : '(top level)';
  throw new StoreError(`the SSO providers file ${file} is invalid at ${where}: ${issue?.message}`);
}

/** The API's view of a stored provider: `config.auto_provision`, never `metadata_xml`. */
function toWire(p: StoredProvider): SsoProvider {
  return {
    id: p.id,
    created_at: p.created_at,
    updated_at: p.updated_at,
    deleted_at: { ...p.deleted_at },
    name: p.name,
    display_name: p.display_name,
    idp_issuer_uri: p.idp_issuer_uri,
    idp_sso_uri: p.idp_sso_uri,
    principal_attribute_mappings: [...p.principal_attribute_mappings],
    sp_issuer_uri: p.sp_issuer_uri,
    sp_sso_uri: p.sp_sso_uri,
    sp_metadata_uri: p.sp_metadata_uri,
    sp_acs_uri: p.sp_acs_uri,
    sso_provider_id: { ...p.sso_provider_id },
    config: { auto_provision: { ...p.auto_provision } },
  };
}

/**
 * Replaces `file` with `text` so that a crash leaves the old file or the new one, never half of
 * either: a unique temporary file in the same directory, fsync, rename, fsync of the directory.
 * The rename is the commit point: an abort before it removes the temporary file and throws the
 * signal's reason; after it the write stands.
 */
async function writeDurably(file: string, text: string, mode: number, signal: AbortSignal): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${randomUUID()}.tmp`);
  try {
    const handle = await open(tmp, 'wx', mode);
    try {
      // Exactly the mode of the file it replaces, whatever the process's umask.
      await handle.chmod(mode);
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    signal.throwIfAborted();
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    if (signal.aborted && err === signal.reason) throw err;
    throw new Error(`writing the SSO providers file ${file} failed: ${(err as Error).message}`, {
      cause: err,
    });
  }
  // Committed. Syncing the directory makes the rename itself durable; if it fails the new file is
  // already the one every reader sees, so the update stands.
  const handle = await open(dir, 'r').catch(() => undefined);
  await handle?.sync().catch(() => undefined);
  await handle?.close();
}

/** The file's schema, also read by `gateway import` (the postgres backend's loader). */
export { storeSchema as ssoProvidersFileSchema };
