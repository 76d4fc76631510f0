import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CriServer, serveCri } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events } from '../src/groups/events.js';
import { stats } from '../src/groups/stats.js';
import {
  type ConformanceOptions,
  defineGroup,
  formatSummary,
  runConformance,
  Skip,
  type SuiteResult,
  toJUnitXml,
} from '../src/index.js';

// A backend that implements almost nothing: unsupported calls must come out skipped, never passed.
let server: CriServer;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-conformance-unit-'));
  server = await serveCri(
    {
      name: 'minimal',
      runtime: {
        version: () => ({
          version: '0.1.0',
          runtimeName: 'minimal',
          runtimeVersion: '1.0',
          runtimeApiVersion: 'v1',
        }),
        runPodSandbox: () => ({ podSandboxId: 'pod-1' }),
        createContainer: () => ({ containerId: 'c-1' }),
        startContainer: () => ({}),
        stopPodSandbox: () => ({}),
        removePodSandbox: () => ({}),
      },
      image: { imageStatus: () => ({ image: { id: 'sha256:1', size: 1n } }) },
    },
    { socketPath: join(dir, 'cri.sock') },
  );
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

function options(): ConformanceOptions {
  return {
    endpoint: server.endpoint,
    images: { busybox: 'busybox', httpd: 'httpd' },
    logDir: { runtime: dir, local: dir },
    hostPortAddress: '',
    hostPortIp: '',
    cgroupParent: '',
    runId: 'unit',
    callTimeoutMs: 5_000,
  };
}

describe('runConformance', () => {
  let result: SuiteResult;
  beforeAll(async () => {
    const own = defineGroup('own', {
      passes: async () => {},
      skips: async () => {
        throw new Skip('not here');
      },
      fails: async ({ client }) => {
        await client.listContainers({});
      },
    });
    result = await runConformance(options(), { cases: [...own, ...stats.slice(2), ...events] });
  });

  it('records passed, failed and skipped cases with reasons', () => {
    const by = Object.fromEntries(result.cases.map((c) => [c.name, c]));
    expect(by.passes?.status).toBe('passed');
    expect(by.skips).toMatchObject({ status: 'skipped', message: 'not here' });
    expect(by.fails).toMatchObject({ status: 'failed', message: expect.stringMatching(/^UNIMPLEMENTED: /) });
  });

  it('skips, never passes, what the runtime does not implement', () => {
    const podStats = result.cases.find((c) => c.name.startsWith('PodSandboxStats'));
    expect(podStats).toMatchObject({
      status: 'skipped',
      message: expect.stringContaining('PodSandboxStats is not implemented'),
    });
    const ev = result.cases.find((c) => c.group === 'events');
    expect(ev).toMatchObject({
      status: 'skipped',
      message: expect.stringContaining('GetContainerEvents is not implemented'),
    });
    expect(result.totals).toEqual({ passed: 1, failed: 1, skipped: 3 });
    expect(result.runtime).toEqual({ name: 'minimal', version: '1.0', apiVersion: 'v1' });
  });

  it('renders a summary and JUnit XML with failures and skip reasons', () => {
    const summary = formatSummary(result);
    expect(summary).toContain('own                  1 passed, 1 failed, 1 skipped');
    expect(summary).toContain('FAILED own › fails: UNIMPLEMENTED');
    expect(summary).toMatch(/1 passed, 1 failed, 3 skipped in \d+\.\d s$/);
    const xml = toJUnitXml(result);
    expect(xml).toContain('<testsuites name="cri-conformance minimal" tests="5" failures="1" skipped="3"');
    expect(xml).toContain('<testcase classname="own" name="skips"');
    expect(xml).toContain('<skipped message="not here"/>');
    expect(xml).toMatch(/<failure message="UNIMPLEMENTED: [^"]*ListContainers/);
  });

  it('fails clearly when the endpoint does not answer or the test images are missing', async () => {
    await expect(
      runConformance({ ...options(), endpoint: `unix://${join(dir, 'none.sock')}` }),
    ).rejects.toThrow(/cannot talk CRI to unix:\/\//);
    const noImages = await serveCri(
      {
        name: 'no-images',
        runtime: { version: () => ({ runtimeName: 'x' }) },
        image: { imageStatus: () => ({}) },
      },
      { socketPath: join(dir, 'noimg.sock') },
    );
    try {
      await expect(runConformance({ ...options(), endpoint: noImages.endpoint })).rejects.toThrow(
        /test image busybox is not in the runtime and cannot be pulled: UNIMPLEMENTED/,
      );
    } finally {
      await noImages.close();
    }
  });
});
