// Shared by the streaming tests: collecting output, feeding terminal sizes, listing processes, a
// host-network web server.
import net from 'node:net';
import { Writable } from 'node:stream';
import { NamespaceMode } from '@kh/cri-api';
import type { TerminalSize } from '@kh/cri-streaming';
import { docker, type ShimHarness } from './harness.js';

/** A Writable that keeps what it was given. */
export class Sink extends Writable {
  readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void) {
    this.chunks.push(chunk);
    done();
  }
  get text() {
    return Buffer.concat(this.chunks).toString();
  }
}

/** Terminal sizes the test pushes, as a client sends them on its resize stream. */
export class Sizes implements AsyncIterable<TerminalSize> {
  private waiting: ((r: IteratorResult<TerminalSize>) => void) | undefined;
  private readonly queue: TerminalSize[] = [];
  push(size: TerminalSize) {
    if (this.waiting) this.waiting({ value: size, done: false });
    else this.queue.push(size);
    this.waiting = undefined;
  }
  [Symbol.asyncIterator](): AsyncIterator<TerminalSize> {
    return {
      next: () => {
        const size = this.queue.shift();
        if (size) return Promise.resolve({ value: size, done: false });
        return new Promise((resolve) => {
          this.waiting = resolve;
        });
      },
    };
  }
}

/** Command lines of the processes in a container, as `docker top` sees them. */
export async function processes(containerId: string): Promise<string[]> {
  const top = await docker.getContainer(containerId).top({ ps_args: '-o pid,args' });
  return top.Processes.map((p: string[]) => p[1] as string);
}

/** A shell line that waits until the terminal has the given size, then prints `<tag>-<rows>x<cols>`. */
export function awaitSize(tag: string, rows: number, cols: number): string {
  return `until [ "$(stty size)" = "${rows} ${cols}" ]; do sleep 0.05; done; echo ${tag}-$(stty size | tr " " x)\n`;
}

/** A TCP port nobody listens on at the moment (on 127.0.0.1). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * A host-network pod whose httpd listens on 127.0.0.1 only, on a free port: port-forward must reach
 * it from inside the (host's) network namespace, not through any pod address.
 */
export async function hostNetworkHttpd(h: ShimHarness): Promise<{ podId: string; port: number }> {
  const port = await freePort();
  const pod = await h.runPod({
    linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
  });
  await h.runContainer(pod.podId, pod.config, 'web', {
    image: { image: h.images.httpd },
    command: ['httpd', '-f', '-p', `127.0.0.1:${port}`, '-h', '/www'],
  });
  return { podId: pod.podId, port };
}
