import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReportServer {
  url: string;
  close(): Promise<void>;
}

/** Loopback only: the report holds logs and host details, which must not be exposed to the network. */
export const SERVE_HOST = '127.0.0.1';

/**
 * Serves the report on 127.0.0.1. The page is rendered on every request, so reloading the browser
 * after another harness run shows the new results.
 */
export async function serveReport(render: () => Promise<string>, port: number): Promise<ReportServer> {
  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res
        .writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' })
        .end('method not allowed\n');
      return;
    }
    if (path !== '/' && path !== '/report.html') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`not found: ${path}\n`);
      return;
    }
    try {
      const html = await render();
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': Buffer.byteLength(html),
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      res.end(req.method === 'HEAD' ? undefined : html);
    } catch (err) {
      res
        .writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
        .end(`cannot render the report: ${(err as Error).message}\n`);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`port ${port} on ${SERVE_HOST} is in use; pass --port 0 for a free one`)
          : err,
      ),
    );
    server.listen(port, SERVE_HOST, resolve);
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${SERVE_HOST}:${bound}/`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
