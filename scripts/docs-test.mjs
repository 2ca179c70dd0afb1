// `npm run test:docs`: runs every hands-on block of the documentation as a reader would, and fails
// when one breaks. A block is hands-on when its fence says so: ```sh run. Blocks that cannot run here
// (kubectl, docker, a real identity provider) are fenced ```sh and left alone.
//
// As the README says, `npm start` runs in another terminal: this script starts it (its own process
// group), waits for its `listening` line, then runs each page's blocks in order, all of one page in
// one bash (so a page's variables carry from block to block), from the repository's root, with
// `set -euo pipefail`. A page's processes are stopped when it ends, and `npm start` at the end.
// `npm run test:docs -- PAGE…` runs those pages only (DOCS_TEST_VERBOSE=1: with what they print). It needs PostgreSQL (GATEWAY_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/postgres) and
// Redis on 127.0.0.1:6379, and ports 8080/9090 (npm start) and 8081/9091, 8443/9443, 3000 free.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The pages, in the order the README's map lists them (a reader's order). */
const PAGES = [
  'README.md',
  'docs/running.md',
  'docs/configuration.md',
  'docs/authentication.md',
  'docs/identity-providers.md',
  'docs/api-tokens.md',
  'docs/front-door.md',
  'docs/audit.md',
  'docs/backends.md',
  'docs/upstream-targets.md',
  'docs/rate-limits.md',
  'docs/tls.md',
  'docs/observability.md',
  'docs/deploying.md',
  'docs/troubleshooting.md',
  'docs/decisions.md',
  'docs/architecture.md',
  'CONTRIBUTING.md',
];
const PAGE_TIMEOUT_MS = 120_000;
const TOTAL_TIMEOUT_MS = 300_000;

/** The ```sh run blocks of a page's text, in order. */
export function runnableBlocks(text) {
  const blocks = [];
  const fence = /^```sh run[ \t]*\n([\s\S]*?)^```[ \t]*$/gm;
  for (const m of text.matchAll(fence)) blocks.push(m[1]);
  return blocks;
}

/** The process groups started (npm start, the page running): stopped if this script is stopped. */
const running = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of running) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {}
    }
    process.exit(1);
  });
}

/** Whether something already listens on 127.0.0.1:`port`. */
const busy = (port) =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** Stops a process group (SIGTERM, then SIGKILL after 10 s), resolving once its leader has exited. */
function stopGroup(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return Promise.resolve();
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  }, 10_000);
  return exited.finally(() => clearTimeout(timer));
}

/** Runs one page's blocks in one bash; resolves to its exit status and what it printed. */
function runPage(page, blocks) {
  const script = [
    'set -euo pipefail',
    ...blocks.flatMap((block, i) => [`echo "::block ${i + 1} of ${page}::" >&2`, block]),
  ].join('\n');
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], {
      cwd: ROOT,
      detached: true,
      env: {
        ...process.env,
        GATEWAY_POSTGRES_URL: process.env.GATEWAY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
      },
    });
    running.add(child);
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      output += `\n(docs test: ${page} ran past ${PAGE_TIMEOUT_MS / 1000} s)\n`;
      stopGroup(child);
    }, PAGE_TIMEOUT_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      // Whatever the page left running in its group (a gateway it started and did not stop).
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {}
      resolve({ status: code ?? signal, output });
    });
  });
}

async function main() {
  const started = Date.now();
  for (const port of [8080, 9090, 8081, 9091, 8443, 9443, 3000]) {
    if (await busy(port)) {
      console.error(`docs test: port ${port} is busy on this machine: free it (the pages use it)`);
      return 1;
    }
  }
  const gateway = spawn('npm', ['start'], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(gateway);
  let log = '';
  const listening = new Promise((resolve) => {
    const look = (d) => {
      log += d;
      if (log.includes('"msg":"listening"')) resolve(true);
    };
    gateway.stdout.on('data', look);
    gateway.stderr.on('data', look);
    gateway.on('exit', () => resolve(false));
    setTimeout(() => resolve(false), 120_000).unref();
  });
  try {
    if (!(await listening)) {
      console.error(`docs test: npm start did not start:\n${log}`);
      return 1;
    }
    let failed = 0;
    // `npm run test:docs -- docs/tls.md`: those pages only.
    const only = process.argv.slice(2);
    for (const page of only.length > 0 ? only : PAGES) {
      let text;
      try {
        text = readFileSync(path.join(ROOT, page), 'utf8');
      } catch {
        continue; // a page another branch adds
      }
      const blocks = runnableBlocks(text);
      if (blocks.length === 0) continue;
      const t0 = Date.now();
      const { status, output } = await runPage(page, blocks);
      const seconds = ((Date.now() - t0) / 1000).toFixed(1);
      if (status === 0) {
        console.log(`ok ${page}: ${blocks.length} block(s) in ${seconds} s`);
        if (process.env.DOCS_TEST_VERBOSE) console.log(output);
      } else {
        failed++;
        const block = [...output.matchAll(/::block (\d+) of /g)].at(-1)?.[1] ?? '?';
        console.log(`not ok ${page}: block ${block} failed (exit ${status}) after ${seconds} s\n${output}`);
      }
      if (Date.now() - started > TOTAL_TIMEOUT_MS) {
        console.log(`not ok: the docs test ran past ${TOTAL_TIMEOUT_MS / 1000} s`);
        return 1;
      }
    }
    console.log(`docs test: ${failed === 0 ? 'every page ran' : `${failed} page(s) failed`} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    return failed === 0 ? 0 : 1;
  } finally {
    await stopGroup(gateway);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
