/**
 * deploy/: the alert rules and the Grafana dashboard name only metrics the gateway exports, every YAML
 * file parses, the ConfigMap's gateway.yaml is a valid configuration, and the image, the manifests and
 * the configuration agree with one another (ports, probes, grace periods, writable paths, secrets).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigReference } from '../src/config/leaves.js';
import { loadConfigFile } from '../src/config/load.js';
import {
  CONFIG_FILE,
  DEPLOY,
  docsOf,
  exportedNames,
  type Expression,
  filesUnder,
  K8S,
  manifests,
  metricNames,
  objectFiles,
  dashboardExpressions,
  ruleExpressions,
} from './helpers/deploy.js';
import { request, ROOT, startGateway } from './helpers/gateway.js';
import { Pki } from './helpers/tls.js';

t.test('the extractor finds metric names and only them', async (t) => {
  const expr = `histogram_quantile(0.99, sum by (le, operation) (rate(x_bucket{operation!="unmatched"}[5m])))
    / ignoring (instance) group_left bogus_metric_total offset 1h > bool 1e3
    and on (job) absent(up{job=~"$job", instance="a:b"}) or sum without (kind) (y:recorded[1h:5m]) unless z`;
  t.same(metricNames(expr).sort(), ['bogus_metric_total', 'up', 'x_bucket', 'y:recorded', 'z']);
  const exported = exportedNames('# TYPE h histogram\n# TYPE c_total counter\n# TYPE s summary\n');
  t.same([...exported].sort(), ['c_total', 'h_bucket', 'h_count', 'h_sum', 's', 's_count', 's_sum']);
  t.same(
    metricNames('rate(c_total[5m]) + bogus_metric_total').filter((n) => !exported.has(n)),
    ['bogus_metric_total'],
    'a name the gateway does not export is reported',
  );
});

t.test('every metric named by the alert rules and the dashboard is exported', async (t) => {
  // With TLS on the API listener, so that the TLS metrics (which exist only then) are exported too.
  const pki = new Pki();
  t.teardown(() => pki.close());
  const pair = pki.ca('deploy-ca').issue('deploy', { cn: 'localhost', san: ['DNS:localhost'] });
  const gw = await startGateway({ server: { tls: { cert: pair.cert, key: pair.key } } });
  t.teardown(() => gw.close());
  const res = await request({ port: gw.adminPort }, { method: 'GET', target: '/metrics' });
  t.equal(res.status, 200);
  const exported = exportedNames(res.body.toString());
  t.ok(exported.has('gateway_request_duration_seconds_bucket') && exported.has('process_start_time_seconds'));

  const rules = ruleExpressions();
  const panels = dashboardExpressions();
  t.ok(rules.length >= 7 && panels.length >= 10, `${rules.length} rules, ${panels.length} dashboard queries`);
  const missing = [...rules, ...panels].flatMap(({ where, expr }) =>
    metricNames(expr)
      .filter((n) => !exported.has(n))
      .map((n) => `${where}: ${n}`),
  );
  t.same(missing, [], 'metrics named in deploy/ that /metrics does not export');

  // What the issue asks the rules and the dashboard to watch.
  const named = (list: Expression[]) => new Set(list.flatMap((e) => metricNames(e.expr)));
  const inRules = named(rules);
  for (const m of [
    'gateway_requests_total',
    'gateway_request_duration_seconds_bucket',
    'gateway_auth_failures_total',
    'gateway_upstream_errors_total',
    'gateway_deadline_exceeded_total',
    'gateway_checksum_cache_requests_total',
    'gateway_rate_limit_decisions_total',
    'process_start_time_seconds',
    'gateway_jwks_fetches_total',
    'gateway_jwks_keys',
    'gateway_store_pool_connections',
    'gateway_jwt_verifications_total',
    'gateway_config_reloads_total',
    'gateway_ready',
    'gateway_route_requests_total',
  ]) {
    t.ok(inRules.has(m), `an alert watches ${m}`);
  }
  const inDashboard = named(panels);
  for (const m of [
    'gateway_requests_total',
    'gateway_request_duration_seconds_bucket',
    'gateway_auth_failures_total',
    'gateway_checksum_cache_requests_total',
    'gateway_upstream_errors_total',
    'process_cpu_seconds_total',
    'process_resident_memory_bytes',
    'gateway_rate_limit_decisions_total',
    'gateway_rate_limit_store_duration_seconds_bucket',
    'gateway_requests_in_flight',
    'gateway_client_aborts_total',
    'gateway_build_info',
    'gateway_jwks_fetches_total',
    'gateway_jwks_keys',
    'gateway_jwt_verifications_total',
    'gateway_store_pool_connections',
    'gateway_config_reloads_total',
    'gateway_config_last_reload_success_timestamp_seconds',
    'gateway_ready',
    'gateway_route_requests_total',
  ]) {
    t.ok(inDashboard.has(m), `the dashboard shows ${m}`);
  }
  for (const { where, expr } of panels) {
    if (expr.includes('job="$job"')) t.match(expr, /namespace="\$namespace"/, `${where}: one namespace`);
  }
  for (const { where, rule } of rules) {
    t.ok(rule.alert && rule.labels?.severity && rule.annotations?.summary, `${where}: severity and summary`);
    t.match(rule.expr, /job="bh-gateway"/, `${where}: selects the ServiceMonitor's job`);
    // Staging and production in one Prometheus never merge: every grouping keeps the namespace.
    for (const [, kind, labels] of String(rule.expr).matchAll(/\b(by|on)\s*\(([^)]*)\)/g)) {
      const names = (labels as string).split(',').map((l) => l.trim());
      t.ok(
        names.includes('namespace') && names.includes('job'),
        `${where}: ${kind} (${labels}) keeps namespace`,
      );
    }
  }
});

t.test(
  'the PrometheusRule is picked up by kube-prometheus-stack and the dashboard has a namespace',
  async (t) => {
    const [rules] = docsOf(path.join(DEPLOY, 'prometheus', 'gateway-rules.yaml'));
    t.equal(rules.kind, 'PrometheusRule');
    t.equal(rules.metadata.labels.release, 'kube-prometheus-stack', "the chart's default ruleSelector label");
    const dashboard = JSON.parse(readFileSync(path.join(DEPLOY, 'grafana', 'bh-gateway.json'), 'utf8'));
    const vars = dashboard.templating.list.map((v: any) => v.name);
    t.same(vars, ['datasource', 'namespace', 'job', 'instance'], 'namespace chosen before job');
    const job = dashboard.templating.list.find((v: any) => v.name === 'job');
    t.match(job.query.query, /namespace="\$namespace"/, 'the jobs of the chosen namespace');
  },
);

const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
const noPromtool = promtool.error ? 'promtool is not installed (Debian: apt-get install prometheus)' : false;
if (noPromtool) t.comment(`skipping the promtool checks: ${noPromtool}`);

t.test('rules.yaml is the PrometheusRule spec, as a plain rules file', async (t) => {
  const [rule] = docsOf(path.join(DEPLOY, 'prometheus', 'gateway-rules.yaml'));
  const [plain] = docsOf(path.join(DEPLOY, 'prometheus', 'rules.yaml'));
  t.same(plain, rule.spec, 'npm run docs:gen writes deploy/prometheus/rules.yaml');
});

t.test(
  'promtool check rules accepts the alert rules, the plain file as it is',
  { skip: noPromtool },
  async (t) => {
    const r = spawnSync('promtool', ['check', 'rules', path.join(DEPLOY, 'prometheus', 'rules.yaml')], {
      encoding: 'utf8',
    });
    t.equal(r.status, 0, r.stdout + r.stderr);
    t.match(r.stdout, /SUCCESS: \d+ rules found/);
  },
);

t.test(
  "promtool check metrics flags only prom-client's nodejs_active_*_total gauges",
  { skip: noPromtool },
  async (t) => {
    const gw = await startGateway();
    t.teardown(() => gw.close());
    const text = (
      await request({ port: gw.adminPort }, { method: 'GET', target: '/metrics' })
    ).body.toString();
    const check = (input: string) => spawnSync('promtool', ['check', 'metrics'], { input, encoding: 'utf8' });
    const all = check(text);
    const flagged = `${all.stdout}${all.stderr}`.split('\n').filter(Boolean);
    t.same(
      flagged.map((l) => l.split(' ')[0]).sort(),
      ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'],
      'the default Node.js metrics prom-client names with _total',
    );
    // The README's lint command: those three filtered out, everything else passes.
    const filtered = text
      .split('\n')
      .filter((l) => !/^(# (HELP|TYPE) )?nodejs_active_(handles|requests|resources)_total\b/.test(l))
      .join('\n');
    const rest = check(filtered);
    t.equal(rest.status, 0, rest.stdout + rest.stderr);
  },
);

t.test('every YAML file under deploy/ parses, each document a Kubernetes object', async (t) => {
  const files = objectFiles(DEPLOY);
  t.ok(files.length >= 9, `${files.length} YAML files`);
  t.same(parseAllDocuments(readFileSync(CONFIG_FILE, 'utf8'))[0]?.errors, [], 'gateway.yaml parses');
  for (const file of files) {
    const docs = parseAllDocuments(readFileSync(file, 'utf8'));
    for (const doc of docs) {
      t.same(doc.errors, [], `${path.relative(ROOT, file)} parses`);
      const js = doc.toJS();
      t.ok(js.apiVersion && js.kind, `${path.relative(ROOT, file)}: ${js.kind} has apiVersion and kind`);
    }
  }
  for (const file of filesUnder(DEPLOY, /\.json$/))
    t.doesNotThrow(() => JSON.parse(readFileSync(file, 'utf8')));
});

t.test("the ConfigMap's gateway.yaml passes gateway check-config", async (t) => {
  const dir = t.testdir({ 'gateway.yaml': readFileSync(CONFIG_FILE, 'utf8') });
  const r = spawnSync(
    process.execPath,
    [path.join(ROOT, 'dist', 'cli.js'), 'check-config', `${dir}/gateway.yaml`],
    {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    },
  );
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /configuration is valid/);
});

t.test('the manifests and the configuration agree', async (t) => {
  const { docs, one } = manifests();
  const deployment = one('Deployment');
  const pod = deployment.spec.template.spec;
  const [container] = pod.containers;
  const dir = t.testdir({ 'gateway.yaml': readFileSync(CONFIG_FILE, 'utf8') });
  const config = loadConfigFile(path.join(dir, 'gateway.yaml'), { resolve: false });
  const port = (name: string) => container.ports.find((p: any) => p.name === name)?.containerPort;
  const volumes = new Map<string, any>(pod.volumes.map((v: any) => [v.name, v]));
  const mountOf = (file: string) =>
    container.volumeMounts.find((m: any) => file.startsWith(`${m.mountPath}/`));

  t.test('listeners on the pod network, probes on the admin port', async (t) => {
    t.same([config.server.host, config.admin.host], ['0.0.0.0', '0.0.0.0'], 'listeners reachable in the pod');
    t.same([port('http'), port('admin')], [config.server.port, config.admin.port]);
    t.same(container.livenessProbe.httpGet, { path: '/livez', port: 'admin' });
    t.same(container.readinessProbe.httpGet, { path: '/readyz', port: 'admin' });
  });

  t.test('the grace period covers the preStop delay and the drain', async (t) => {
    const [sleep, seconds] = container.lifecycle.preStop.exec.command;
    t.equal(sleep, 'sleep');
    t.ok(
      pod.terminationGracePeriodSeconds > Number(seconds) + config.server.shutdown_grace / 1000,
      'the grace period covers the preStop delay and the drain',
    );
  });

  t.test('non-root, read-only, writable only where the gateway writes', async (t) => {
    t.equal(pod.securityContext.runAsNonRoot, true);
    t.match(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    t.match(container.resources, {
      requests: { cpu: String, memory: String, 'ephemeral-storage': String },
      limits: { cpu: String, memory: String, 'ephemeral-storage': String },
    });
    const writable = container.volumeMounts.filter((m: any) => !m.readOnly);
    for (const m of writable) t.ok(volumes.get(m.name).emptyDir, `${m.mountPath} is an emptyDir`);
    const tmp = config.server.tmp_dir as string;
    t.ok(writable.includes(mountOf(`${tmp}/x`)), 'server.tmp_dir is on a writable emptyDir');
    const tmpSize = volumes.get(mountOf(`${tmp}/x`).name).emptyDir.sizeLimit;
    t.ok(
      quantity(container.resources.requests['ephemeral-storage']) >= quantity(tmpSize),
      'the ephemeral-storage request covers the /tmp emptyDir',
    );

    const configFile = container.args[container.args.indexOf('--config') + 1];
    t.equal(volumes.get(mountOf(configFile).name).configMap.name, 'bh-gateway-config');
  });

  t.test('secrets are references to keys of the Secret', async (t) => {
    // Every secret of the configuration is a reference to a key of the Secret, never a value.
    const secret = one('Secret');
    t.same(
      Object.values(secret.stringData).filter((v) => v !== ''),
      [],
      'the example Secret holds no secret',
    );
    const stores = Object.values(config.backends).filter((b) => b.type === 'postgres');
    const secrets = [config.auth.jwt.hs256_secret, ...config.auth.signature.tokens.map((k) => k.key)];
    if (config.rate_limits?.store.type === 'redis') secrets.push(config.rate_limits.store.url);
    for (const ref of [...secrets, ...stores.map((b) => b.url)] as unknown[]) {
      if (!(ref instanceof ConfigReference)) {
        t.fail(`a secret is written in the ConfigMap: ${String(ref)}`);
        continue;
      }
      const [, kind, target] = /^\$\{(env|file):(.*)\}$/.exec(ref.source) ?? [];
      const key =
        kind === 'env'
          ? container.env.find((e: any) => e.name === target)?.valueFrom?.secretKeyRef
          : {
              name: volumes.get(mountOf(target as string)?.name)?.secret?.secretName,
              key: path.basename(target!),
            };
      t.equal(key?.name, secret.metadata.name, `${target} comes from the Secret`);
      t.ok(key?.key in secret.stringData, `${target} is a key of the Secret`);
    }
  });

  t.test('the rate limits can share their counts through a Redis named by the Secret', async (t) => {
    const redis = container.env.find((e: any) => e.name === 'GATEWAY_REDIS_URL');
    t.same(redis?.valueFrom?.secretKeyRef, { name: 'bh-gateway-secrets', key: 'redis-url', optional: true });
    t.ok('redis-url' in one('Secret').stringData);
    // The commented example in the configuration is a valid configuration once uncommented.
    const text = readFileSync(CONFIG_FILE, 'utf8');
    const block = /^# rate_limits:\n(?:# .*\n)+/m.exec(text)?.[0] ?? '';
    t.match(block, 'url: ${env:GATEWAY_REDIS_URL}');
    const dir = t.testdir({ 'gateway.yaml': text.replace(block, block.replace(/^# /gm, '')) });
    const uncommented = loadConfigFile(path.join(dir, 'gateway.yaml'), { resolve: false });
    t.equal(uncommented.rate_limits?.store.type, 'redis');
  });

  t.test('replicas share their data through PostgreSQL', async (t) => {
    // More than one replica: what is written must be shared, so no local store.
    const hpa = one('HorizontalPodAutoscaler');
    t.same(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'bh-gateway' });
    t.equal(deployment.spec.replicas, undefined, 'no replicas: the HPA owns the count');
    t.ok(hpa.spec.minReplicas > 1 && hpa.spec.maxReplicas >= hpa.spec.minReplicas);
    t.same(
      [config.backends.sso_providers.type, config.backends.asset_group_tags.type],
      ['postgres', 'postgres'],
    );
    const collectors = config.backends.collectors;
    t.ok(
      collectors.type !== 'local' || existsSync(collectors.path.replace(/^\/app\//, `${ROOT}/`)),
      'the local collectors folder ships in the image',
    );
  });

  t.test('the Services, the budget and the ServiceMonitor select the right objects', async (t) => {
    // Selectors: the Services, the budget and the ServiceMonitor find what they should.
    const labels = deployment.spec.template.metadata.labels;
    const selects = (sel: Record<string, string>, of: Record<string, string>) =>
      Object.keys(sel).length > 0 && Object.entries(sel).every(([k, v]) => of[k] === v);
    const services = docs.filter((d) => d.kind === 'Service');
    for (const s of services) {
      t.ok(selects(s.spec.selector, labels), `Service ${s.metadata.name} selects the pods`);
      for (const p of s.spec.ports) t.ok(port(p.targetPort), `${s.metadata.name} targets ${p.targetPort}`);
    }
    t.ok(selects(one('PodDisruptionBudget').spec.selector.matchLabels, labels));
    const monitor = one('ServiceMonitor');
    const scraped = services.filter((s) => selects(monitor.spec.selector.matchLabels, s.metadata.labels));
    t.equal(scraped.length, 1, 'the ServiceMonitor scrapes one Service');
    const endpoint = scraped[0].spec.ports.find((p: any) => p.name === monitor.spec.endpoints[0].port);
    t.equal(endpoint?.targetPort, 'admin', 'on the admin port');
    t.notOk(
      services.some((s) => s !== scraped[0] && s.spec.ports.some((p: any) => p.targetPort === 'admin')),
    );
    t.equal(
      scraped[0].metadata.labels[monitor.spec.jobLabel],
      'bh-gateway',
      'the job the alert rules select',
    );
  });
});

const kubectl = spawnSync('kubectl', ['kustomize', K8S], { encoding: 'utf8' });

t.test('the kustomization lists every manifest but the Secret example', async (t) => {
  const kustomization = parse(readFileSync(path.join(K8S, 'kustomization.yaml'), 'utf8'));
  const listed: string[] = kustomization.resources;
  for (const f of listed) t.ok(existsSync(path.join(K8S, f)), `${f} exists`);
  const generated: string[] = kustomization.configMapGenerator.flatMap((g: any) => g.files);
  t.same(generated, ['gateway.yaml'], 'the configuration becomes a generated ConfigMap');
  t.not(kustomization.generatorOptions?.disableNameSuffixHash, true, 'with a hash suffix');
  const others = ['kustomization.yaml', 'secret.example.yaml', ...generated];
  const expected = readdirSync(K8S).filter((f) => !others.includes(f));
  t.same([...listed].sort(), expected.sort(), 'an apply never overwrites the real Secret');
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  t.same(
    kustomization.images,
    [{ name: 'bh-gateway', newTag: pkg.version }],
    "the image tag is package.json's version",
  );

  // kubectl is optional on a developer's machine; where it is installed, the build must succeed.
  t.test(
    'kubectl kustomize builds them',
    { skip: kubectl.error ? 'kubectl is not installed' : false },
    async (t) => {
      t.equal(kubectl.status, 0, kubectl.stderr);
      const built = parseAllDocuments(kubectl.stdout).map((d) => d.toJS());
      const id = (d: any) => `${d.kind}/${d.metadata.name}`;
      const sources = listed.flatMap((f) => docsOf(path.join(K8S, f)));
      const configMap = built.find((d) => d.kind === 'ConfigMap');
      t.match(
        configMap?.metadata.name,
        /^bh-gateway-config-[a-z0-9]{10}$/,
        'the ConfigMap has a hash suffix',
      );
      t.same(configMap?.data['gateway.yaml'], readFileSync(CONFIG_FILE, 'utf8'), 'holding gateway.yaml');
      t.same(
        built.map(id).sort(),
        [...sources.map(id), id(configMap)].sort(),
        'every listed object and the ConfigMap',
      );
      const deployment = built.find((d) => d.kind === 'Deployment');
      const volume = deployment.spec.template.spec.volumes.find((v: any) => v.name === 'config');
      t.equal(volume.configMap.name, configMap.metadata.name, 'the pods mount the hashed ConfigMap');
      const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
      t.equal(deployment.spec.template.spec.containers[0].image, `bh-gateway:${pkg.version}`);
      t.ok(built.every((d) => d.kind === 'Namespace' || d.metadata.namespace === 'bh-gateway'));
    },
  );
});

t.test(
  'the image runs the gateway as PID 1, non-root, with the ports and paths of the manifests',
  async (t) => {
    const dockerfile = readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8');
    const lines = dockerfile.split('\n').filter((l) => l && !l.startsWith('#'));
    const last = (word: string) =>
      lines
        .filter((l) => l.startsWith(`${word} `))
        .at(-1)
        ?.slice(word.length + 1);
    const froms = lines.filter((l) => l.startsWith('FROM '));
    t.equal(froms.length, 2, 'two stages');
    t.match(dockerfile, /^ARG NODE_IMAGE=node:20-slim$/m);
    t.match(dockerfile, /^RUN npm ci --omit=dev --ignore-scripts/m);
    t.equal(last('ENTRYPOINT'), '["node", "dist/cli.js"]', 'exec form, no npm or shell in front');

    const { one } = manifests();
    const pod = one('Deployment').spec.template.spec;
    const [container] = pod.containers;
    t.equal(last('USER'), `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`);
    t.same(
      last('EXPOSE')?.split(' ').map(Number),
      container.ports.map((p: any) => p.containerPort),
    );
    t.same(JSON.parse(last('CMD') ?? ''), container.args);

    // What the stages copy from the context exists and is let through by the .dockerignore allow-list.
    const allowed = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1));
    const copied = lines
      .filter((l) => l.startsWith('COPY ') && !l.includes('--from'))
      .flatMap((l) => l.split(' ').slice(1, -1));
    t.ok(copied.length >= 5);
    for (const src of copied) {
      t.ok(existsSync(path.join(ROOT, src)) && allowed.includes(src), `${src} reaches the build`);
    }
  },
);

t.test("the image's production dependencies hold every package the compiled gateway imports", async (t) => {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const files = filesUnder(path.join(ROOT, 'dist'), /\.js$/);
  t.ok(files.length > 10, 'dist/ is built');
  const imported = new Set<string>();
  for (const file of files) {
    const code = readFileSync(file, 'utf8');
    const statics = /^(?:import|export)\s[^;]*?from\s*'([^']+)';|^import\s*'([^']+)';/gm;
    const specs = [...code.matchAll(statics), ...code.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)];
    for (const m of specs) {
      const spec = (m[1] ?? m[2]) as string;
      if (spec.startsWith('.') || spec.startsWith('node:')) continue;
      imported.add(
        spec
          .split('/')
          .slice(0, spec.startsWith('@') ? 2 : 1)
          .join('/'),
      );
    }
  }
  t.ok(imported.has('prom-client'), 'finds the imports');
  t.same(
    [...imported].filter((p) => !(p in pkg.dependencies)),
    [],
    'imported but not a production dependency',
  );
});

/** A Kubernetes quantity (`512Mi`, `1Gi`, `640M`) in bytes. */
function quantity(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([KMGT]i?)?$/.exec(text);
  if (!m) throw new Error(`not a quantity: ${text}`);
  const units: Record<string, number> = {
    K: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
  };
  return Number(m[1]) * (m[2] === undefined ? 1 : (units[m[2]] ?? NaN));
}
