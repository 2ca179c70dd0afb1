#!/usr/bin/env node
/**
 * The `gateway` command: `gateway --config FILE` starts the gateway, `gateway check-config FILE
 * [--resolve]` validates a configuration, `gateway sign ...` prints signed-request headers,
 * `gateway verify ...` explains a signed request's signature, `gateway jwt ...` mints an HS256 token
 * for a configuration, `gateway schema` prints the configuration's JSON Schema, `gateway migrate` and
 * `gateway import` prepare and fill the PostgreSQL store, `gateway tokens ...` manages the token store, `gateway
 * audit ...` verifies and lists the audit trail.
 */
import { parseArgs } from 'node:util';

// Each command loads only what it needs (imported when it runs): `check-config` or `sign` need not
// load the gateway's metrics, HTTP clients and database drivers, and start in a fraction of the time.

const USAGE = `usage:
  gateway --config FILE                      start the gateway
  gateway check-config FILE [--resolve]      validate a configuration (exit 0 or 1)
  gateway schema                             print the configuration's JSON Schema
  gateway jwt --config FILE [--subject S] [--permissions P,...] [--expires-in 1h]
                                             print an HS256 bearer token the configuration accepts
  gateway sign --token-id ID --method M --uri PATH[?QUERY] [...]   print signed-request headers
  gateway verify --token-id ID --method M --uri U --date D --signature S [--body FILE]
                                             replay a captured request's signature step by step
  gateway migrate --postgres URL             apply the PostgreSQL schema migrations
  gateway import --postgres URL [--sso-providers FILE] [--asset-group-tags FILE]
                                             load the local JSON stores into PostgreSQL
  gateway tokens create|rotate|list|revoke|import|reencrypt --config FILE [...]
                                             manage the token store (gateway tokens --help)
  gateway audit verify|list --config FILE [...]
                                             check the audit trail's chain, print its entries
                                             (gateway audit --help)
`;

/** Where a command writes, and the environment it reads: the process's own. */
const IO = {
  stdout: (s: string) => process.stdout.write(s),
  stderr: (s: string) => process.stderr.write(s),
  env: process.env,
};

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  if (command === 'sign' || command === 'verify') {
    const run =
      command === 'sign'
        ? (await import('./cli/sign.js')).runSign
        : (await import('./cli/verify.js')).runVerify;
    return run(argv.slice(1), IO);
  }
  if (command === 'check-config') return checkConfig(argv.slice(1));
  if (command === 'schema') {
    if (argv.length > 1) {
      process.stderr.write(`gateway schema: takes no arguments\n${USAGE}`);
      return 2;
    }
    const { configJsonSchema } = await import('./config/json-schema.js');
    process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    return 0;
  }
  if (command === 'jwt') {
    const { runJwt } = await import('./cli/jwt.js');
    return runJwt(argv.slice(1), IO);
  }
  if (command === 'tokens') {
    const { runTokens } = await import('./cli/tokens.js');
    return runTokens(argv.slice(1), IO);
  }
  if (command === 'audit') {
    const { runAudit } = await import('./cli/audit.js');
    return runAudit(argv.slice(1), IO);
  }
  if (command === 'migrate' || command === 'import') {
    const run =
      command === 'migrate'
        ? (await import('./cli/migrate.js')).runMigrate
        : (await import('./cli/import.js')).runImport;
    return run(argv.slice(1), IO);
  }
  let values: { config?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { config: { type: 'string' }, help: { type: 'boolean' } },
    }));
  } catch (err) {
    process.stderr.write(`gateway: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!values.config) {
    process.stderr.write(`gateway: --config FILE is required\n${USAGE}`);
    return 2;
  }
  const { runGateway } = await import('./main.js');
  // The gateway's own timers and pools must not keep a stopped process alive.
  process.exit(await runGateway(values.config));
}

async function checkConfig(args: string[]): Promise<number> {
  let parsed: ReturnType<
    typeof parseArgs<{ args: string[]; allowPositionals: true; options: { resolve: { type: 'boolean' } } }>
  >;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { resolve: { type: 'boolean' } } });
  } catch (err) {
    process.stderr.write(`gateway check-config: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const [file] = parsed.positionals;
  if (!file || parsed.positionals.length > 1) {
    process.stderr.write(`gateway check-config: exactly one FILE is required\n${USAGE}`);
    return 2;
  }
  const { ConfigError, loadConfigFile } = await import('./config/load.js');
  const { configWarnings } = await import('./config/warnings.js');
  let config;
  try {
    config = loadConfigFile(file, { resolve: parsed.values.resolve === true });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${file}: ${err.message}\n`);
    return 1;
  }
  // TLS files are checked with or without --resolve, each named by its key path, never printed.
  const { tlsProblems } = await import('./cli/tls-check.js');
  const problems = tlsProblems(config);
  if (problems.length > 0) {
    process.stderr.write(`${file}: invalid configuration:\n  ${problems.join('\n  ')}\n`);
    return 1;
  }
  for (const warning of configWarnings(config)) process.stderr.write(`${file}: warning: ${warning}\n`);
  // Resolved, the token store's URL can be read: say which YAML tokens it overrides.
  if (parsed.values.resolve === true) {
    const { shadowedTokens } = await import('./cli/shadowed-tokens.js');
    for (const warning of await shadowedTokens(config))
      process.stderr.write(`${file}: warning: ${warning}\n`);
  }
  process.stdout.write(`${file}: configuration is valid\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`gateway: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  },
);
