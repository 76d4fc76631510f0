// The fake runtime's CRI server under hostile input (issue 20): garbage protobuf, wrong wire
// types and hostile values, KH_FUZZ_RUNS cases (default 400, seed fixed). Every reply must carry a
// precise code with a message, the server must still answer Version, nothing must be left behind,
// and memory must come back to where it was.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { status } from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { criMethods } from '../src/api/methods.js';
import { CRI_MAX_REQUEST_BYTES, CriClient, FakeRuntime, RawCriClient, runCriFuzz } from '../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMiB = () => {
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};
const RUNS = Number(process.env.KH_FUZZ_RUNS ?? 400);
const SEED = 2020;
const byName = (name: string) => criMethods.find((m) => m.name === name)!;

let fake: FakeRuntime;
let client: CriClient;
beforeAll(async () => {
  fake = await FakeRuntime.start();
  client = await CriClient.connect(fake.endpoint);
});
afterAll(async () => {
  client?.close();
  await fake?.stop();
});

describe('fake runtime CRI server fuzz', () => {
  it(
    `answers ${RUNS} hostile requests with precise codes and leaks nothing`,
    { timeout: 600_000 },
    async () => {
      const sandboxes = fake.sandboxes().map((s) => s.id);
      const containers = fake.containers().map((c) => c.id);
      // Warm up the paths the run takes, so the baseline includes what stays loaded.
      await runCriFuzz(fc, fake.endpoint, { labels: {}, sharedEngine: false, runs: 20, seed: 1 });
      for (const s of fake.sandboxes())
        if (!sandboxes.includes(s.id)) await client.removePodSandbox({ podSandboxId: s.id });
      const baseline = heapMiB();

      const run = await runCriFuzz(fc, fake.endpoint, {
        labels: { 'kh.fuzz': 'cri-api' },
        sharedEngine: false,
        runs: RUNS,
        seed: SEED,
      });
      console.log(`fake runtime fuzz: ${run.tally.summary()}`);
      expect(run.tally.distinctFaults()).toEqual([]);
      expect(run.tally.cases).toBe(RUNS);

      expect((await client.version({})).runtimeName).toBeTruthy();
      for (const id of run.created.containers) await client.removeContainer({ containerId: id });
      for (const id of run.created.sandboxes) await client.removePodSandbox({ podSandboxId: id });
      expect(fake.sandboxes().map((s) => s.id)).toEqual(sandboxes);
      expect(fake.containers().map((c) => c.id)).toEqual(containers);
      expect(heapMiB() - baseline).toBeLessThan(16);
    },
  );

  it('answers bytes that are not the request message with INVALID_ARGUMENT naming the method', async () => {
    const raw = new RawCriClient(fake.endpoint);
    try {
      // Field 1, length-delimited, 255 bytes announced and none sent.
      const r = await raw.call(byName('ContainerStatus'), Uint8Array.from([0x0a, 0xff, 0x01]));
      expect(r.code).toBe(status.INVALID_ARGUMENT);
      expect(r.details).toMatch(/^cannot decode the ContainerStatus request: .+/);
    } finally {
      raw.close();
    }
  });

  it('refuses a message one byte over CRI_MAX_REQUEST_BYTES with RESOURCE_EXHAUSTED, and still answers', async () => {
    const raw = new RawCriClient(fake.endpoint);
    try {
      const r = await raw.call(
        byName('PodSandboxStatus'),
        new Uint8Array(CRI_MAX_REQUEST_BYTES + 1).fill(0x0a),
      );
      expect(r.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(r.details).toMatch(/larger than max/);
    } finally {
      raw.close();
    }
    expect((await client.version({})).runtimeName).toBeTruthy();
  });
});
