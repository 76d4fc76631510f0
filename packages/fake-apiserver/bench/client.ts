import { Agent, request } from 'node:http';
import type { KObject } from '@kh/fake-apiserver';

/** A minimal keep-alive JSON client for the load generator. */
export class BenchClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });

  constructor(
    private readonly base: string,
    /** A bearer token to send (the soak's identities); none for the anonymous load. */
    private readonly token?: string,
  ) {}

  send(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<{ status: number; body: KObject }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (payload !== undefined) {
      headers['Content-Type'] = contentType;
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      const req = request(new URL(path, this.base), { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as KObject) : {} });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** A GET whose body is counted, not parsed (a LIST of 150 000 pods is hundreds of MB). */
  fetchSize(path: string): Promise<{ status: number; bytes: number; ms: number }> {
    const t = performance.now();
    return new Promise((resolve, reject) => {
      const req = request(
        new URL(path, this.base),
        { headers: { Accept: 'application/json' }, agent: this.agent },
        (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => {
            bytes += c.length;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - t }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  /**
   * One page of a chunked LIST: its ListMeta is read from the text before "items" (not parsed
   * whole, like fetchSize), so the figure is the server's, not this client's JSON.parse.
   */
  async fetchPage(
    path: string,
  ): Promise<{ status: number; bytes: number; ms: number; continue?: string; remainingItemCount?: number }> {
    const t = performance.now();
    const text = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        new URL(path, this.base),
        { headers: { Accept: 'application/json' }, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    const ms = performance.now() - t;
    const head = text.body.slice(0, Math.max(0, text.body.indexOf('"items":')));
    const cont = /"continue":"([^"]*)"/.exec(head)?.[1];
    const remaining = /"remainingItemCount":(\d+)/.exec(head)?.[1];
    return {
      status: text.status,
      bytes: Buffer.byteLength(text.body),
      ms,
      ...(cont ? { continue: cont } : {}),
      ...(remaining !== undefined ? { remainingItemCount: Number(remaining) } : {}),
    };
  }

  close() {
    this.agent.destroy();
  }
}

/** Runs `tasks` with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(workers);
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summary(values: number[]) {
  const s = [...values].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    count: s.length,
    p50: round(percentile(s, 50)),
    p99: round(percentile(s, 99)),
    max: round(s[s.length - 1] ?? Number.NaN),
  };
}
