import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';

/** A loopback port that was free a moment ago, for servers that must be told their port up front. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * A GET on loopback: status and body. With `ca` it is HTTPS against that CA (the kubelet
 * server), with `token` it carries a bearer token.
 */
export function httpGet(
  port: number,
  path: string,
  opts: { ca?: string; token?: string } = {},
): Promise<{ status: number; body: string }> {
  const request = opts.ca ? httpsRequest : httpRequest;
  const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, headers, ...(opts.ca ? { ca: opts.ca } : {}) }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}
