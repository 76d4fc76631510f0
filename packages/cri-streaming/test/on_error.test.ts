// What the server's onError hears: nothing about a session that simply ends; a runtime call that
// fails while the client still listens, yes; one that rejects only because the client went away
// (the dockershim's Docker calls reject with an AbortError then), no: that is how sessions end.
import { EventEmitter, once } from 'node:events';
import { type Duplex, PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { dialSpdy } from '../src/client/dial.js';
import {
  PortForwardClient,
  type StreamIO,
  type StreamingRuntime,
  StreamingServer,
  streamRemoteCommand,
} from '../src/index.js';

/** A container or sandbox whose calls run until their signal aborts, then reject. */
const HANG = 'hang';
/** One whose calls reject at once. */
const FAIL = 'fail';
/** One whose calls succeed at once. */
const OK = 'ok';
const PORT = 80;

/** Emits 'started' when a HANG call runs and 'rejected' with whatever a call rejects with. */
class RejectingRuntime extends EventEmitter implements StreamingRuntime {
  async exec(id: string, _cmd: string[], _io: StreamIO, signal: AbortSignal) {
    await this.run(id, signal);
    return { exitCode: 0 };
  }

  attach(id: string, _io: StreamIO, signal: AbortSignal) {
    return this.run(id, signal);
  }

  portForward(id: string, _port: number, stream: Duplex, signal: AbortSignal) {
    stream.resume();
    return this.run(id, signal);
  }

  private async run(id: string, signal: AbortSignal): Promise<void> {
    try {
      if (id === OK) return;
      if (id === FAIL) throw new Error('the runtime broke');
      this.emit('started');
      // A process that never exits, awaited as the dockershim awaits Docker's: an AbortError.
      await once(new EventEmitter(), 'exit', { signal });
    } catch (err) {
      this.emit('rejected', err);
      throw err;
    }
  }
}

async function start() {
  const runtime = new RejectingRuntime();
  const errors: Error[] = [];
  const server = await StreamingServer.start({ runtime, onError: (e) => errors.push(e) });
  // server.close() waits for every session, so onError has heard all it will hear.
  return { runtime, errors, server };
}

const transports = ['spdy', 'websocket'] as const;
const kinds = ['exec', 'attach'] as const;
const remoteCommands = kinds.flatMap((kind) => transports.map((transport) => ({ kind, transport })));

function commandUrl(server: StreamingServer, kind: (typeof kinds)[number], containerId: string) {
  return kind === 'exec'
    ? server.getExec({ containerId, cmd: ['sh'], stdout: true }).url
    : server.getAttach({ containerId, stdout: true }).url;
}

describe.each(remoteCommands)('$kind over $transport', ({ kind, transport }) => {
  it('reports nothing for a session that ends normally', async () => {
    const { errors, server } = await start();
    for (let i = 0; i < 3; i++) {
      const run = streamRemoteCommand(commandUrl(server, kind, OK), { transport, stdout: new PassThrough() });
      expect((await run).exitCode).toBe(0);
    }
    await server.close();
    expect(errors.map((e) => e.message)).toEqual([]);
  });

  it('does not report a runtime call that rejects because the client went away', async () => {
    const { runtime, errors, server } = await start();
    const started = once(runtime, 'started');
    const rejected = once(runtime, 'rejected');
    const abort = new AbortController();
    const run = streamRemoteCommand(commandUrl(server, kind, HANG), {
      transport,
      stdout: new PassThrough(),
      signal: abort.signal,
    });
    await started;
    abort.abort();
    await expect(run).rejects.toThrow();
    const [err] = await rejected;
    await server.close();
    expect(err).toMatchObject({ name: 'AbortError' });
    expect(errors).not.toContain(err);
  });

  it('reports a runtime call that fails while the client listens', async () => {
    const { runtime, errors, server } = await start();
    const rejected = once(runtime, 'rejected');
    const run = streamRemoteCommand(commandUrl(server, kind, FAIL), { transport, stdout: new PassThrough() });
    await expect(run).rejects.toThrow(/the runtime broke/);
    const [err] = await rejected;
    await server.close();
    expect(errors).toContain(err);
  });
});

describe.each(transports)('port-forward over %s', (transport) => {
  it('does not report a forward that rejects because the client went away', async () => {
    const { runtime, errors, server } = await start();
    const started = once(runtime, 'started');
    const rejected = once(runtime, 'rejected');
    const { url } = server.getPortForward({ podSandboxId: HANG, port: [PORT] });
    if (transport === 'spdy') {
      const { session } = await dialSpdy(url, ['portforward.k8s.io']);
      const headers = { port: [String(PORT)], requestid: ['0'] };
      await session.openStream({ ...headers, streamtype: ['error'] });
      await session.openStream({ ...headers, streamtype: ['data'] });
      await started;
      session.destroy();
    } else {
      const pf = await PortForwardClient.connect(url, { transport, ports: [PORT] });
      await started;
      await pf.close();
    }
    const [err] = await rejected;
    await server.close();
    expect(err).toMatchObject({ name: 'AbortError' });
    expect(errors).not.toContain(err);
  });

  it('reports a forward that fails while the client listens', async () => {
    const { runtime, errors, server } = await start();
    const rejected = once(runtime, 'rejected');
    const { url } = server.getPortForward({ podSandboxId: FAIL, port: [PORT] });
    const pf = await PortForwardClient.connect(url, { transport, ports: [PORT] });
    const conn = await pf.open(PORT);
    conn.stream.resume();
    expect(await conn.error).toMatch(/error forwarding port 80 to pod sandbox fail: the runtime broke/);
    const [err] = await rejected;
    await pf.close();
    await server.close();
    expect(errors).toContain(err);
  });
});
