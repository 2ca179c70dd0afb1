/**
 * The front door's route table (contract §11): the operator's `routes`, in order, then the service's
 * own routes (its public router, row by row), then 404. Matched on the method and the path's
 * segments decoded once and cleaned, after the three operations (which stay the gateway's). Each
 * route is named, and says whether the gateway authenticates its requests (`required`), serves them
 * without credentials (`none`) or hides the path (`deny`).
 */
import { unescape } from 'node:querystring';
import type { RouteConfig } from '../config/routes.js';
import type { Route, RouteRule } from './route.js';

/** The table of one configuration: the rule a request matches, or undefined (404). */
export interface RouteTable {
  match(method: string, segments: readonly string[]): Route | undefined;
  /** Every rule, in the order they are tried (each route's stages are made once from these). */
  readonly rules: readonly RouteRule[];
}

/** Whether decoded `segments` are one path of a row. */
type PathTest = (segments: readonly string[]) => boolean;

interface Row {
  readonly rule: RouteRule;
  /** Each (methods, path) a row covers; no methods: every method. */
  readonly spellings: ReadonlyArray<readonly [methods: readonly string[] | undefined, test: PathTest]>;
}

/** Exactly `words`; `*` stands for any non-empty segment. */
const exact =
  (...words: string[]): PathTest =>
  (s) =>
    s.length === words.length && words.every((w, i) => (w === '*' ? s[i] !== '' : w === s[i]));

/** `words` (as `exact`) and anything below them (`/api/v2/swagger` and `/api/v2/swagger/…`). */
const andBelow =
  (...words: string[]): PathTest =>
  (s) =>
    s.length >= words.length && words.every((w, i) => (w === '*' ? s[i] !== '' : w === s[i]));

/** Everything strictly below `words` (`/ui/` and `/ui/x` for `ui`, not `/ui`). */
const below =
  (...words: string[]): PathTest =>
  (s) =>
    s.length > words.length && words.every((w, i) => w === s[i]);

const GET = ['GET'];
const READ = ['GET', 'HEAD'];
const POST = ['POST'];

/**
 * The service's own routes *(reference: the service's router)*. `upload`'s body limit is
 * `passthrough.max_body`; `passthrough` is every other `/api/v2` request.
 */
function builtIns(maxBody: number): Row[] {
  return [
    {
      rule: { name: 'login', auth: 'none', rateLimit: { limit: 1, window: 1000 } },
      spellings: [[POST, exact('api', 'v2', 'login')]],
    },
    {
      rule: { name: 'sso', auth: 'none' },
      spellings: [
        [POST, exact('api', 'v2', 'logout')],
        [GET, exact('api', 'v2', 'saml', 'sso')],
        [GET, exact('api', 'v2', 'sso-providers')],
        [undefined, andBelow('api', 'v2', 'login', 'saml', '*')],
        [GET, exact('api', 'v2', 'sso', '*', 'login')],
        [undefined, andBelow('api', 'v2', 'sso', '*', 'callback')],
        [GET, exact('api', 'v2', 'sso', '*', 'metadata')],
      ],
    },
    {
      rule: { name: 'spec', auth: 'none' },
      spellings: [
        [undefined, andBelow('api', 'v2', 'swagger')],
        [GET, exact('api', 'v2', 'spec')],
      ],
    },
    {
      rule: { name: 'ui', auth: 'none' },
      spellings: [
        [GET, exact('')],
        [READ, exact('ui')],
        [READ, below('ui')],
      ],
    },
    { rule: { name: 'version', auth: 'required' }, spellings: [[GET, exact('api', 'version')]] },
    {
      rule: { name: 'upload', auth: 'required', permission: 'passthrough', maxBody },
      spellings: [[POST, exact('api', 'v2', 'file-upload', '*')]],
    },
    {
      rule: { name: 'passthrough', auth: 'required', permission: 'passthrough' },
      spellings: [[undefined, andBelow('api', 'v2')]],
    },
  ];
}

/** An operator's entry as a row: its path or prefix, decoded once as the router decodes requests. */
function operatorRow(entry: RouteConfig): Row {
  const given = (entry.path ?? entry.prefix) as string;
  const words = given
    .slice(1)
    .split('/')
    .map((s) => unescape(s));
  const test: PathTest =
    entry.prefix !== undefined
      ? below(...words.slice(0, -1))
      : (s) => s.length === words.length && words.every((w, i) => w === s[i]);
  const rule: RouteRule = {
    name: entry.name,
    auth: entry.auth,
    ...(entry.auth === 'required' && entry.permission !== undefined && { permission: entry.permission }),
    ...(entry.rate_limit !== undefined && { rateLimit: entry.rate_limit }),
    ...(entry.max_body !== undefined && { maxBody: entry.max_body }),
    ...(entry.max_wait !== undefined && { maxWait: entry.max_wait }),
  };
  return { rule, spellings: [[entry.methods, test]] };
}

/** The table of the operator's `routes` before the service's own (a built-in replaced by name). */
export function createRouteTable(routes: readonly RouteConfig[], passthroughMaxBody: number): RouteTable {
  const own = routes.map(operatorRow);
  const named = new Set(routes.map((r) => r.name));
  const rows = [...own, ...builtIns(passthroughMaxBody).filter((row) => !named.has(row.rule.name))];
  const answers = new Map<Row, Route>(
    rows.map((row) => [
      row,
      Object.freeze({
        operation: operationOf(row.rule),
        params: NO_PARAMS,
        name: row.rule.name,
        rule: row.rule,
      }),
    ]),
  );
  return {
    rules: rows.map((row) => row.rule),
    match(method, segments) {
      // TRACE would echo credentials and cookies back; CONNECT is no request for the service.
      if (method === 'TRACE' || method === 'CONNECT') return undefined;
      for (const row of rows) {
        for (const [methods, test] of row.spellings) {
          if ((methods === undefined || methods.includes(method)) && test(segments)) return answers.get(row);
        }
      }
      return undefined;
    },
  };
}

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

/** The `operation` of a rule's requests: `public` without credentials, else the pass-through. */
function operationOf(rule: RouteRule): Route['operation'] {
  if (rule.auth === 'none') return 'public';
  return rule.auth === 'deny' ? 'unmatched' : 'passthrough';
}
