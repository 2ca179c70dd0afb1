/* global process */
// Run from dist-test/test/audit, where ../../src is the build (dist-test/src links to dist/).
// A second process on a file trail (the compiled store): opens `file`, appends one entry, closes,
// and prints `appended <id>`; or, refused, prints the reason on stderr and exits 1.
import { openFileAuditStore } from '../../src/audit/file.js';
import { createLogger } from '../../src/observability/logger.js';

const [file] = process.argv.slice(2);
try {
  const store = await openFileAuditStore(file, { logger: createLogger('silent') });
  const entry = await store.append({
    actor_id: 'child',
    actor_name: 'child',
    actor_email: '',
    action: 'UnauthorizedAccessAttempt',
    fields: { method: 'GET', path: '/api/v2/audit', permission: 'audit:read' },
    request_id: 'r',
    source_ip_address: '127.0.0.1',
    status: 'failure',
    commit_id: '00000000-0000-4000-8000-000000000000',
  });
  await store.close();
  process.stdout.write(`appended ${entry.id}\n`);
} catch (err) {
  process.stderr.write(`${err.message}\n`);
  process.exitCode = 1;
}
