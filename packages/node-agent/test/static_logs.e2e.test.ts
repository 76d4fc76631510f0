// The node-agent command with the wiring of mirror pods, /containerLogs and a separate image
// service endpoint: a static pod from staticPodPath appears in the API as its mirror pod with the
// static pod's status, `kubectl logs` reads its log through the API server's proxy, and image
// calls go to the image service's endpoint only.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { ConfigMirrorAnnotation } from '../src/types/pod_update.js';
import { loopbackFlags, type RunningAgent, startAgent } from './helpers/agent.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-static-e2e-'));
const NODE = 'static-node';
const IMAGE_CALLS = ['PullImage', 'ImageStatus', 'ListImages', 'RemoveImage', 'ImageFsInfo'];
let runtime: FakeRuntime;
let images: FakeRuntime;
let apiserver: TestApiServer;
let kubeconfig: string;
let api: KubeNodeApi;
let agent: RunningAgent;

beforeAll(async () => {
  runtime = await FakeRuntime.start({ socketPath: join(dir, 'runtime.sock') });
  images = await FakeRuntime.start({ socketPath: join(dir, 'images.sock') });
  // The runtime creates containers from its own store; the image service answers for it.
  for (const fake of [runtime, images]) fake.addImage('docker.io/library/busybox:1', 1_000_000);
  apiserver = await startTestApiServer();
  ({ kubeconfig, api } = apiserver);
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  writeFileSync(
    join(manifests, 'web.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - {name: app, image: "busybox:1", command: [sleep, "3600"]}\n',
  );
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `podLogsDir: ${join(dir, 'logs')}`,
      `staticPodPath: ${manifests}`,
      'fileCheckFrequency: 1s',
      '',
    ].join('\n'),
  );
  agent = startAgent([
    `--kubeconfig=${kubeconfig}`,
    `--container-runtime-endpoint=${runtime.endpoint}`,
    `--image-service-endpoint=${images.endpoint}`,
    `--root-dir=${join(dir, 'root')}`,
    `--config=${config}`,
    ...(await loopbackFlags(NODE)),
    // The fake apiserver's log proxy presents no credentials.
    '--anonymous-auth=true',
    '--authorization-mode=AlwaysAllow',
  ]);
  expect(await waitForNodeReady(kubeconfig, NODE)).toContain('condition met');
}, 60_000);

afterAll(async () => {
  expect(await agent.stop()).toBe(0);
  await apiserver?.stop();
  await runtime?.stop();
  await images?.stop();
});

it('mirrors the static pod with its status, serves its log to kubectl, and asks the image service for images', async () => {
  const mirror = await agent.until('the mirror pod Running', async () => {
    const p = await api.getPod('default', `web-${NODE}`);
    return p?.status?.phase === 'Running' ? p : undefined;
  });
  const staticUid = mirror.metadata?.annotations?.[ConfigMirrorAnnotation] ?? '';
  expect(staticUid).not.toBe('');
  expect(mirror.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Node', name: NODE });
  expect(mirror.status?.containerStatuses?.[0]).toMatchObject({ name: 'app', ready: true });

  const logFile = join(dir, 'logs', `default_web-${NODE}_${staticUid}`, 'app', '0.log');
  mkdirSync(join(logFile, '..'), { recursive: true });
  writeFileSync(logFile, '2026-11-23T12:00:00.000000001Z stdout F serving on :80\n');
  expect(await kubectl(kubeconfig, 'logs', `web-${NODE}`, '--timestamps')).toBe(
    '2026-11-23T12:00:00.000000001Z serving on :80\n',
  );

  expect(images.calls).toContain('ImageStatus');
  expect(runtime.calls.filter((c) => IMAGE_CALLS.includes(c))).toEqual([]);
  expect(runtime.calls).toContain('CreateContainer');
}, 30_000);
