/**
 * Where a bench row's gateway spends its time: `node --cpu-prof` of the row's gateway (the bench's
 * own configuration, stub upstreams and credentials) under a warm-up and a run of load, then the
 * shares of its profile by package or file, and the functions with the largest self time.
 * Give two rows to compare them side by side (the second column's growth is sorted first).
 *
 *   npm run build && node bench/profile.mjs gw-upstream gw-tracing-0.01
 *
 * Profiles go to bench/profiles/<row>/ (ignored by git), for Chrome's DevTools or speedscope.
 * `PROFILE_REQUESTS` (20,000) and `PROFILE_INTERVAL_US` (200) change the run.
 */
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copySampleData, createCredentials, startGateway, writeConfig } from './lib/gateway.mjs';
import { drive } from './lib/load.mjs';
import { stopAll, stopChild } from './lib/processes.mjs';
import { gatewayOptions, headerSets, startFixtures } from './lib/setup.mjs';
import { ROWS } from './rows.mjs';

const ROOT = new URL('../', import.meta.url).pathname;
const ids = process.argv.slice(2);
const rows = ids.map((id) => ROWS.find((r) => r.id === id));
if (ids.length === 0 || ids.length > 2 || rows.some((r) => r?.gateway === undefined)) {
  const gateways = ROWS.filter((r) => r.gateway).map((r) => r.id);
  console.error(`usage: node bench/profile.mjs ROW [ROW]  (gateway rows: ${gateways.join(', ')})`);
  process.exit(2);
}
const requests = Number(process.env.PROFILE_REQUESTS ?? 20_000);
const interval = Number(process.env.PROFILE_INTERVAL_US ?? 200);

const dir = mkdtempSync(join(tmpdir(), 'bh-profile-'));
const data = join(dir, 'data');
mkdirSync(data);
copySampleData(data);
const fx = await startFixtures(dir, data, createCredentials(), () => undefined);
const profiles = [];
try {
  for (const row of rows) {
    const out = join(ROOT, 'bench', 'profiles', row.id);
    rmSync(out, { recursive: true, force: true });
    const args = ['--cpu-prof', `--cpu-prof-dir=${out}`, `--cpu-prof-interval=${interval}`];
    const name = `${row.id}-profile`;
    const gw = await startGateway(dir, name, writeConfig(data, name, fx.creds, gatewayOptions(row, fx)), args);
    const target = { url: gw.url + row.path, headerSets: headerSets(row, fx, undefined), pgid: gw.child.pid };
    await drive(target, { connections: 50, amount: 3_000 });
    const run = await drive(target, { connections: 50, amount: requests });
    // The profile is written as the gateway exits (SIGTERM: a graceful stop).
    await stopChild(gw);
    const file = readdirSync(out).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error(`${row.id}: no profile written in ${out}`);
    profiles.push({ id: row.id, cpu: Math.round(run.cpuUs), ...shares(JSON.parse(readFileSync(join(out, file), 'utf8'))) });
  }
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
print(profiles);

/** Self time by package (node_modules), file (dist/), or Node's own code, and by function: % of the total. */
function shares(profile) {
  const self = new Map();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const byPlace = {};
  const byFunction = {};
  for (const node of profile.nodes) {
    const t = self.get(node.id) ?? 0;
    if (t === 0) continue;
    const { url, functionName, lineNumber } = node.callFrame;
    const place = placeOf(url, functionName);
    byPlace[place] = (byPlace[place] ?? 0) + (t / total) * 100;
    const fn = `${functionName || '(anonymous)'} ${url.split('/').pop()}:${lineNumber + 1}`;
    byFunction[fn] = (byFunction[fn] ?? 0) + (t / total) * 100;
  }
  return { byPlace, byFunction };
}

function placeOf(url, functionName) {
  if (url === '') return `(${functionName})`;
  const modules = url.lastIndexOf('node_modules/');
  if (modules !== -1) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url.replace(`file://${ROOT}`, '');
}

function print(list) {
  const table = (key, n) => {
    const names = new Set(list.flatMap((p) => Object.keys(p[key])));
    const growth = (k) => (list.length === 2 ? (list[1][key][k] ?? 0) - (list[0][key][k] ?? 0) : list[0][key][k]);
    const lines = [...names].sort((a, b) => growth(b) - growth(a)).slice(0, n);
    for (const k of lines) {
      const cells = list.map((p) => `${(p[key][k] ?? 0).toFixed(2).padStart(6)} %`).join('  ');
      console.log(`${k.slice(0, 70).padEnd(72)}${cells}`);
    }
  };
  console.log(`${''.padEnd(72)}${list.map((p) => p.id.padStart(8)).join('  ')}`);
  console.log(`${'CPU µs/req while profiled'.padEnd(72)}${list.map((p) => String(p.cpu).padStart(8)).join('  ')}`);
  console.log('\nself time by package or file (% of the profile)');
  table('byPlace', 25);
  console.log('\nfunctions (% of the profile)');
  table('byFunction', 25);
}
