/**
 * A gateway with an audit trail, through the front door, on each store: the file trail beside the
 * local providers file (the default), and the table in the providers' PostgreSQL database (the
 * default there too). What each test reads back: the trail's entries, a provider as stored.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import type { AuditEntry } from '../../src/audit/entry.js';
import { readFileTrail } from '../../src/audit/file-read.js';
import { walkRows } from '../../src/audit/postgres.js';
import type { EntryRow } from '../../src/audit/sql-query.js';
import type { TrailItem } from '../../src/audit/store.js';
import { call, multipart, ROOT, startGateway, type TestGateway } from '../helpers/gateway.js';
import { createDatabase, createSchema, importStores, sql } from '../helpers/postgres.js';

export type Kind = 'file' | 'postgres';

/** A gateway under test and its trail. */
export interface AuditedGateway {
  readonly kind: Kind;
  readonly gw: TestGateway;
  /** The providers' database (PostgreSQL only). */
  readonly url?: string;
  /** The trail's file (file only). */
  readonly file?: string;
  /** Every entry, in the trail's order. */
  entries(): Promise<AuditEntry[]>;
  /** The trail as `verify` reads it. */
  items(): AsyncIterable<TrailItem>;
  /** Provider `ssoProviderId`'s stored name. */
  providerName(ssoProviderId: number): Promise<string>;
}

const sample = (name: string) => JSON.parse(readFileSync(path.join(ROOT, 'config', name), 'utf8'));

/** A gateway with its trail on `kind` (`over` merged into its configuration); closed when `t` ends. */
export async function auditedGateway(
  t: Test,
  kind: Kind,
  over: Record<string, unknown> = {},
): Promise<AuditedGateway> {
  if (kind === 'file') {
    const gw = await startGateway(over);
    t.teardown(() => gw.close());
    const providers = path.join(gw.dataDir, 'sso-providers.json');
    const file = `${providers}.audit.jsonl`;
    const items = () => readFileTrail(file);
    return {
      kind,
      gw,
      file,
      items,
      entries: () => collect(items()),
      async providerName(id) {
        const stored = JSON.parse(readFileSync(providers, 'utf8')) as {
          providers: Array<{ name: string; sso_provider_id: { int32: number } }>;
        };
        return stored.providers.find((p) => p.sso_provider_id.int32 === id)?.name ?? '';
      },
    };
  }
  const url = await createSchema(t, await createDatabase(t));
  await importStores(t, url, { sso: sample('sso-providers.json'), tags: sample('asset-group-tags.json') });
  const backend = { type: 'postgres', url, path: undefined, pool_size: 4 };
  const gw = await startGateway({
    ...over,
    backends: { sso_providers: backend, asset_group_tags: backend },
  });
  t.teardown(() => gw.close());
  const items = () => walkRows(async (text, values) => sql<EntryRow>(url, text, values));
  return {
    kind,
    gw,
    url,
    items,
    entries: () => collect(items()),
    async providerName(id) {
      const [row] = await sql<{ name: string }>(
        url,
        'SELECT name FROM saml_providers WHERE sso_provider_id = $1',
        [id],
      );
      return row?.name ?? '';
    },
  };
}

async function collect(items: AsyncIterable<TrailItem>): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  for await (const item of items) if (item.entry !== undefined) out.push(item.entry as AuditEntry);
  return out;
}

/** SAML metadata naming `entity`. */
export const metadata = (entity: string) =>
  `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entity}"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${entity}/sso"/></IDPSSODescriptor></EntityDescriptor>`;

/** A signed PATCH of provider `id` with `parts`. */
export function patch(
  gw: { port: number },
  id: number | string,
  parts: Array<{ name: string; value: string; filename?: string }>,
  opts: Omit<Parameters<typeof call>[1], 'method' | 'target' | 'body'> & { query?: string } = {},
) {
  const form = multipart(parts);
  const { query, headers, ...rest } = opts;
  return call(gw, {
    ...rest,
    method: 'PATCH',
    target: `/api/v2/sso-providers/${id}${query ?? ''}`,
    body: form.body,
    headers: { 'Content-Type': form.contentType, ...headers },
  });
}

/** Overwrites the providers file with text that is not JSON: the store's next update fails. */
export function breakProvidersFile(gw: TestGateway): void {
  writeFileSync(path.join(gw.dataDir, 'sso-providers.json'), '{ not json');
}
