import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IMAGE_GC_PERIOD_FLAG, loadKubeletConfiguration } from '@kh/node-agent';
import { describe, expect, it } from 'vitest';
import {
  AGENT_CLIENT_CA_PATH,
  AGENT_CONFIG_PATH,
  AGENT_KUBECONFIG_PATH,
  AGENT_STATIC_POD_PATH,
  NodeAgent,
} from '../../src/node/agent.js';
import { kubeletConfiguration } from '../../src/node/agent-config.js';
import type { NodeHost, NodeProcess } from '../../src/node/host.js';

describe('kubeletConfiguration', () => {
  it('keeps the kubelet defaults the scenarios assert on', () => {
    const c = kubeletConfiguration({ criEndpoint: 'unix:///run/kh/containerd.sock' });
    expect(c).toMatchObject({
      containerRuntimeEndpoint: 'unix:///run/kh/containerd.sock',
      nodeStatusUpdateFrequency: '10s',
      nodeLeaseDurationSeconds: 40,
      imageGCHighThresholdPercent: 85,
      imageGCLowThresholdPercent: 80,
      maxPods: 110,
      port: 10250,
    });
    expect((c.evictionHard as Record<string, string>)['memory.available']).toBe('100Mi');
    expect(c).not.toHaveProperty('cgroupRoot');
    // Without a cgroup root of its own the agent makes no pod or QoS cgroups on the host.
    expect(c.cgroupsPerQOS).toBe(false);
  });

  it('sets the cgroup root and lets overrides win', () => {
    const c = kubeletConfiguration({
      criEndpoint: 'unix:///x.sock',
      cgroupRoot: '/docker/abc',
      overrides: { imageGCHighThresholdPercent: 1, maxPods: 5 },
    });
    expect(c).not.toHaveProperty('cgroupsPerQOS');
    expect(c).toMatchObject({
      cgroupRoot: '/docker/abc',
      imageGCHighThresholdPercent: 1,
      maxPods: 5,
    });
  });

  it('turns anonymous access off and asks the apiserver (webhook) about every other caller', () => {
    const c = kubeletConfiguration({ criEndpoint: 'unix:///x.sock', clientCAFile: '/etc/kh/ca.crt' });
    expect(c.authentication).toEqual({
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: '/etc/kh/ca.crt' },
    });
    expect(c.authorization).toEqual({ mode: 'Webhook' });
    expect(kubeletConfiguration({ criEndpoint: 'unix:///x.sock' }).authentication).not.toHaveProperty('x509');
  });

  it('is a configuration the node agent loads without errors', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kh-agent-config-'));
    try {
      const file = join(dir, 'config.json');
      const config = kubeletConfiguration({
        criEndpoint: 'unix:///x.sock',
        cgroupRoot: '/kubepods',
        clientCAFile: '/etc/kh/ca.crt',
      });
      await writeFile(file, JSON.stringify(config));
      const loaded = await loadKubeletConfiguration(file);
      expect(loaded.config.evictionPressureTransitionPeriod).toBe('20s');
      expect(loaded.config.cgroupRoot).toBe('/kubepods');
      expect(loaded.config.authentication.x509.clientCAFile).toBe('/etc/kh/ca.crt');
      expect(loaded.config.authentication.anonymous.enabled).toBe(false);
      expect(loaded.resolved.nodeStatusUpdateFrequencyMs).toBe(10_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** A NodeHost that records what the agent wrote and started. */
function recordingHost() {
  const files = new Map<string, string>();
  const spawned: string[][] = [];
  const stops: string[] = [];
  let exit: (code: number) => void = () => {};
  const host: NodeHost = {
    exec: async () => ({ exitCode: 0, output: '' }),
    writeFile: async (p, c) => {
      files.set(p, c);
    },
    spawn: async (cmd) => {
      spawned.push(cmd);
      const exited = new Promise<number | null>((r) => {
        exit = r;
      });
      const p: NodeProcess = {
        name: 'node-agent',
        exited,
        tail: () => [`line of agent ${spawned.length}`],
        stop: async (sig) => {
          stops.push(sig ?? 'SIGTERM');
          exit(0);
        },
      };
      return p;
    },
  };
  return { host, files, spawned, stops, crash: (code: number) => exit(code) };
}

describe('NodeAgent', () => {
  const opts = {
    nodeName: 'n1',
    criEndpoint: 'unix:///run/kh/fake.sock',
    kubeconfig: 'apiVersion: v1\n',
    nodeIp: '10.0.0.2',
  };

  it('writes its files and starts with the kubelet flags', async () => {
    const h = recordingHost();
    const agent = new NodeAgent(h.host, opts);
    await agent.start();
    expect(h.files.get(AGENT_KUBECONFIG_PATH)).toBe('apiVersion: v1\n');
    const written = JSON.parse(h.files.get(AGENT_CONFIG_PATH)!);
    expect(written.containerRuntimeEndpoint).toBe('unix:///run/kh/fake.sock');
    // Static pods, as the node e2e suite's kubelet has them: scenarios write manifests there.
    expect(written.staticPodPath).toBe(AGENT_STATIC_POD_PATH);
    expect(h.spawned[0]).toEqual(
      expect.arrayContaining([
        '--kubeconfig=/etc/kh/kubeconfig',
        '--config=/etc/kh/kubelet-config.json',
        '--hostname-override=n1',
        '--node-ip=10.0.0.2',
      ]),
    );
    expect(agent.running).toBe(true);
    await expect(agent.start()).rejects.toThrow('already running');
  });

  it('writes the apiserver CA it is given and names it as clientCAFile', async () => {
    const h = recordingHost();
    await new NodeAgent(h.host, { ...opts, clientCA: 'PEM' }).start();
    expect(h.files.get(AGENT_CLIENT_CA_PATH)).toBe('PEM');
    const config = JSON.parse(h.files.get(AGENT_CONFIG_PATH)!);
    expect(config.authentication.x509.clientCAFile).toBe(AGENT_CLIENT_CA_PATH);
  });

  it('reconfigure restarts with the overrides merged, and {} resets them', async () => {
    const h = recordingHost();
    const agent = new NodeAgent(h.host, opts);
    await agent.start();
    await agent.reconfigure({ imageGCHighThresholdPercent: 1 });
    expect(h.stops).toEqual(['SIGTERM']);
    expect(JSON.parse(h.files.get(AGENT_CONFIG_PATH)!).imageGCHighThresholdPercent).toBe(1);
    await agent.reconfigure({});
    expect(JSON.parse(h.files.get(AGENT_CONFIG_PATH)!).imageGCHighThresholdPercent).toBe(85);
    expect(h.spawned).toHaveLength(3);
    expect(agent.tail(10)).toEqual(['line of agent 1', 'line of agent 2', 'line of agent 3']);
  });

  it('reconfigure passes test-only settings as hidden flags, keeps them across restarts, and {} drops them', async () => {
    const h = recordingHost();
    const agent = new NodeAgent(h.host, opts);
    await agent.start();
    expect(h.spawned[0]!.some((a) => a.includes(IMAGE_GC_PERIOD_FLAG))).toBe(false);
    await agent.reconfigure({}, { imageGCPeriod: '10s' });
    expect(h.spawned[1]).toContain(`--${IMAGE_GC_PERIOD_FLAG}=10s`);
    await agent.stop();
    await agent.start();
    expect(h.spawned[2]).toContain(`--${IMAGE_GC_PERIOD_FLAG}=10s`);
    await agent.reconfigure({});
    expect(h.spawned[3]!.some((a) => a.includes(IMAGE_GC_PERIOD_FLAG))).toBe(false);
  });

  it('kill() ends the agent with SIGKILL, keeps its lines, and start() runs it again', async () => {
    const h = recordingHost();
    const agent = new NodeAgent(h.host, opts);
    await agent.start();
    await agent.kill();
    expect(h.stops).toEqual(['SIGKILL']);
    expect(agent.running).toBe(false);
    await agent.start();
    expect(agent.running).toBe(true);
    expect(agent.tail(10)).toEqual(['line of agent 1', 'line of agent 2']);
  });

  it('notices an agent that exits by itself and keeps its last lines', async () => {
    const h = recordingHost();
    const agent = new NodeAgent(h.host, opts);
    await agent.start();
    h.crash(1);
    await new Promise((r) => setTimeout(r, 10));
    expect(agent.running).toBe(false);
    expect(agent.tail(5)).toEqual(['line of agent 1', '-- node-agent exited unexpectedly (code 1) --']);
  });
});
