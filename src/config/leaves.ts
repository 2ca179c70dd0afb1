/**
 * The scalar leaves of the configuration schema: each may be written inline or given by a
 * `${env:NAME}` / `${file:PATH}` reference, whose text is then read as the leaf's type.
 */
import { z } from 'zod';
import { parseDuration, parseSize } from './units.js';

/**
 * A `${env:NAME}` or `${file:PATH}` reference found in the YAML. `text` is the resolved value; it is
 * undefined when references are only checked for form (`check-config` without `--resolve`).
 */
export class ConfigReference {
  constructor(
    readonly source: string,
    readonly text: string | undefined,
  ) {}
}

/** What the JSON Schema of the configuration says of a leaf: its inner schema, or how it is written. */
export interface LeafForm {
  readonly inner: z.ZodType;
  /** The written form of a leaf whose inner schema converts (a duration, a size), as JSON Schema. */
  readonly written?: Readonly<Record<string, unknown>>;
}

/** Each leaf's form, by its transform: what `.refine()` or `.describe()` copies of the leaf share. */
const LEAVES = new WeakMap<object, LeafForm>();

const transformOf = (schema: z.ZodType): object | undefined => {
  const def = (schema as unknown as { _zod: { def: { type: string; out?: object } } })._zod.def;
  return def.type === 'pipe' ? def.out : undefined;
};

/** The form of `schema` when it is a leaf made by `leaf()`; undefined otherwise. */
export function leafForm(schema: z.ZodType): LeafForm | undefined {
  const transform = transformOf(schema);
  return transform === undefined ? undefined : LEAVES.get(transform);
}

/**
 * A scalar leaf that may also be given by reference: the reference's text is converted by `fromText`
 * and then checked by `inner`, so `port: ${env:PORT}` is a number. An unresolved reference passes.
 */
export function leaf<T>(
  inner: z.ZodType<T>,
  fromText: (text: string) => unknown = (t) => t,
  written?: Record<string, unknown>,
): z.ZodType<T> {
  const schema = z.unknown().transform((value, ctx) => {
    if (value instanceof ConfigReference && value.text === undefined) return value as unknown as T;
    const input = value instanceof ConfigReference ? fromText(value.text as string) : value;
    const result = inner.safeParse(input);
    if (result.success) return result.data;
    for (const issue of result.error.issues) {
      // A referenced value may be a secret: the message names the reference, never the value.
      const message =
        value instanceof ConfigReference
          ? hide(issue.message, value.text as string, value.source)
          : issue.message;
      ctx.addIssue({ code: 'custom', message, path: issue.path as PropertyKey[], input });
    }
    return z.NEVER;
  }) as unknown as z.ZodType<T>;
  LEAVES.set(transformOf(schema) as object, { inner, written });
  return schema;
}

/** `message` with every appearance of `secret` replaced by the name of the reference it came from. */
function hide(message: string, secret: string, source: string): string {
  const named = `(the value of ${source})`;
  return secret === ''
    ? message
    : message.split(JSON.stringify(secret)).join(named).split(secret).join(named);
}

export const asNumber = (t: string) => (/^-?\d+$/.test(t.trim()) ? Number(t.trim()) : t);
const asBool = (t: string) => (t.trim() === 'true' ? true : t.trim() === 'false' ? false : t);

export const str = (min = 0) => leaf(z.string().min(min, `must not be empty`));
export const int = (min: number, max: number) => leaf(z.number().int().min(min).max(max), asNumber);
export const bool = () => leaf(z.boolean(), asBool);

/** A duration in milliseconds, written `500ms`, `30s`, `10m`, `1h` or as plain seconds. */
export const duration = (max = 24 * 3_600_000, min = 0) =>
  leaf(
    z.union([z.string(), z.number()]).transform((v, ctx) => {
      const ms = parseDuration(v);
      if (ms === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `invalid duration ${JSON.stringify(v)} (write e.g. 500ms, 30s, 10m, 1h)`,
        });
        return z.NEVER;
      }
      if (ms > max || ms < min) {
        ctx.addIssue({
          code: 'custom',
          message: `duration ${JSON.stringify(v)} is out of range: must be from ${shownDuration(min)} to ${shownDuration(max)}`,
        });
        return z.NEVER;
      }
      return ms;
    }),
    undefined,
    {
      title: 'duration',
      description: `from ${shownDuration(min)} to ${shownDuration(max)}`,
      anyOf: [
        { type: 'string', pattern: '^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)?\\s*$' },
        { type: 'number', minimum: 0 },
      ],
    },
  );

/** `ms` as an operator would write it: `0s`, `10ms`, `1s`, `5m`, `24h`. */
export function shownDuration(ms: number): string {
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return ms === 0 ? '0s' : `${ms}ms`;
}

/** A size in bytes, written as plain bytes or `64KiB`, `10MiB`, `1GiB`, `64kB`. */
export const size = (min = 1) =>
  leaf(
    z.union([z.string(), z.number()]).transform((v, ctx) => {
      const bytes = parseSize(v);
      if (bytes === undefined || bytes < min) {
        ctx.addIssue({
          code: 'custom',
          message: `invalid size ${JSON.stringify(v)} (e.g. 4096, 64KiB, 10MiB)`,
        });
        return z.NEVER;
      }
      return bytes;
    }),
    undefined,
    {
      title: 'size',
      description: min > 1 ? `at least ${min} bytes` : undefined,
      anyOf: [
        { type: 'string', pattern: '^\\s*\\d+\\s*(B|kB|KB|KiB|MB|MiB|GB|GiB)?\\s*$' },
        { type: 'integer', minimum: min },
      ],
    },
  );

/** The URL `u`, or undefined when it does not parse (zod's own check has said why). */
function parsedUrl(u: string): URL | undefined {
  return URL.canParse(u) ? new URL(u) : undefined;
}

/** An `http://` or `https://` base URL of a service: no query, fragment or credentials. */
export const httpUrl = () =>
  leaf(
    z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).refine((u) => {
      const url = parsedUrl(u);
      return !url || (url.search === '' && url.hash === '' && url.username === '' && url.password === '');
    }, 'must not carry a query, a fragment or credentials'),
  );

/** A document's URL (a key set): some providers need a query, but credentials or a fragment never work. */
export const documentUrl = () =>
  leaf(
    z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).refine((u) => {
      const url = parsedUrl(u);
      // `#` alone leaves `hash` empty: the text decides.
      return !url || (!u.includes('#') && url.username === '' && url.password === '');
    }, 'must not carry credentials or a fragment'),
  );

/** A token id: a UUID. */
export const uuid = () =>
  leaf(z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a UUID'));
