// The node-agent command's side of the kubelet's CRI contract, wired end to end against the
// in-memory CRI runtime: the cgroup driver from RuntimeConfig, /stats/summary and
// /metrics/resource from ListPodSandboxStats (PodAndContainerStatsFromCRI), and /checkpoint
// turning the runtime's UNIMPLEMENTED into the kubelet's 500; and the same agent with the three
// gates off, which must call none of it.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CgroupDriver, FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { loopbackFlags, type RunningAgent, startAgent } from './helpers/agent.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { waitForNodeReady } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-cri-surface-'));
let apiserver: TestApiServer;
let api: KubeNodeApi;

function call(port: number, method: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Node {
  name: string;
  runtime: FakeRuntime;
  agent: RunningAgent;
  port: number;
}

/** An agent with a static pod on a fake runtime that says its cgroup driver is systemd. */
async function startNode(name: string, gates: Record<string, boolean>): Promise<Node> {
  const root = join(dir, name);
  mkdirSync(join(root, 'manifests'), { recursive: true });
  const runtime = await FakeRuntime.start({
    socketPath: join(root, 'cri.sock'),
    cgroupDriver: CgroupDriver.SYSTEMD,
  });
  runtime.addImage('docker.io/library/busybox:1', 1_000_000);
  writeFileSync(
    join(root, 'manifests', 'web.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - {name: app, image: "busybox:1", command: [sleep, "3600"]}\n',
  );
  const config = join(root, 'config.yaml');
  writeFileSync(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `podLogsDir: ${join(root, 'logs')}`,
      `staticPodPath: ${join(root, 'manifests')}`,
      'fileCheckFrequency: 1s',
      'cgroupDriver: cgroupfs',
      'featureGates:',
      ...Object.entries(gates).map(([g, on]) => `  ${g}: ${on}`),
      '',
    ].join('\n'),
  );
  const flags = await loopbackFlags(name);
  const port = Number(flags.find((f) => f.startsWith('--port='))?.slice('--port='.length));
  const agent = startAgent([
    `--kubeconfig=${apiserver.kubeconfig}`,
    `--container-runtime-endpoint=${runtime.endpoint}`,
    `--root-dir=${join(root, 'root')}`,
    `--config=${config}`,
    ...flags,
    '--anonymous-auth=true',
    '--authorization-mode=AlwaysAllow',
  ]);
  expect(await waitForNodeReady(apiserver.kubeconfig, name)).toContain('condition met');
  await agent.until('the static pod Running', async () => {
    const p = await api.getPod('default', `web-${name}`);
    return p?.status?.phase === 'Running' ? p : undefined;
  });
  return { name, runtime, agent, port };
}

/** The agent's own count of failed CRI calls of one operation (/metrics), 0 when it has none. */
async function failedCalls(node: Node, operation: string): Promise<number> {
  const { body } = await call(node.port, 'GET', '/metrics');
  const m = new RegExp(
    `^kubelet_runtime_operations_errors_total\\{operation_type="${operation}"\\} (\\d+)`,
    'm',
  ).exec(body);
  return Number(m?.[1] ?? 0);
}

const nodes: Node[] = [];

beforeAll(async () => {
  apiserver = await startTestApiServer();
  api = apiserver.api;
}, 30_000);

afterAll(async () => {
  for (const n of nodes) {
    expect(await n.agent.stop()).toBe(0);
    await n.runtime.stop();
  }
  await apiserver?.stop();
});

describe('gates on (PodAndContainerStatsFromCRI set; the other two by default)', () => {
  let node: Node;
  beforeAll(async () => {
    node = await startNode('surface-on', { PodAndContainerStatsFromCRI: true });
    nodes.push(node);
  }, 60_000);

  it("takes the runtime's cgroup driver over the configured one", async () => {
    const configz = JSON.parse((await call(node.port, 'GET', '/configz')).body);
    expect(configz.kubeletconfig).toMatchObject({
      cgroupDriver: 'systemd',
      featureGates: { PodAndContainerStatsFromCRI: true },
    });
    expect(node.runtime.calls).toContain('RuntimeConfig');
  });

  it('asks ListPodSandboxStats for /stats/summary and /metrics/resource, falling back when it is unimplemented', async () => {
    const summary = JSON.parse((await call(node.port, 'GET', '/stats/summary')).body);
    expect(summary.pods.map((p: { podRef: { name: string } }) => p.podRef.name)).toEqual([
      `web-${node.name}`,
    ]);
    const metrics = await call(node.port, 'GET', '/metrics/resource');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('\nresource_scrape_error 0\n');
    expect(metrics.body).toMatch(
      new RegExp(
        `^container_memory_working_set_bytes\\{container="app",namespace="default",pod="web-${node.name}"\\} `,
        'm',
      ),
    );
    // The fake runtime lacks ListPodSandboxStats: the agent asked, was refused, and fell back.
    expect(await failedCalls(node, 'list_podsandbox_stats')).toBeGreaterThan(0);
    expect(node.runtime.calls).toContain('ListContainerStats');
  });

  it("answers /checkpoint with the kubelet's 500 when the runtime does not implement CheckpointContainer", async () => {
    const r = await call(node.port, 'POST', `/checkpoint/default/web-${node.name}/app`);
    expect(r.status).toBe(500);
    expect(r.body).toMatch(
      new RegExp(
        `^checkpointing of default/web-${node.name}/app failed \\(rpc error: code = Unimplemented desc = .*CheckpointContainer`,
      ),
    );
    expect(await failedCalls(node, 'checkpoint_container')).toBe(1);
  });
});

describe('gates off', () => {
  let node: Node;
  beforeAll(async () => {
    node = await startNode('surface-off', {
      ContainerCheckpoint: false,
      KubeletCgroupDriverFromCRI: false,
      PodAndContainerStatsFromCRI: false,
    });
    nodes.push(node);
  }, 60_000);

  it('keeps the configured driver, lists container stats only, and has no /checkpoint', async () => {
    expect(JSON.parse((await call(node.port, 'GET', '/configz')).body).kubeletconfig.cgroupDriver).toBe(
      'cgroupfs',
    );
    expect((await call(node.port, 'GET', '/stats/summary')).status).toBe(200);
    expect((await call(node.port, 'POST', `/checkpoint/default/web-${node.name}/app`)).status).toBe(404);
    expect(node.runtime.calls).toContain('ListContainerStats');
    for (const m of ['RuntimeConfig', 'ListPodSandboxStats', 'CheckpointContainer'])
      expect(node.runtime.calls).not.toContain(m);
  });
});
