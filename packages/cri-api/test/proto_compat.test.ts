import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ContainerEventType,
  ContainerState,
  ImageServiceDefinition,
  PodSandboxState,
  RuntimeServiceDefinition,
} from '../src/index.js';
import { runBuf } from './helpers.js';

/**
 * SHA-256 of the descriptor of upstream k8s.io/cri-api pkg/apis/runtime/v1/api.proto at commit
 * 791729b255f0c2d0019d3862ba6ef000c4a30c4d, built by buf without source info and with every
 * `options` entry (go_package, gogoproto) dropped. Comments and layout do not enter it; any change
 * to a name, field number, type, label, enum value or RPC does.
 */
const UPSTREAM_DESCRIPTOR_SHA256 = 'a9e95f14b3660d7da77bbd8474a70cf91f707e17cf0615aef8f9a49676a74d06';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function canonical(v: Json): Json {
  if (Array.isArray(v)) return v.map(canonical);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .filter((k) => k !== 'options')
      .map((k) => [k, canonical(v[k]!)]),
  );
}

describe('CRI proto wire compatibility', () => {
  it('has exactly the upstream descriptor', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kh-cri-desc-'));
    try {
      const out = path.join(dir, 'descriptor.json');
      await runBuf(['build', 'proto', '--exclude-source-info', '-o', out]);
      const set = JSON.parse(await readFile(out, 'utf8')) as { file: { name: string }[] };
      const file = set.file.find((f) => f.name === 'runtime/v1/api.proto');
      const digest = createHash('sha256')
        .update(JSON.stringify(canonical(file as unknown as Json)))
        .digest('hex');
      expect(
        digest,
        'proto/runtime/v1/api.proto no longer matches upstream CRI v1 on the wire ' +
          '(a name, field number, type, enum value or RPC changed)',
      ).toBe(UPSTREAM_DESCRIPTOR_SHA256);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exposes the upstream enums and RPCs under their upstream names', () => {
    expect([
      ContainerState.CONTAINER_CREATED,
      ContainerState.CONTAINER_RUNNING,
      ContainerState.CONTAINER_EXITED,
      ContainerState.CONTAINER_UNKNOWN,
    ]).toEqual([0, 1, 2, 3]);
    expect([PodSandboxState.SANDBOX_READY, PodSandboxState.SANDBOX_NOTREADY]).toEqual([0, 1]);
    expect(ContainerEventType.CONTAINER_DELETED_EVENT).toBe(3);
    const runtime = Object.values(RuntimeServiceDefinition.methods).map((m) => m.name);
    expect(runtime).toEqual(
      expect.arrayContaining([
        'GetContainerEvents',
        'ListMetricDescriptors',
        'ListPodSandboxMetrics',
        'RuntimeConfig',
        'UpdatePodSandboxResources',
      ]),
    );
    expect(Object.values(ImageServiceDefinition.methods).map((m) => m.name)).toContain('ImageFsInfo');
  });
});
