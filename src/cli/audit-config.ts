/**
 * The audit trail a gateway configuration file names, for `gateway audit`. The `audit` key is read
 * with its own schema (`config/audit.ts`) and the rest of the file as the gateway reads it, so the
 * command works whether or not the gateway's schema lists the key yet.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { auditSchema } from '../config/audit.js';
import { ConfigError, parseConfig } from '../config/load.js';
import { ConfigReference } from '../config/leaves.js';
import { type AuditTarget, auditStoreFor, resolveAuditPath } from '../audit/store-for.js';

const REFERENCE = /^\$\{(env|file):([^}]*)\}$/;

/** The trail `file` configures (undefined: none); throws `ConfigError` naming each problem. */
export function auditTargetOf(
  file: string,
  env: Readonly<Record<string, string | undefined>>,
): AuditTarget | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  const baseDir = path.dirname(path.resolve(file));
  const doc = parseDocument(text, { uniqueKeys: true, merge: true });
  const rawAudit: unknown = doc.errors.length === 0 ? doc.toJS({ maxAliasCount: 1000 })?.audit : undefined;
  if (doc.errors.length === 0 && doc.has('audit')) doc.delete('audit');
  // The rest of the file, checked as the gateway checks it (YAML errors are reported from here).
  const config = parseConfig(doc.errors.length === 0 ? String(doc) : text, baseDir, { env });
  if (rawAudit === undefined || rawAudit === null) return auditStoreFor(config);

  const problems: string[] = [];
  const resolved = withReferences(rawAudit, baseDir, env, 'audit', problems);
  if (problems.length > 0) throw new ConfigError(problems);
  const parsed = auditSchema.safeParse(resolved);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.flatMap((i) =>
        i.code === 'unrecognized_keys'
          ? i.keys.map((k) => `${['audit', ...i.path, k].join('.')}: unknown key`)
          : [`${['audit', ...i.path].join('.')}: ${i.message}`],
      ),
    );
  }
  return auditStoreFor({ ...config, audit: resolveAuditPath(parsed.data, baseDir) });
}

/** `value` with each `${env:NAME}` / `${file:PATH}` string resolved into a reference the leaves read. */
function withReferences(
  value: unknown,
  baseDir: string,
  env: Readonly<Record<string, string | undefined>>,
  at: string,
  problems: string[],
): unknown {
  if (typeof value === 'string') {
    const m = REFERENCE.exec(value);
    if (!m) return value;
    const [, kind, target] = m as unknown as [string, string, string];
    if (kind === 'env') {
      const resolved = env[target];
      if (resolved === undefined) problems.push(`${at}: environment variable ${target} is not set`);
      return new ConfigReference(value, resolved ?? '');
    }
    try {
      return new ConfigReference(
        value,
        readFileSync(path.resolve(baseDir, target), 'utf8').replace(/\r?\n$/, ''),
      );
    } catch (err) {
      problems.push(
        `${at}: file ${target} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
      return new ConfigReference(value, '');
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    Object.defineProperty(out, key, {
      value: withReferences(child, baseDir, env, `${at}.${key}`, problems),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
