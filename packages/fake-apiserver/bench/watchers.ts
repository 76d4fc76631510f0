import { request } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

/**
 * The benchmark's watchers, in a worker thread so that reading hundreds of event streams does
 * not delay the load generator's timers. Messages in: 'measure', 'stop'. Out: 'ready' once every
 * watch is open, then the delivery delays (ms) after 'stop'.
 */
export interface WatchersConfig {
  url: string;
  /** Collection paths with a `resourceVersion` to start from, one per watcher. */
  paths: string[];
}

const SENT = '"bench.kh.io/sent":"';
const RENEW = '"renewTime":"';

/**
 * When the write behind an event line was sent: a Lease's renewTime, or the annotation the
 * other writes carry. Found by scanning, not parsing: this thread reads ~10^5 events/s at 5k nodes.
 */
export function sentAt(line: string): number {
  if (line.startsWith('{"type":"BOOKMARK"')) return Number.NaN;
  let i = line.indexOf(SENT);
  if (i >= 0) {
    i += SENT.length;
    return Number(line.slice(i, line.indexOf('"', i)));
  }
  i = line.indexOf(RENEW);
  if (i >= 0) {
    i += RENEW.length;
    return Date.parse(line.slice(i, line.indexOf('"', i)));
  }
  return Number.NaN;
}

function main(cfg: WatchersConfig) {
  const port = parentPort!;
  let measuring = false;
  const delays: number[] = [];
  let open = 0;
  const reqs = cfg.paths.map((path) => {
    const req = request(
      new URL(path, cfg.url),
      { method: 'GET', headers: { Accept: 'application/json' } },
      (res) => {
        if (++open === cfg.paths.length) port.postMessage('ready');
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          buf += c;
          let start = 0;
          let nl = buf.indexOf('\n');
          while (nl >= 0) {
            if (measuring) {
              const sent = sentAt(buf.slice(start, nl));
              if (Number.isFinite(sent)) delays.push(Date.now() - sent);
            }
            start = nl + 1;
            nl = buf.indexOf('\n', start);
          }
          buf = buf.slice(start);
        });
      },
    );
    req.on('error', () => {});
    req.end();
    return req;
  });
  port.on('message', (m: string) => {
    if (m === 'measure') measuring = true;
    if (m === 'stop') {
      measuring = false;
      for (const r of reqs) r.destroy();
      port.postMessage(delays);
    }
  });
}

if (parentPort !== null && workerData !== undefined) main(workerData as WatchersConfig);
