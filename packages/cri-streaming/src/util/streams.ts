// Small stream helpers shared by the server and client sides.
import type { Readable, Writable } from 'node:stream';

/** Everything a readable delivers, as UTF-8, once it ends. */
export function collect(from: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  from.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) => from.once('end', () => resolve(Buffer.concat(chunks).toString('utf8'))));
}

/** Ends a writable and waits until it has flushed, or until `signal` says nobody is listening. */
export function endWritable(w: Writable, signal: AbortSignal): Promise<void> {
  if (w.writableFinished || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    w.once('finish', done);
    signal.addEventListener('abort', done, { once: true });
    if (!w.writableEnded) w.end();
  });
}
