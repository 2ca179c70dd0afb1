/**
 * A signed PATCH whose body arrives in two parts, as a slow upload does: the gateway holds the
 * request (on the configuration it started with) until the test sends the rest.
 */
import { request as httpRequest } from 'node:http';
import { multipart, signed, type TestResponse } from './gateway.js';

/** A PATCH renaming a provider, its body's first half sent; `rest()` sends the other and resolves with the answer. */
export interface HeldPatch {
  rest(): Promise<TestResponse>;
}

/** Starts a signed PATCH of `target` setting `name`, sending only the first half of its body. */
export function patchInParts(gw: { port: number }, target: string, name: string): HeldPatch {
  const form = multipart([{ name: 'name', value: name }]);
  const half = form.body.length >> 1;
  const req = httpRequest({
    host: '127.0.0.1',
    port: gw.port,
    method: 'PATCH',
    path: target,
    agent: false,
    headers: {
      ...signed({ method: 'PATCH', target, body: form.body }),
      'Content-Type': form.contentType,
      'Content-Length': form.body.length,
    },
  });
  const answered = new Promise<TestResponse>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          json: () => JSON.parse(`${body}`),
        });
      });
    });
  });
  // Settled here too, so that a test that never sends the rest leaves no unhandled rejection.
  answered.catch(() => undefined);
  req.write(form.body.subarray(0, half));
  return {
    rest() {
      req.end(form.body.subarray(half));
      return answered;
    },
  };
}
