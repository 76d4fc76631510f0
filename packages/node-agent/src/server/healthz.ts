// Named health checks served the way Kubernetes' healthz does: "ok" when all pass, and a 500
// listing each check ("[-]syncloop failed: reason withheld") when one fails.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { closeServer, listen } from './listen.js';

export type HealthzCheck = () => string | undefined; // an error message, or undefined when healthy

export class HealthChecker {
  private readonly checks = new Map<string, HealthzCheck>([['ping', () => undefined]]);

  add(name: string, check: HealthzCheck): void {
    this.checks.set(name, check);
  }

  /** Answers /healthz, /healthz?verbose and /healthz/<check>; false when the path is not a healthz path. */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/healthz' && !url.pathname.startsWith('/healthz/')) return false;
    const only = url.pathname.slice('/healthz/'.length);
    const selected = only ? [...this.checks].filter(([n]) => n === only) : [...this.checks];
    if (selected.length === 0) {
      res
        .writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' })
        .end(`no such health check: ${only}\n`);
      return true;
    }
    const results = selected.map(([name, check]) => ({ name, error: safe(check) }));
    const failed = results.some((r) => r.error !== undefined);
    const lines = results.map((r) =>
      r.error === undefined ? `[+]${r.name} ok` : `[-]${r.name} failed: reason withheld`,
    );
    const headers = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' };
    if (failed) {
      res.writeHead(500, headers).end(`${lines.join('\n')}\nhealthz check failed\n`);
    } else if (url.searchParams.has('verbose')) {
      res.writeHead(200, headers).end(`${lines.join('\n')}\nhealthz check passed\n`);
    } else {
      res.writeHead(200, headers).end('ok');
    }
    return true;
  }

  /** The failing checks with their reasons, for logs. */
  failures(): { name: string; error: string }[] {
    return [...this.checks]
      .map(([name, c]) => ({ name, error: safe(c) }))
      .filter((r): r is { name: string; error: string } => r.error !== undefined);
  }
}

function safe(check: HealthzCheck): string | undefined {
  try {
    return check();
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * The kubelet's syncloop check: unhealthy when the loop entered its last iteration longer ago
 * than max(2 x syncFrequency, 5m).
 */
export function syncLoopCheck(
  lastIteration: () => number | undefined,
  now: () => number,
  syncFrequencyMs: number,
): HealthzCheck {
  const threshold = Math.max(2 * syncFrequencyMs, 5 * 60_000);
  return () => {
    const last = lastIteration();
    if (last === undefined) return undefined;
    return now() - last > threshold ? 'sync Loop took longer than expected' : undefined;
  };
}

/** The plain-HTTP healthz server on healthzBindAddress:healthzPort. */
export class HealthzServer {
  private server: Server | undefined;

  constructor(private readonly checker: HealthChecker) {}

  async start(host: string, port: number): Promise<{ host: string; port: number }> {
    const server = createServer((req, res) => {
      // An unparsable target ("http://[") would throw in handle(), an uncaught exception.
      if (!URL.canParse(req.url ?? '/', 'http://x'))
        res.writeHead(400, { 'Content-Type': 'text/plain' }).end('Bad Request: invalid request target\n');
      else if (!this.checker.handle(req, res))
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('404 page not found\n');
    });
    const address = await listen(server, host, port);
    this.server = server;
    return address;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    await closeServer(s);
  }
}
