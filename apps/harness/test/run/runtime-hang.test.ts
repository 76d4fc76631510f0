import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CriServer, serveCri } from '@kh/cri-api';
import { afterEach, expect, test } from 'vitest';
import { detectRuntimeHang } from '../../src/run/runtime-hang.js';

const deadlines = { versionMs: 1_000, statusMs: 500 };
let server: CriServer | undefined;
let dir: string | undefined;

afterEach(async () => {
  await server?.close({ graceMs: 0 });
  if (dir) await rm(dir, { recursive: true, force: true });
  server = undefined;
});

/** A CRI server whose Status behaves as told; Version always answers, as a deadlocked dockerd's does. */
async function runtime(status: () => Promise<object>): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), 'kh-hang-'));
  server = await serveCri(
    {
      name: 'test',
      runtime: {
        version: () => ({ version: '0.1.0', runtimeName: 'docker', runtimeVersion: '20.10.24' }),
        status: () => status() as never,
      },
    },
    { socketPath: join(dir, 'cri.sock') },
  );
  return server.endpoint;
}

test('a runtime that answers Version but not Status is hung, with its goroutine dump', async () => {
  let dumped = 0;
  const hostCriEndpoint = await runtime(() => new Promise(() => {}));
  const hang = await detectRuntimeHang(
    {
      hostCriEndpoint,
      dumpRuntimeStacks: async () => {
        dumped++;
        return ['goroutine 61 [sync.Mutex.Lock]:', 'libnetwork.(*controller).watchLoop'];
      },
    },
    deadlines,
  );
  expect(hang?.reason).toBe(
    "runtime hung: CRI Version answers (docker 20.10.24) but Status did not answer within 0.5 s; its goroutine dump is in the cell's logs",
  );
  expect(hang?.stacks).toEqual(['goroutine 61 [sync.Mutex.Lock]:', 'libnetwork.(*controller).watchLoop']);
  expect(dumped).toBe(1);
});

test('a hung runtime whose backend cannot dump stacks is still named', async () => {
  const hostCriEndpoint = await runtime(() => new Promise(() => {}));
  const hang = await detectRuntimeHang({ hostCriEndpoint }, deadlines);
  expect(hang).toEqual({
    reason: 'runtime hung: CRI Version answers (docker 20.10.24) but Status did not answer within 0.5 s',
  });
});

test('a runtime that answers Status, even with an error, is not hung', async () => {
  expect(
    await detectRuntimeHang({ hostCriEndpoint: await runtime(async () => ({})) }, deadlines),
  ).toBeUndefined();
  await server?.close({ graceMs: 0 });
  const failing = await runtime(async () => {
    throw new Error('docker is not reachable');
  });
  expect(await detectRuntimeHang({ hostCriEndpoint: failing }, deadlines)).toBeUndefined();
});

test('a runtime that is not there at all is down, not hung: the cell keeps its own reason', async () => {
  expect(
    await detectRuntimeHang({ hostCriEndpoint: 'unix:///nonexistent/kh-hang.sock' }, deadlines),
  ).toBeUndefined();
});
