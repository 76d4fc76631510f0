import { spawn } from 'node:child_process';
import { stat, writeFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CanceledError,
  ContainerEventType,
  type CriCallEvent,
  CriClient,
  type CriServer,
  DeadlineExceededError,
  InternalError,
  InvalidArgumentError,
  NotFoundError,
  serveCri,
  UnavailableError,
  UnimplementedError,
} from '../src/index.js';
import { collect, tempDir } from './helpers.js';

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new Error('aborted'));
    });
  });

describe('serveCri + CriClient over a unix socket', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let server: CriServer | undefined;
  let client: CriClient | undefined;
  const serverCalls: CriCallEvent[] = [];
  let lastAbort: { aborted: boolean } | undefined;

  beforeEach(async () => {
    tmp = await tempDir();
    serverCalls.length = 0;
    server = await serveCri(
      {
        name: 'test-backend',
        runtime: {
          // Partial responses are completed with proto defaults.
          version: (req) => ({ version: req.version, runtimeName: 'unit', runtimeVersion: '1.0.0' }),
          containerStatus: async (req) => {
            if (!req.containerId) throw new InvalidArgumentError('container id is required');
            throw new NotFoundError(`container "${req.containerId}" not found`);
          },
          removeContainer: async () => {
            throw new Error('disk on fire');
          },
          // Takes 300 ms, whatever the grace period.
          stopContainer: async (_req, ctx) => {
            await sleep(300, ctx.signal);
            return {};
          },
          // `sleep <ms>` takes that long, whatever the request's own timeout says.
          execSync: async (req, ctx) => {
            lastAbort = ctx.signal;
            await sleep(Number(req.cmd[1] ?? 0), ctx.signal);
            return { exitCode: 0, stdout: Buffer.from('ok') };
          },
          async *getContainerEvents(_req, ctx) {
            let n = 0;
            while (!ctx.signal.aborted) {
              yield {
                containerId: `c${n++}`,
                containerEventType: ContainerEventType.CONTAINER_STARTED_EVENT,
              };
              await sleep(5, ctx.signal).catch(() => {});
            }
          },
        },
        image: {
          imageFsInfo: () => ({
            imageFilesystems: [{ timestamp: 1_700_000_000_000_000_000n, usedBytes: { value: 42n } }],
          }),
        },
      },
      { socketPath: tmp.sock(), onCall: (e) => serverCalls.push(e) },
    );
  });

  afterEach(async () => {
    client?.close();
    client = undefined;
    await server?.close();
    await tmp.remove();
  });

  it('serves typed unary calls and fills in defaults', async () => {
    client = await CriClient.connect(server!.endpoint);
    expect(server!.endpoint).toBe(`unix://${tmp.sock()}`);
    const v = await client.version({ version: 'v1' });
    expect(v).toEqual({ version: 'v1', runtimeName: 'unit', runtimeVersion: '1.0.0', runtimeApiVersion: '' });
  });

  it('carries int64 values as bigint beyond 2^53', async () => {
    client = await CriClient.connect(tmp.sock());
    const fs = await client.imageFsInfo({});
    expect(fs.imageFilesystems[0]?.timestamp).toBe(1_700_000_000_000_000_000n);
    expect(fs.imageFilesystems[0]?.usedBytes?.value).toBe(42n);
  });

  it('creates the socket with mode 0660', async () => {
    const st = await stat(tmp.sock());
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o660);
  });

  it('maps thrown CriErrors to their status and other errors to INTERNAL', async () => {
    client = await CriClient.connect(server!.endpoint);
    const notFound = await client.containerStatus({ containerId: 'abc' }).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound).toMatchObject({ method: 'ContainerStatus', details: 'container "abc" not found' });
    await expect(client.containerStatus({})).rejects.toBeInstanceOf(InvalidArgumentError);
    const internal = await client.removeContainer({ containerId: 'x' }).catch((e: unknown) => e);
    expect(internal).toBeInstanceOf(InternalError);
    expect(internal).toMatchObject({ details: 'disk on fire' });
  });

  it('answers UNIMPLEMENTED naming the backend and method', async () => {
    client = await CriClient.connect(server!.endpoint);
    const err = await client.runPodSandbox({ config: { metadata: { name: 'p' } } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnimplementedError);
    expect(err).toMatchObject({
      details: 'test-backend does not implement runtime.v1.RuntimeService/RunPodSandbox',
    });
    await expect(client.pullImage({ image: { image: 'x' } })).rejects.toThrow(
      'test-backend does not implement runtime.v1.ImageService/PullImage',
    );
    await expect(collect(client.streamContainers({}))).rejects.toBeInstanceOf(UnimplementedError);
  });

  it('enforces per-call deadlines and cancels the handler', async () => {
    client = await CriClient.connect(server!.endpoint, { timeoutMs: 100 });
    const err = await client.execSync({ containerId: 'c', cmd: ['sleep', '5000'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeadlineExceededError);
    await expect.poll(() => lastAbort?.aborted).toBe(true);
    // A per-call timeout overrides the client default.
    const ok = await client.execSync({ containerId: 'c', cmd: ['sleep', '300'] }, { timeoutMs: 5_000 });
    expect(Buffer.from(ok.stdout).toString()).toBe('ok');
  });

  it('extends the ExecSync deadline by the command timeout, as the kubelet does', async () => {
    client = await CriClient.connect(server!.endpoint, { timeoutMs: 100 });
    const ok = await client.execSync({ containerId: 'c', cmd: ['sleep', '300'], timeout: 1n });
    expect(ok.exitCode).toBe(0);
  });

  it('extends the StopContainer deadline by the grace period, as the kubelet does', async () => {
    client = await CriClient.connect(server!.endpoint, { timeoutMs: 100 });
    await expect(client.stopContainer({ containerId: 'c', timeout: 0n })).rejects.toBeInstanceOf(
      DeadlineExceededError,
    );
    await expect(client.stopContainer({ containerId: 'c', timeout: 1n })).resolves.toEqual({});
  });

  it('rejects malformed requests locally with InvalidArgumentError', async () => {
    const events: CriCallEvent[] = [];
    client = await CriClient.connect(server!.endpoint, { onCall: (e) => events.push(e) });
    const err = await client.execSync({ containerId: 'c', timeout: 'soon' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(String(err)).toContain('bad ExecSync request');
    expect(events[0]?.error).toBe(err);
    expect(serverCalls).toEqual([]);
  });

  it('cancels a call through an AbortSignal', async () => {
    client = await CriClient.connect(server!.endpoint);
    const ac = new AbortController();
    const p = client.execSync({ containerId: 'c', cmd: ['sleep', '30000'] }, { signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await expect(p).rejects.toBeInstanceOf(CanceledError);
    await expect(client.version({}, { signal: ac.signal })).rejects.toBeInstanceOf(CanceledError);
  });

  it('streams GetContainerEvents as an AsyncIterable until aborted', async () => {
    client = await CriClient.connect(server!.endpoint);
    const ac = new AbortController();
    const seen: string[] = [];
    for await (const ev of client.getContainerEvents({}, { signal: ac.signal })) {
      seen.push(ev.containerId);
      if (seen.length === 3) ac.abort();
    }
    expect(seen.slice(0, 3)).toEqual(['c0', 'c1', 'c2']);
    // Breaking out of the loop ends the subscription too; the server sees the cancellation.
    const first = await collect(client.getContainerEvents({}), 2);
    expect(first.map((e) => e.containerId)).toEqual(['c0', 'c1']);
    await expect.poll(() => serverCalls.filter((c) => c.method === 'GetContainerEvents').length).toBe(2);
  });

  it('reports every call to onCall with method, duration and error', async () => {
    const events: CriCallEvent[] = [];
    client = await CriClient.connect(server!.endpoint, { onCall: (e) => events.push(e) });
    await client.version({});
    await client.containerStatus({ containerId: 'nope' }).catch(() => {});
    expect(events.map((e) => [e.method, e.service, e.error?.code])).toEqual([
      ['Version', 'runtime.v1.RuntimeService', undefined],
      ['ContainerStatus', 'runtime.v1.RuntimeService', 5],
    ]);
    expect(events.every((e) => e.durationMs >= 0)).toBe(true);
    expect(serverCalls.map((e) => e.method)).toEqual(['Version', 'ContainerStatus']);
  });

  it('refuses to take over a socket that is still served', async () => {
    await expect(serveCri({ name: 'second' }, { socketPath: tmp.sock() })).rejects.toThrow(
      /already listening/,
    );
    // The first server is unharmed.
    client = await CriClient.connect(server!.endpoint);
    await expect(client.version({})).resolves.toMatchObject({ runtimeName: 'unit' });
  });
});

describe('socket housekeeping', () => {
  it('replaces a stale socket file nobody listens on', async () => {
    const tmp = await tempDir();
    // A socket file left behind by a process that was SIGKILLed while listening.
    const child = spawn(process.execPath, [
      '-e',
      `require('node:net').createServer().listen(${JSON.stringify(tmp.sock())}, () => console.log('up'))`,
    ]);
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect((await stat(tmp.sock())).isSocket()).toBe(true);
    const server = await serveCri(
      { name: 'fresh', runtime: { version: () => ({ runtimeName: 'fresh' }) } },
      { socketPath: tmp.sock() },
    );
    const client = await CriClient.connect(server.endpoint);
    await expect(client.version({})).resolves.toMatchObject({ runtimeName: 'fresh' });
    client.close();
    await server.close();
    await tmp.remove();
  });

  it('never deletes a path that is not a socket', async () => {
    const tmp = await tempDir();
    await writeFile(tmp.sock(), 'precious');
    await expect(serveCri({ name: 'x' }, { socketPath: tmp.sock() })).rejects.toThrow(/not a socket/);
    expect((await stat(tmp.sock())).isFile()).toBe(true);
    await tmp.remove();
  });

  it('removes its socket on close and serves tcp too', async () => {
    const tmp = await tempDir();
    const unix = await serveCri({ name: 'x' }, { address: `unix://${tmp.sock()}` });
    await unix.close();
    await expect(stat(tmp.sock())).rejects.toThrow(/ENOENT/);
    const tcp = await serveCri(
      { name: 'tcp', runtime: { version: () => ({ runtimeName: 'tcp' }) } },
      { address: 'tcp://127.0.0.1:0' },
    );
    expect(tcp.endpoint).toMatch(/^tcp:\/\/127\.0\.0\.1:[1-9]\d*$/);
    const client = await CriClient.connect(tcp.endpoint);
    await expect(client.version({})).resolves.toMatchObject({ runtimeName: 'tcp' });
    client.close();
    await tcp.close();
    await tmp.remove();
  });

  it('fails connect with UnavailableError when nothing listens', async () => {
    const tmp = await tempDir();
    const err = await CriClient.connect(tmp.sock('missing.sock'), { connectTimeoutMs: 200 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnavailableError);
    expect(String(err)).toContain(`unix://${tmp.sock('missing.sock')} not ready after 200 ms`);
    await tmp.remove();
  });
});
