/**
 * Readers of deploy/ for test/deploy.test.ts: the metric names in PromQL expressions, the names a
 * /metrics text exports, the expressions of the alert rules and the dashboards, and the manifests.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from './gateway.js';

/** The folder under test and its Kubernetes manifests. */
export const DEPLOY = path.join(ROOT, 'deploy');
export const K8S = path.join(DEPLOY, 'kubernetes');

// PromQL words that are neither functions (always followed by `(`) nor metric names.
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool']);
for (const k of ['and', 'or', 'unless', 'offset', 'inf', 'nan']) KEYWORDS.add(k);

/** The metric names a PromQL expression selects: not functions, labels, label values or keywords. */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ') // label values and regexes
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ') // Grafana variables
    .replace(/#[^\n]*/g, ' ')
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, ' '); // label lists
  const names = new Set<string>();
  // The look-behind skips the exponent or unit inside a number (`1e3`, `5m`).
  for (const m of bare.matchAll(/(?<![\w:.])[A-Za-z_:][\w:]*/g)) {
    const isCall = /^\s*\(/.test(bare.slice(m.index + m[0].length));
    if (!isCall && !KEYWORDS.has(m[0].toLowerCase())) names.add(m[0]);
  }
  return [...names];
}

/** Every series name a `/metrics` text serves: a histogram `x` only as x_bucket, x_sum and x_count. */
export function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`);
    else names.add(name as string);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(`${name}${s}`);
  }
  return names;
}

/** One PromQL expression and where it was found (file, alert or panel), for the failure message. */
export interface Expression {
  where: string;
  expr: string;
}

/** The files below `dir` whose names match `ext`, sorted, so failures list in a stable order. */
export function filesUnder(dir: string, ext: RegExp): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => ext.test(f))
    .map((f) => path.join(dir, f))
    .sort();
}

/** Every YAML document of a (possibly multi-document) file, as plain objects. */
export const docsOf = (file: string): any[] =>
  parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS());

/** Each alert's (or recording rule's) expression in deploy/prometheus: PrometheusRule or rules file. */
export function ruleExpressions(): Array<Expression & { rule: any }> {
  return filesUnder(path.join(DEPLOY, 'prometheus'), /\.ya?ml$/).flatMap((file) =>
    docsOf(file).flatMap((doc) =>
      (doc.spec?.groups ?? doc.groups ?? []).flatMap((g: any) =>
        g.rules.map((rule: any) => ({
          where: `${path.relative(ROOT, file)}: ${rule.alert ?? rule.record}`,
          expr: String(rule.expr),
          rule,
        })),
      ),
    ),
  );
}

/** Every panel target's `expr` and every query variable of the dashboards in deploy/grafana. */
export function dashboardExpressions(): Expression[] {
  const out: Expression[] = [];
  const walk = (value: unknown, where: string): void => {
    if (Array.isArray(value)) return value.forEach((v) => walk(v, where));
    if (!value || typeof value !== 'object') return;
    const node = value as Record<string, any>;
    const at = typeof node.title === 'string' ? `${where}: ${node.title}` : where;
    if (typeof node.expr === 'string') out.push({ where: at, expr: node.expr });
    for (const v of Object.values(node)) walk(v, at);
  };
  for (const file of filesUnder(path.join(DEPLOY, 'grafana'), /\.json$/)) {
    const dashboard = JSON.parse(readFileSync(file, 'utf8'));
    const where = path.relative(ROOT, file);
    walk(dashboard.panels, where);
    for (const v of dashboard.templating?.list ?? []) {
      if (v.type !== 'query') continue;
      const q: string = typeof v.query === 'string' ? v.query : v.query.query;
      // label_values(<selector>, <label>) and query_result(<expr>) hold PromQL; label_values(<label>) none.
      const m = /^\s*(?:label_values\((.*),\s*\w+\s*\)|query_result\((.*)\))\s*$/s.exec(q);
      out.push({ where: `${where}: variable ${v.name}`, expr: m ? (m[1] ?? m[2] ?? '') : '' });
    }
  }
  return out;
}

/** The gateway configuration that kustomization.yaml's configMapGenerator turns into the ConfigMap. */
export const CONFIG_FILE = path.join(K8S, 'gateway.yaml');

/** The plain Prometheus rules file generated from the PrometheusRule (no Kubernetes object). */
export const PLAIN_RULES = path.join(DEPLOY, 'prometheus', 'rules.yaml');

/** The YAML files of deploy/ that hold Kubernetes objects (not the generator's gateway.yaml, not plain rules). */
export function objectFiles(dir: string): string[] {
  return filesUnder(dir, /\.ya?ml$/).filter((f) => f !== CONFIG_FILE && f !== PLAIN_RULES);
}

/** The manifests of deploy/kubernetes by kind (and name where a kind repeats). */
export function manifests() {
  const docs = objectFiles(K8S).flatMap(docsOf);
  const one = (kind: string, name?: string) => {
    const found = docs.filter((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
    if (found.length !== 1) throw new Error(`expected one ${kind} ${name ?? ''}, found ${found.length}`);
    return found[0];
  };
  return { docs, one };
}
