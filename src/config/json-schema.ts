/**
 * The configuration's JSON Schema, derived from the one schema the gateway validates with
 * (`schema.ts`): editors check a `gateway.yaml` with it, `gateway schema` prints it and
 * `npm run docs:gen` writes it (and the configuration reference) from it. It describes what an
 * operator writes: durations and sizes as text, every scalar also as a `${env:}`/`${file:}` reference.
 */
import { z } from 'zod';
import { leafForm, type LeafForm, shownDuration } from './leaves.js';
import { meaningOf } from './meanings.js';
import { configSchema, namedShapes } from './schema.js';

type Json = Record<string, unknown>;

const REFERENCE: Json = {
  type: 'string',
  pattern: '^\\$\\{(env|file):[^}]*\\}$',
  description:
    'a ${env:NAME} or ${file:PATH} reference: the variable or the file (relative to the configuration file; one trailing newline dropped) gives the value, read as the key’s type',
};

/** `bytes` as an operator would write it: `64KiB`, `10MiB`, or plain bytes. */
function shownSize(bytes: number): number | string {
  for (const [unit, size] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return bytes;
}

/** A default as written in YAML: durations and sizes in their units. */
function written(value: unknown, form: LeafForm | undefined): unknown {
  if (typeof value !== 'number' || form?.written === undefined) return value;
  return form.written.title === 'duration' ? shownDuration(value) : shownSize(value);
}

/** The JSON Schema of a leaf: its own form, or a reference to a value of that form. */
function leafJson(form: LeafForm): Json {
  const own = form.written ?? (z.toJSONSchema(form.inner, { io: 'input', unrepresentable: 'any' }) as Json);
  const { $schema: _ignored, ...rest } = own;
  return { anyOf: [rest, { $ref: '#/$defs/reference' }] };
}

/** Replaces every key of `target` by those of `source`. */
function replace(target: Json, source: Json): void {
  for (const key of Object.keys(target)) delete target[key];
  Object.assign(target, source);
}

/** Adds each key's meaning (`meanings.ts`) where the schema itself gives none, walking by key path. */
function describe(node: unknown, at: string): void {
  if (node === null || typeof node !== 'object') return;
  const json = node as Json;
  if (json.properties && typeof json.properties === 'object') {
    for (const [key, child] of Object.entries(json.properties as Record<string, Json>)) {
      const path = at === '' ? key : `${at}.${key}`;
      const meaning = meaningOf(path);
      if (meaning !== undefined && child.description === undefined) child.description = meaning;
      describe(child, path);
    }
  }
  if (json.items) describe(json.items, `${at}[]`);
  if (json.additionalProperties && typeof json.additionalProperties === 'object')
    describe(json.additionalProperties, `${at}.*`);
  for (const key of ['oneOf', 'anyOf', 'allOf'] as const) {
    if (Array.isArray(json[key])) for (const variant of json[key] as Json[]) describe(variant, at);
  }
}

/** The configuration's JSON Schema (draft 2020-12). */
export function configJsonSchema(): Json {
  const json = z.toJSONSchema(configSchema, {
    io: 'input',
    unrepresentable: 'any',
    metadata: namedShapes,
    override({ zodSchema, jsonSchema }) {
      const schema = zodSchema as unknown as z.ZodType;
      const form = leafForm(schema);
      if (form) return replace(jsonSchema as Json, leafJson(form));
      const def = (schema as unknown as { _zod: { def: Json } })._zod.def;
      if (def.type === 'default' || def.type === 'prefault') {
        const inner = def.innerType as z.ZodType;
        (jsonSchema as Json).default = written(def.defaultValue, leafForm(inner));
      }
    },
  }) as Json;
  const defs = (json.$defs ?? {}) as Record<string, Json>;
  const described: Json = {
    $schema: json.$schema,
    title: 'bh-gateway configuration',
    description:
      'The gateway’s configuration file (YAML). Generated from src/config/schema.ts by `npm run docs:gen`; `gateway schema` prints it.',
    ...Object.fromEntries(Object.entries(json).filter(([k]) => !['$schema', '$defs'].includes(k))),
    $defs: { ...defs, reference: REFERENCE },
  };
  describe(described, '');
  for (const [id, def] of Object.entries(defs)) describe(def, `<${id}>`);
  return described;
}
