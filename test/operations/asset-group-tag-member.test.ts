import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { call, errorOf, ROOT, startGateway, TOKENS } from '../helpers/gateway.js';

const sample = JSON.parse(readFileSync(path.join(ROOT, 'config', 'asset-group-tags.json'), 'utf8'));
const target = (tag: string | number, member: string | number) =>
  `/api/v2/asset-group-tags/${tag}/members/${member}`;

t.test('get asset group tag member', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());

  t.test('a member with exactly the covering selectors, ordered by id, disabled ones included', async (t) => {
    const res = await call(gw, { method: 'GET', target: target(1, 103), token: TOKENS.reader });
    t.equal(res.status, 200);
    t.match(res.headers['content-type'], /^application\/json/);
    const { member } = res.json().data;
    const expected = sample.members.find((m: { id: number }) => m.id === 103);
    for (const key of ['id', 'object_id', 'environment_id', 'primary_kind', 'name', 'properties', 'source']) {
      t.same(member[key], expected[key], key);
    }
    t.same(
      member.selectors.map((s: { id: number }) => s.id),
      [1, 2],
    );
    const disabled = member.selectors[1];
    t.equal(disabled.disabled_at, '2025-04-01T12:00:00Z');
    t.equal(disabled.disabled_by, 'auditor@example.com');
  });

  t.test('selectors are those of the asked tag only', async (t) => {
    const tier0 = (await call(gw, { method: 'GET', target: target(1, 102) })).json().data.member;
    const owned = (await call(gw, { method: 'GET', target: target(2, 102) })).json().data.member;
    t.same(
      tier0.selectors.map((s: { id: number }) => s.id),
      [3],
    );
    t.same(
      owned.selectors.map((s: { id: number }) => s.id),
      [11],
    );
    t.ok(owned.selectors.every((s: { asset_group_tag_id: number }) => s.asset_group_tag_id === 2));
  });

  t.test('every selector field is present and storage-only fields never appear', async (t) => {
    const res = await call(gw, { method: 'GET', target: target(1, 101) });
    const { member } = res.json().data;
    t.same(Object.keys(member).sort(), [
      'environment_id',
      'id',
      'name',
      'object_id',
      'primary_kind',
      'properties',
      'selectors',
      'source',
    ]);
    for (const s of member.selectors) {
      t.same(Object.keys(s).sort(), [
        'allow_disable',
        'asset_group_tag_id',
        'created_at',
        'created_by',
        'description',
        'disabled_at',
        'disabled_by',
        'id',
        'is_default',
        'name',
        'seeds',
        'updated_at',
        'updated_by',
      ]);
    }
    t.notMatch(res.body.toString(), /"members"|metadata_xml/);
  });

  t.test('unknown tag, unknown member, or a member no selector of the tag covers: 404', async (t) => {
    for (const [tag, member] of [
      [9, 101],
      [1, 999],
      [1, 105],
      [2, 106],
    ]) {
      const res = await call(gw, { method: 'GET', target: target(tag as number, member as number) });
      t.equal(res.status, 404, `${tag}/${member}`);
      t.equal(errorOf(res).message, 'resource not found');
    }
  });

  t.test('ids must be decimal 1..2147483647', async (t) => {
    for (const [tag, member, param] of [
      ['0', '101', 'asset_group_tag_id'],
      ['-1', '101', 'asset_group_tag_id'],
      ['abc', '101', 'asset_group_tag_id'],
      ['2147483648', '101', 'asset_group_tag_id'],
      ['1.0', '101', 'asset_group_tag_id'],
      ['+1', '101', 'asset_group_tag_id'],
      ['1', '0x65', 'asset_group_member_id'],
      ['1', '99999999999', 'asset_group_member_id'],
      ['1', '%20101', 'asset_group_member_id'],
    ]) {
      const res = await call(gw, { method: 'GET', target: target(tag as string, member as string) });
      t.equal(res.status, 400, `${tag}/${member}`);
      t.same(errorOf(res), { status: 400, context: `path:${param}`, message: 'id is malformed' });
    }
    const max = await call(gw, { method: 'GET', target: target('2147483647', '101') });
    t.equal(max.status, 404, 'the largest id is well-formed');
  });

  t.test('a bad tag id is reported before a bad member id', async (t) => {
    const res = await call(gw, { method: 'GET', target: target('x', 'y') });
    t.equal(errorOf(res).context, 'path:asset_group_tag_id');
  });

  t.test('stage order: permission before path parameters', async (t) => {
    const res = await call(gw, { method: 'GET', target: target('x', 'y'), token: TOKENS.writer });
    t.equal(res.status, 403);
    t.same(errorOf(res), { status: 403, context: 'permission', message: 'not authorized' });
  });

  t.test('authentication before everything but routing and Prefer', async (t) => {
    const res = await call(gw, { method: 'GET', target: target('x', 'y'), token: TOKENS.none });
    t.equal(res.status, 403);
  });
});
