import { type ChildProcess, fork } from 'node:child_process';
import { BenchClient } from './client.js';
import { cpuSeconds } from './proc.js';

/**
 * The mid-load LIST's client, a process of its own (forked, IPC), as a relisting informer is a
 * client of its own. Read by the load generator, 170 MB of pods at 5k nodes kept its event loop
 * busy for the LIST's whole span, and every write it timed meanwhile counted that wait as the
 * server's. Messages in: the URL, then a path to list. Out: 'ready', then the list's result; it
 * exits after.
 */
export interface ListResult {
  status: number;
  bytes: number;
  ms: number;
  /** When the request was sent, on the epoch clock with sub-millisecond precision. */
  startEpochMs: number;
  /** The lister's CPU over the LIST, in seconds. */
  cpuSeconds: number;
}

const LISTER_ARG = '--lister';

/** Epoch milliseconds with performance.now()'s precision, comparable between processes. */
const epochNow = () => performance.timeOrigin + performance.now();

/** Forks the lister and resolves once it waits for its path. */
export async function startLister(url: string): Promise<ChildProcess> {
  const child = fork(new URL(import.meta.url), [LISTER_ARG]);
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the lister exited ${code}`)));
    child.send(url);
  });
  return child;
}

/** Has the lister GET `path` (its body counted, not parsed) and returns what it measured. */
export function listIn(child: ChildProcess, path: string): Promise<ListResult> {
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve(m as ListResult));
    child.once('exit', (code) => reject(new Error(`the lister exited ${code} before answering`)));
    child.send(path);
  });
}

function main(url: string) {
  const c = new BenchClient(url);
  process.once('message', async (path: string) => {
    const cpuBefore = cpuSeconds(process.pid);
    const startEpochMs = epochNow();
    const l = await c.fetchSize(path);
    const result: ListResult = { ...l, startEpochMs, cpuSeconds: cpuSeconds(process.pid) - cpuBefore };
    c.close();
    process.send!(result, () => process.disconnect());
  });
  process.send!('ready');
}

// Forked by startLister: the first message is the server's URL.
if (process.argv[2] === LISTER_ARG) process.once('message', (url) => main(url as string));
