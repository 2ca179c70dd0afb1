import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import { CONFIG_FILE, DEPLOY, manifests, ruleExpressions } from '../helpers/deploy.js';

const OVERLAY = path.join(DEPLOY, 'kubernetes-tls');

t.test('an alert fires 14 days before a listener certificate expires', async (t) => {
  const rule = ruleExpressions().find((r) => r.rule.alert === 'GatewayCertificateExpiresSoon');
  t.ok(rule);
  t.match(rule?.expr, /gateway_tls_certificate_not_after_timestamp_seconds/);
  t.match(rule?.expr, /- time\(\) < 14 \* 86400/);
});

t.test('the commented TLS lines of the configuration are valid and read the mounted Secret', async (t) => {
  const { one } = manifests();
  const text = readFileSync(CONFIG_FILE, 'utf8');
  const enabled = text.replace(/^(\s*)# (tls: \{.*\})$/gm, '$1$2');
  t.not(enabled, text, 'the lines are there');
  const dir = t.testdir({ 'gateway.yaml': enabled });
  const config = loadConfigFile(path.join(dir, 'gateway.yaml'), { resolve: false });
  const pod = one('Deployment').spec.template.spec;
  const mount = pod.containers[0].volumeMounts.find((m: any) => m.name === 'tls');
  const volume = pod.volumes.find((v: any) => v.name === 'tls');
  for (const file of [
    config.server.tls?.cert,
    config.server.tls?.key,
    config.admin.tls?.cert,
    config.admin.tls?.key,
  ]) {
    t.equal(path.dirname(file as string), mount.mountPath);
  }
  t.match(volume.secret, { secretName: 'bh-gateway-tls', optional: true });
});

const kubectl = spawnSync('kubectl', ['kustomize', OVERLAY], { encoding: 'utf8' });

t.test('the HTTPS overlay', { skip: kubectl.error ? 'kubectl is not installed' : false }, async (t) => {
  t.equal(kubectl.status, 0, kubectl.stderr);
  const built = parseAllDocuments(kubectl.stdout).map((d) => d.toJS());
  const of = (kind: string) => built.find((d) => d.kind === kind);
  const container = of('Deployment').spec.template.spec.containers[0];
  for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    t.equal(container[probe].httpGet.scheme, 'HTTPS', `${probe} speaks HTTPS`);
  }
  const endpoint = of('ServiceMonitor').spec.endpoints[0];
  t.equal(endpoint.scheme, 'https');
  const certificate = of('Certificate');
  t.equal(certificate.metadata.namespace, 'bh-gateway');
  t.equal(certificate.spec.secretName, endpoint.tlsConfig.ca.secret.name);
  const volume = of('Deployment').spec.template.spec.volumes.find((v: any) => v.name === 'tls');
  t.equal(certificate.spec.secretName, volume.secret.secretName, 'the Secret the pods mount');
  t.ok(certificate.spec.dnsNames.some((n: string) => n.startsWith(`${endpoint.tlsConfig.serverName}`)));
  t.ok(
    parse(readFileSync(path.join(OVERLAY, 'kustomization.yaml'), 'utf8')).resources.includes('../kubernetes'),
  );
});
