/**
 * Reads a YAML configuration, resolves `${env:NAME}` / `${file:PATH}` references, validates it against
 * the closed schema and returns it frozen. Every problem is reported with the key's path.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { resolveTlsPaths } from './tls.js';
import { ConfigReference } from './leaves.js';
import { type Config, configSchema } from './schema.js';

/** A configuration that cannot be used; `problems` lists each one as `key.path: reason`. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

const REFERENCE = /^\$\{(env|file):([^}]*)\}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface LoadOptions {
  /** Resolve references (default true); false only checks their form. */
  resolve?: boolean;
  /** The environment references read (default: process.env, read here only). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** Loads and validates the configuration file at `file`. Throws `ConfigError`. */
export function loadConfigFile(file: string, options: LoadOptions = {}): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  return parseConfig(text, path.dirname(path.resolve(file)), options);
}

/**
 * Validates configuration text. Relative paths in references and in backend `path` keys are taken
 * relative to `baseDir` (the configuration file's folder).
 */
export function parseConfig(text: string, baseDir: string, options: LoadOptions = {}): Config {
  // Anchors, aliases and `<<` merge keys are YAML an operator may use; an alias bomb is bounded.
  const doc = parseDocument(text, { uniqueKeys: true, merge: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      doc.errors.map((e) => `YAML: ${(e.message.split('\n')[0] as string).replace(/:$/, '')}`),
    );
  }
  let plain: unknown;
  try {
    plain = doc.toJS({ maxAliasCount: 1000 });
  } catch (err) {
    throw new ConfigError([`YAML: ${(err as Error).message}`]);
  }
  const problems: string[] = [];
  const env = options.env ?? process.env;
  const raw = withReferences(plain, [], (source, kind, target, at) => {
    if (kind === 'env' && !ENV_NAME.test(target)) {
      problems.push(`${at}: ${source} is not a valid environment variable name`);
      return undefined;
    }
    if (kind === 'file' && target.trim() === '') {
      problems.push(`${at}: ${source} names no file`);
      return undefined;
    }
    if (options.resolve === false) return new ConfigReference(source, undefined);
    if (kind === 'env') {
      const value = env[target];
      if (value === undefined) problems.push(`${at}: environment variable ${target} is not set`);
      return new ConfigReference(source, value ?? '');
    }
    try {
      const value = readFileSync(path.resolve(baseDir, target), 'utf8').replace(/\r?\n$/, '');
      return new ConfigReference(source, value);
    } catch (err) {
      problems.push(
        `${at}: file ${target} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
      return new ConfigReference(source, '');
    }
  });
  if (problems.length > 0) throw new ConfigError(problems);

  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.flatMap((i) =>
        i.code === 'unrecognized_keys'
          ? i.keys.map((k) => `${formatPath([...i.path, k])}: unknown key`)
          : [
              `${formatPath(i.path) || '(top level)'}: ${i.message.replace('received ConfigReference', 'received a ${env:}/${file:} reference, which may stand only for a scalar')}`,
            ],
      ),
    );
  }
  const config = result.data;
  for (const backend of Object.values(config.backends)) {
    if (backend.type !== 'local') continue;
    backend.path = path.resolve(baseDir, backend.path);
    if ('seed' in backend && backend.seed !== undefined) backend.seed = path.resolve(baseDir, backend.seed);
  }
  if (config.audit?.store?.type === 'file')
    config.audit.store.path = path.resolve(baseDir, config.audit.store.path);
  resolveTlsPaths(config as unknown as Record<string, unknown>, baseDir);
  return deepFreeze(config);
}

type Resolver = (source: string, kind: string, target: string, at: string) => ConfigReference | undefined;

/**
 * The parsed YAML with every `${env:}` / `${file:}` string turned into a `ConfigReference`. Objects
 * are copied key by key with `defineProperty`, so a `__proto__` key stays a key (and is refused as
 * unknown) instead of setting a prototype.
 */
function withReferences(value: unknown, at: PropertyKey[], resolve: Resolver): unknown {
  if (typeof value === 'string') {
    const m = REFERENCE.exec(value);
    return m ? resolve(value, m[1] as string, m[2] as string, formatPath(at)) : value;
  }
  if (Array.isArray(value)) return value.map((item, i) => withReferences(item, [...at, i], resolve));
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      const v = withReferences(child, [...at, key], resolve);
      Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

function formatPath(at: readonly PropertyKey[]): string {
  return at.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** The value at a dotted key path (`server.port`) of a configuration: what a reload compares. */
export function valueAt(config: Config, key: string): unknown {
  return key.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown>)[k], config);
}
