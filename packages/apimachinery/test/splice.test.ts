import { Duplex } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SPLICE_CLOSE_GRACE_MS, spliceConnections } from '../src/index.js';

/**
 * One end of a spliced connection: what is written to it is "sent" (kept in `sent`), and while
 * `stall` is set the write in flight does not complete, as with a socket whose kernel buffer is
 * full, so later writes wait in the stream's own buffer. Tests push what it "receives".
 */
class Conn extends Duplex {
  sent: Buffer[] = [];
  finished = false;
  private stalled: (() => void)[] = [];
  constructor(private stall = false) {
    super({ allowHalfOpen: true });
  }
  override _read(): void {}
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    const done = () => {
      this.sent.push(chunk);
      cb();
    };
    if (this.stall) this.stalled.push(done);
    else done();
  }
  override _final(cb: () => void): void {
    this.finished = true;
    cb();
  }
  /** The peer reads again: the write in flight completes and the rest follows. */
  unstall(): void {
    this.stall = false;
    for (const done of this.stalled.splice(0)) done();
  }
  text(): string {
    return Buffer.concat(this.sent).toString();
  }
}

const tick = () => new Promise((r) => setImmediate(r));

describe('spliceConnections', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('copies both ways and passes an end on as a half-close', async () => {
    const client = new Conn();
    const backend = new Conn();
    spliceConnections(client, backend);
    client.push('stdin');
    backend.push('stdout');
    client.push(null);
    await tick();
    expect(backend.text()).toBe('stdin');
    expect(backend.finished).toBe(true);
    expect(client.text()).toBe('stdout');
    expect(client.finished).toBe(false);
    backend.push(null);
    await tick();
    expect(client.finished).toBe(true);
  });

  // A runtime that has written an exec's last frames and closed makes the proxy's next write to
  // it fail (EPIPE, or ECONNRESET once its reset arrives). The frames it wrote before must still
  // reach the client: they are the command's output and its exit status.
  it('delivers what the backend sent before it failed, then ends the client', async () => {
    const client = new Conn(true);
    const backend = new Conn();
    spliceConnections(client, backend);
    backend.push('output');
    backend.push('{"status":"Failure","code":5}');
    await tick();
    backend.destroy(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    await tick();
    expect(client.destroyed).toBe(false);
    client.unstall();
    await tick();
    expect(client.text()).toBe('output{"status":"Failure","code":5}');
    expect(client.finished).toBe(true);
  });

  it('delivers what the backend sent before it closed, when the client is still catching up', async () => {
    const client = new Conn(true);
    const backend = new Conn();
    spliceConnections(client, backend);
    backend.push('a');
    backend.push('b');
    backend.push(null);
    await tick();
    backend.destroy();
    await tick();
    client.unstall();
    await tick();
    expect(client.text()).toBe('ab');
    expect(client.finished).toBe(true);
  });

  // Bytes left unread when a socket is closed turn its FIN into a reset, and a reset makes the
  // peer drop what it has received but not yet read.
  it('reads and drops what the client still sends once the backend is gone', async () => {
    const client = new Conn();
    const backend = new Conn();
    spliceConnections(client, backend);
    backend.destroy();
    await tick();
    client.push('late frame');
    await tick();
    expect(client.destroyed).toBe(false);
    expect(client.readableLength).toBe(0);
    expect(backend.text()).toBe('');
  });

  it('destroys a client that has not closed its side a grace period after its output went out', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const client = new Conn(true);
    const backend = new Conn();
    spliceConnections(client, backend);
    backend.push('last');
    backend.destroy();
    await tick();
    // Still writing: a slow reader is not cut off, however long the grace.
    vi.advanceTimersByTime(SPLICE_CLOSE_GRACE_MS * 2);
    expect(client.destroyed).toBe(false);
    client.unstall();
    await tick();
    vi.advanceTimersByTime(SPLICE_CLOSE_GRACE_MS - 1);
    expect(client.destroyed).toBe(false);
    vi.advanceTimersByTime(1);
    expect(client.destroyed).toBe(true);
    expect(client.text()).toBe('last');
  });

  it('leaves no timer behind when the other side closes in time', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const client = new Conn();
    const backend = new Conn();
    spliceConnections(client, backend);
    backend.destroy();
    await tick();
    client.destroy();
    await tick();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ends the backend, not only destroys it, when the client goes away', async () => {
    const client = new Conn();
    const backend = new Conn(true);
    spliceConnections(client, backend);
    client.push('detach');
    await tick();
    client.destroy();
    await tick();
    expect(backend.destroyed).toBe(false);
    backend.unstall();
    await tick();
    expect(backend.text()).toBe('detach');
    expect(backend.finished).toBe(true);
  });
});
