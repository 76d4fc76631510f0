// The kubelet's GET for httpGet probes and lifecycle hooks (pkg/probe/http): no keep-alive, TLS
// without verification (the kubelet's transport sets InsecureSkipVerify for both), body capped.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** How much of a body the kubelet keeps (probe output, hook response). */
export const MAX_HTTP_BODY = 10 * 1024;

/** One GET of `url` with the caller's User-Agent and headers (which may replace it). */
export function httpGet(
  url: URL,
  userAgent: string,
  headers: { name: string; value: string }[],
  signal: AbortSignal,
): Promise<{ res: IncomingMessage; body: string }> {
  const h: Record<string, string> = { 'User-Agent': userAgent, Accept: '*/*' };
  for (const { name, value } of headers) h[name] = value;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // Each request dials anew, never reusing a socket the container may have closed meanwhile.
    const options = { method: 'GET', headers: h, signal, rejectUnauthorized: false, agent: false };
    const req = send(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < MAX_HTTP_BODY) chunks.push(c);
        size += c.length;
      });
      res.on('end', () =>
        resolve({ res, body: Buffer.concat(chunks).toString('utf8').slice(0, MAX_HTTP_BODY) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
