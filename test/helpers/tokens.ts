/**
 * The token store in tests: encryption keys, the `token_store` configuration for a database, the
 * real `gateway tokens` command (dist/cli.js), and requests signed with a store token.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { runTokens } from '../../src/cli/tokens.js';
import type { Test } from 'tap';
import { call, ROOT, startGateway, type TestGateway, type TestResponse, type Tok } from './gateway.js';
import { node } from './node-child.js';

/** Two encryption keys (32 bytes, base64), for a rotation of the encryption key. */
export const ENCRYPTION_KEYS = [
  Buffer.alloc(32, 0x11).toString('base64'),
  Buffer.alloc(32, 0x22).toString('base64'),
] as const;

/** `auth.signature.token_store` for the database at `url`, with `over` applied. */
export function tokenStore(url: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'postgres',
    url,
    encryption_key: ENCRYPTION_KEYS[0],
    poll: '30s',
    last_used_interval: '1m',
    ...over,
  };
}

/** What a command printed. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `node dist/cli.js ...args` (the real command) and resolves once it exits. */
export function gatewayCli(...args: string[]): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(...node([path.join(ROOT, 'dist', 'cli.js'), ...args]), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * `gateway tokens <command> --config <file> ...args`, run in this process (the same code as the
 * command, without a node start per call); `test/cli/tokens.test.ts` runs the real dist/cli.js.
 */
export async function tokensCli(file: string, command: string, ...args: string[]): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  const code = await runTokens([command, '--config', file, ...args], {
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    env: {},
  });
  return { code, stdout, stderr };
}

/** Creates a token with `gateway tokens create --json`; resolves with it as a test token. */
export async function createToken(
  file: string,
  subject: string,
  permissions = '*',
  ...args: string[]
): Promise<Tok & { name: string | null; expires_at: string | null }> {
  const r = await tokensCli(
    file,
    'create',
    '--subject',
    subject,
    '--permissions',
    permissions,
    '--json',
    ...args,
  );
  if (r.code !== 0) throw new Error(`tokens create failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

export const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';

/** A signed GET of the checksum with `token`. */
export function get(gw: { port: number }, token: Tok): Promise<TestResponse> {
  return call(gw, { method: 'GET', target: CHECKSUM, token });
}

/** The status of a signed GET of the checksum with `token`. */
export async function status(gw: { port: number }, token: Tok): Promise<number> {
  return (await get(gw, token)).status;
}

/** A gateway (closed when `t` ends) whose token store is the schema at `url`, `over` applied. */
export async function storeGateway(
  t: Test,
  url: string,
  over: Record<string, unknown> = {},
): Promise<TestGateway> {
  const gw = await startGateway({ auth: { signature: { token_store: tokenStore(url, over) } } });
  t.teardown(() => gw.close());
  return gw;
}
