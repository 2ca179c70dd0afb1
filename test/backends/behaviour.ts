/**
 * One behaviour suite for every store backend: the same cases, the same data (in the local JSON
 * formats), the same expected answers. `local.behaviour.test.ts` and `postgres.behaviour.test.ts`
 * run it, so the two backends cannot drift apart.
 */
import type { Test } from 'tap';
import type {
  AssetGroupTagsBackend,
  MemberWithSelectors,
} from '../../src/backends/asset-group-tags/backend.js';
import type {
  SsoProviderPatch,
  SsoProvidersBackend,
  SsoProviderUpdate,
} from '../../src/backends/sso-providers/backend.js';
import type { Answer, BackendCall } from '../../src/backends/backend-call.js';
import { callOf, provider } from '../helpers/backend.js';

/** A store backend as these cases use it: one that answers itself (never relays an upstream's answer). */
type Sso = Omit<SsoProvidersBackend, 'update'> & {
  update(id: number, patch: SsoProviderPatch, call: BackendCall): Promise<SsoProviderUpdate | undefined>;
};
type Tags = Omit<AssetGroupTagsBackend, 'getMember'> & {
  getMember(tagId: number, memberId: number, call: BackendCall): Answer<MemberWithSelectors | undefined>;
};

/** The backends over one set of stores. */
export interface OpenStores {
  sso: SsoProvidersBackend;
  tags: AssetGroupTagsBackend;
}

/** Opens fresh backends holding `stores` (closed when `t` ends). */
export type Opener = (t: Test, stores: { sso: unknown; tags: unknown }) => Promise<OpenStores>;

const never = () => callOf();
const aborted = () => {
  const c = new AbortController();
  c.abort(new Error('deadline'));
  return callOf(c.signal);
};

export const SSO = {
  roles: [1, 2, 3],
  providers: [
    provider(1, 10),
    provider(2, 20, { deleted_at: { time: '2024-05-01T00:00:00Z', valid: true } }),
    provider(0, 30, { sso_provider_id: { int32: 0, valid: false } }),
    provider(4, 40),
  ],
};

export function selector(id: number, tagId: number, members: number[], over: Record<string, unknown> = {}) {
  return {
    id,
    asset_group_tag_id: tagId,
    created_at: '2025-03-01T09:00:00Z',
    created_by: 'admin@example.com',
    updated_at: '2025-03-02T10:30:00.5Z',
    updated_by: 'admin@example.com',
    disabled_at: null,
    disabled_by: null,
    name: `selector ${id}`,
    description: `selector ${id} of tag ${tagId}`,
    is_default: false,
    allow_disable: true,
    seeds: [{ value: `seed ${id}` }],
    members,
    ...over,
  };
}

export function member(id: number) {
  return {
    id,
    object_id: `S-1-5-21-${id}`,
    environment_id: 'S-1-5-21',
    primary_kind: 'User',
    name: `USER${id}@CORP.EXAMPLE`,
    properties: { enabled: true, nested: { list: [1, 'two'] }, admincount: id % 2 === 0 },
    source: 1,
  };
}

export const TAGS = {
  tags: [
    {
      id: 1,
      name: 'Tier Zero',
      selectors: [
        selector(3, 1, [101, 102, 999]),
        selector(1, 1, [101, 101, 103], { seeds: [{ value: 'first' }, { value: 'second' }] }),
        selector(2, 1, [101], {
          disabled_at: '2025-04-01T00:00:00Z',
          disabled_by: 'ops@example.com',
          allow_disable: true,
        }),
      ],
    },
    { id: 2, name: 'Owned', selectors: [selector(4, 2, [102, 104], { is_default: true })] },
  ],
  members: [101, 102, 103, 104, 105].map(member),
};

/** The wire form of a selector of the fixtures: the storage-only `members` left out. */
function wire(s: ReturnType<typeof selector>) {
  const { members: _members, ...rest } = s;
  return rest;
}
const selectorOf = (id: number) =>
  wire(TAGS.tags.flatMap((t) => t.selectors).find((s) => s.id === id) as ReturnType<typeof selector>);

/** Runs every case against the backends `open` makes. */
/**
 * Runs the cases. `inMemory`: the store answers look-ups from memory at once (the local file), so
 * it has no work for a signal to stop: the pipeline checks the deadline just before.
 */
export function behaviourSuite(t: Test, open: Opener, { inMemory = false } = {}): void {
  const fixtures = () => ({ sso: structuredClone(SSO), tags: structuredClone(TAGS) });
  const stores = async (t: Test, data: { sso: unknown; tags: unknown } = fixtures()) => {
    const opened = await open(t, data);
    return { sso: opened.sso as Sso, tags: opened.tags as Tags };
  };

  t.test('getMember: the member with its covering selectors of that tag, ordered by id', async (t) => {
    const { tags } = await stores(t);
    const found = await tags.getMember(1, 101, never());
    t.same(found, { ...member(101), selectors: [selectorOf(1), selectorOf(2), selectorOf(3)] });
    t.same(
      found?.selectors.map((s) => s.id),
      [1, 2, 3],
      'disabled selectors included, ordered by id',
    );
    t.notOk(
      found?.selectors.some((s) => 'members' in s),
      'no storage-only members list',
    );
    t.same(found?.selectors[0]?.seeds, [{ value: 'first' }, { value: 'second' }], 'seeds in order');
    t.same(
      (await tags.getMember(1, 102, never()))?.selectors.map((s) => s.id),
      [3],
    );
    t.same(
      (await tags.getMember(2, 102, never()))?.selectors.map((s) => s.id),
      [4],
      'per tag',
    );
  });

  t.test('getMember: a member listed twice by one selector gets that selector once', async (t) => {
    const { tags } = await stores(t);
    t.same(
      (await tags.getMember(1, 103, never()))?.selectors.map((s) => s.id),
      [1],
    );
  });

  t.test('getMember: unknown tag, unknown member or no covering selector is undefined', async (t) => {
    const { tags } = await stores(t);
    t.equal(await tags.getMember(9, 101, never()), undefined, 'unknown tag');
    t.equal(await tags.getMember(1, 106, never()), undefined, 'unknown member');
    t.equal(await tags.getMember(1, 105, never()), undefined, 'a member no selector covers');
    t.equal(await tags.getMember(2, 101, never()), undefined, 'covered only by another tag');
    t.equal(await tags.getMember(1, 999, never()), undefined, 'listed by a selector, but no member');
  });

  t.test(
    'getMember: an aborted signal rejects with its reason, or a store in memory answers at once',
    async (t) => {
      const { tags } = await stores(t);
      const call = aborted();
      if (inMemory) {
        const answer = tags.getMember(1, 101, call);
        t.notOk(answer instanceof Promise, 'no promise: nothing waits');
        t.equal((answer as MemberWithSelectors).id, 101);
        return;
      }
      await t.rejects(async () => tags.getMember(1, 101, call), call.signal.reason);
    },
  );

  t.test('get: the wire shape by sso_provider_id, without storage-only fields', async (t) => {
    const { sso } = await stores(t);
    const { metadata_xml: _xml, auto_provision, ...stored } = provider(4, 40);
    t.same(await sso.get(4, never()), { ...stored, config: { auto_provision } });
    t.equal(await sso.get(40, never()), undefined, 'the record id does not address it');
    t.equal(await sso.get(2, never()), undefined, 'a deleted provider');
    t.equal(await sso.get(0, never()), undefined, 'a record without a valid sso_provider_id');
    t.equal(await sso.get(3, never()), undefined, 'unknown');
  });

  t.test('roleExists: the roles list, or any positive 32-bit id without one', async (t) => {
    const listed = await stores(t);
    const ids = [1, 3, 4, 0, -1, 2_147_483_648, 1.5];
    const answers = async (b: Sso) => Promise.all(ids.map((id) => b.roleExists(id, never())));
    t.same(await answers(listed.sso), [true, true, false, false, false, false, false]);
    const { roles: _roles, ...unlisted } = fixtures().sso;
    const any = await stores(t, { sso: unlisted, tags: fixtures().tags });
    t.same(await answers(any.sso), [true, true, true, false, false, false, false]);
  });

  t.test('update: a rename changes name and display_name, and moves updated_at', async (t) => {
    const { sso } = await stores(t);
    const before = await sso.get(1, never());
    const result = await sso.update(1, { name: 'Renamed' }, never());
    t.same(result?.changed, ['name', 'display_name']);
    t.equal(result?.provider.name, 'Renamed');
    t.equal(result?.provider.display_name, 'Renamed');
    t.equal(result?.provider.created_at, before?.created_at);
    t.ok(Date.parse(result?.provider.updated_at as string) > Date.parse(before?.updated_at as string));
    t.same(await sso.get(1, never()), result?.provider, 'what get reads afterwards');
  });

  t.test('update: only the fields whose value differs are changed and named', async (t) => {
    const { sso } = await stores(t);
    const metadata = { xml: '<new/>', idpIssuerUri: 'urn:idp', idpSsoUri: 'https://idp.example.com/new' };
    const m = await sso.update(1, { metadata }, never());
    t.same(m?.changed, ['idp_sso_uri', 'metadata_xml']);
    t.equal(m?.provider.idp_sso_uri, 'https://idp.example.com/new');
    const a = await sso.update(
      1,
      { autoProvision: { enabled: true, default_role_id: 1, role_provision: true } },
      never(),
    );
    t.same(a?.changed, ['config.auto_provision.enabled', 'config.auto_provision.role_provision']);
    t.same(a?.provider.config.auto_provision, { enabled: true, default_role_id: 1, role_provision: true });
  });

  t.test('update: a no-op answers the provider as it is and writes nothing', async (t) => {
    const { sso } = await stores(t);
    const before = await sso.get(1, never());
    const result = await sso.update(
      1,
      {
        name: 'provider 1',
        metadata: {
          xml: '<md:EntityDescriptor/>',
          idpIssuerUri: 'urn:idp',
          idpSsoUri: 'https://idp.example.com/sso',
        },
        autoProvision: { enabled: false, default_role_id: 1, role_provision: false },
      },
      never(),
    );
    t.same(result, { provider: before, changed: [] });
    t.same(await sso.update(1, {}, never()), { provider: before, changed: [] }, 'an empty patch');
    t.same(await sso.get(1, never()), before, 'updated_at did not move');
  });

  t.test('update: concurrent updates of different fields are all kept', async (t) => {
    const { sso } = await stores(t);
    const metadata = { xml: '<m/>', idpIssuerUri: 'urn:other', idpSsoUri: 'https://other/sso' };
    const autoProvision = { enabled: true, default_role_id: 3, role_provision: true };
    const results = await Promise.all([
      sso.update(4, { name: 'Concurrent' }, never()),
      sso.update(4, { metadata }, never()),
      sso.update(4, { autoProvision }, never()),
      sso.update(1, { name: 'Other provider' }, never()),
    ]);
    t.ok(
      results.every((r) => r !== undefined && r.changed.length > 0),
      'each one changed something',
    );
    const after = await sso.get(4, never());
    t.equal(after?.name, 'Concurrent');
    t.equal(after?.idp_issuer_uri, 'urn:other');
    t.equal(after?.idp_sso_uri, 'https://other/sso');
    t.same(after?.config.auto_provision, autoProvision);
    t.equal((await sso.get(1, never()))?.name, 'Other provider');
  });

  t.test('update: an unknown or deleted provider is undefined and nothing is written', async (t) => {
    const { sso } = await stores(t);
    t.equal(await sso.update(3, { name: 'x' }, never()), undefined, 'unknown');
    t.equal(await sso.update(2, { name: 'x' }, never()), undefined, 'deleted');
    t.equal(await sso.update(0, { name: 'x' }, never()), undefined, 'no valid sso_provider_id');
  });

  t.test('update: an aborted signal rejects with its reason and changes nothing', async (t) => {
    const { sso } = await stores(t);
    const before = await sso.get(1, never());
    const call = aborted();
    await t.rejects(sso.update(1, { name: 'Never' }, call), call.signal.reason);
    await t.rejects(sso.get(1, call), call.signal.reason);
    t.same(await sso.get(1, never()), before);
  });
}
