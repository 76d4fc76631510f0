import { type ChildProcess, fork } from 'node:child_process';
import { request } from 'node:http';

/**
 * The benchmark's watch reader, a process of its own (forked, IPC) so that reading hundreds of
 * event streams neither delays the load generator's timers nor shares its heap and GC. Messages
 * in: the config, then 'measure', 'stop'. Out: 'ready' once every watch is open, then the
 * delivery delays (ms) after 'stop'.
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

const READER_ARG = '--watch-reader';

/** Forks the watch reader and resolves once every watch is open. */
export async function startWatchers(cfg: WatchersConfig): Promise<ChildProcess> {
  const child = fork(new URL(import.meta.url), [READER_ARG], { serialization: 'advanced' });
  const ready = new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the watch reader exited ${code}`)));
  });
  child.send(cfg);
  await ready;
  return child;
}

/** Tells the watch reader to stop and returns the delays it measured; it exits after. */
export function stopWatchers(child: ChildProcess): Promise<number[]> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m as number[]));
    child.send('stop');
  });
}

function main(cfg: WatchersConfig) {
  let measuring = false;
  const delays: number[] = [];
  let open = 0;
  const reqs = cfg.paths.map((path) => {
    const req = request(
      new URL(path, cfg.url),
      { method: 'GET', headers: { Accept: 'application/json' } },
      (res) => {
        if (++open === cfg.paths.length) process.send!('ready');
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
  process.on('message', (m: string) => {
    if (m === 'measure') measuring = true;
    if (m === 'stop') {
      measuring = false;
      for (const r of reqs) r.destroy();
      process.send!(delays, () => process.disconnect());
    }
  });
}

// Forked by startWatchers: the first message is the config.
if (process.argv[2] === READER_ARG) process.once('message', (cfg) => main(cfg as WatchersConfig));
