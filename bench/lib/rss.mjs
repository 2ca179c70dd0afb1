/**
 * The memory check: concurrent signed 1 MiB SSO provider uploads (a multipart form whose `metadata`
 * file is valid SAML metadata padded with a large XML comment inside the root element), while the
 * gateway's resident set size is sampled from /proc every 20 ms. Reports the growth from the idle
 * process to the peak, and every answer's status.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { signedHeaders } from './gateway.mjs';

const SAMPLE_EVERY = 20;

/** VmRSS of `pid` in bytes (Linux), or NaN elsewhere. */
export function rssOf(pid) {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** `size` bytes of valid metadata: the sample file with a comment inside the root element. */
export function paddedMetadata(dataDir, size) {
  const xml = readFileSync(join(dataDir, 'idp-metadata.xml'), 'utf8');
  const close = xml.lastIndexOf('</md:EntityDescriptor>');
  const room = size - Buffer.byteLength(xml) - '<!--  -->\n'.length;
  const comment = `<!-- ${'bench padding '.repeat(Math.ceil(room / 14)).slice(0, room)} -->\n`;
  return Buffer.from(`${xml.slice(0, close)}${comment}${xml.slice(close)}`);
}

/** A multipart/form-data body with one `metadata` file part. */
export function metadataForm(metadata) {
  const boundary = `----bench-${randomBytes(8).toString('hex')}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="metadata"; filename="idp-metadata.xml"\r\nContent-Type: text/xml\r\n\r\n`;
  const body = Buffer.concat([Buffer.from(head), metadata, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

function patch(gatewayUrl, target, headers, body) {
  return new Promise((resolve) => {
    const req = request(`${gatewayUrl}${target}`, { method: 'PATCH', headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', (err) => resolve(err.code ?? 'error'));
    req.end(body);
  });
}

/**
 * Sends `uploads` concurrent PATCHes of a `size`-byte metadata file to the gateway `gw` (a local
 * sso_providers store) and samples its RSS meanwhile. With `warm`, one upload goes first, alone, so
 * that what a first upload loads once (code, parser state) is not counted as growth. Resolves with
 * before/peak/after bytes, the statuses and the wall time.
 */
export async function rssCheck(gw, dataDir, { uploads = 20, size = 1024 * 1024, warm = false } = {}) {
  const target = '/api/v2/sso-providers/1';
  const { body, contentType } = metadataForm(paddedMetadata(dataDir, size));
  const headers = {
    ...signedHeaders(gw.creds, 'PATCH', target, body),
    'content-type': contentType,
    'content-length': body.length,
  };
  if (warm) await patch(gw.url, target, headers, body);
  await sleep(300); // let the process settle
  const before = rssOf(gw.pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(gw.pid) || 0);
  }, SAMPLE_EVERY);
  const started = Date.now();
  const statuses = await Promise.all(
    Array.from({ length: uploads }, () => patch(gw.url, target, headers, body)),
  );
  const wall = Date.now() - started;
  await sleep(200);
  clearInterval(sampler);
  peak = Math.max(peak, rssOf(gw.pid) || 0);
  const counts = {};
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
  return {
    before,
    peak,
    after: rssOf(gw.pid),
    growth: peak - before,
    statuses: counts,
    wall,
    bytes: body.length,
  };
}
