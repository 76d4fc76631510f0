import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CriClient, NamespaceMode, NotFoundError, PodSandboxState, Protocol } from '@kh/cri-api';
import { HostCniNetwork } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerShim, type DockerShimOptions } from '../src/index.js';
import { docker, ENGINE_ENDPOINT, ShimHarness, waitFor } from './harness.js';

// `--network-plugin=cni` against the Engine under test (the node's dockerd, or the host's) and
// Debian's CNI plugins (/usr/lib/cni), on a private bridge and a /24 no route of the shim's network
// namespace uses (testkit's HostCniNetwork), with the conf dir, result cache and host-local leases
// in its temp dir. Everything is removed afterwards.

const h = new ShimHarness();
let net: HostCniNetwork;

// Every shim of this file, the extra ones too, on the Engine under test (not the default socket,
// which a node's dockerd does not use).
const cniOptions = (): Partial<DockerShimOptions> => ({
  dockerEndpoint: ENGINE_ENDPOINT,
  networkPlugin: 'cni',
  cniBinDirs: [net.binDir],
  cniConfDir: net.confDir,
  cniCacheDir: net.cacheDir,
});

beforeAll(async () => {
  net = await HostCniNetwork.create();
  await h.start(cniOptions());
});

afterAll(async () => {
  try {
    // Through the shim first: DEL removes the plugins' iptables rules, which outlive the bridge.
    const { items } = await h.client.listPodSandbox({ filter: { labelSelector: h.labels } });
    for (const s of items) await h.client.removePodSandbox({ podSandboxId: s.id }).catch(() => undefined);
    await h.cleanup();
  } finally {
    await net?.remove();
  }
});

/** The pod's IP as PodSandboxStatus reports it. */
async function podIp(podId: string, client = h.client): Promise<string> {
  return (await client.podSandboxStatus({ podSandboxId: podId })).status?.network?.ip ?? '';
}

const inSubnet = (ip: string) => ip.startsWith(net.network.subnet.replace(/0\/24$/, ''));

/** Interfaces enslaved to the bridge: one veth per pod whose network is up. */
async function bridgePorts(): Promise<string[]> {
  return readdir(`/sys/class/net/${net.network.bridge}/brif`).catch(() => []);
}

async function exec(containerId: string, cmd: string[]): Promise<{ exitCode: number; out: string }> {
  const r = await h.client.execSync({ containerId, cmd, timeout: 20n });
  return { exitCode: r.exitCode, out: Buffer.from(r.stdout).toString() + Buffer.from(r.stderr).toString() };
}

describe('cni mode', () => {
  it('is NetworkReady with a valid conflist, and not ("cni config uninitialized") without one', async () => {
    const s = await h.client.status({ verbose: true });
    expect(s.status?.conditions.map((c) => [c.type, c.status])).toEqual([
      ['RuntimeReady', true],
      ['NetworkReady', true],
    ]);
    expect(JSON.parse(s.info.config ?? '{}')).toMatchObject({
      networkPlugin: 'cni',
      cni: { network: net.name },
    });

    const empty = join(h.dir, 'empty-net.d');
    const other = await DockerShim.start({
      ...cniOptions(),
      cniConfDir: empty,
      socketPath: join(h.dir, 'unready.sock'),
      podInfraContainerImage: h.images.pause,
      log: () => undefined,
    });
    const client = await CriClient.connect(other.endpoint);
    try {
      const network = (await client.status({})).status?.conditions.find((c) => c.type === 'NetworkReady');
      expect(network).toMatchObject({
        status: false,
        reason: 'NetworkPluginNotReady',
        message: `Network plugin returns error: cni config uninitialized: no network config found in ${empty}`,
      });
      // A pod cannot be networked: refused before any container is made.
      await expect(client.runPodSandbox({ config: h.podConfig() })).rejects.toMatchObject({
        codeName: 'FAILED_PRECONDITION',
        message: expect.stringContaining('network plugin is not ready: cni config uninitialized'),
      });
      // Host-network pods need no CNI.
      const { podSandboxId } = await client.runPodSandbox({
        config: h.podConfig({
          linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
        }),
      });
      await client.removePodSandbox({ podSandboxId });
    } finally {
      client.close();
      await other.close();
    }
  });

  it('gives the pod an IP from the conflist subnet on eth0 of a `none`-mode pause container', async () => {
    const { podId, config } = await h.runPod({
      dnsConfig: { servers: ['10.96.0.10'], searches: ['kh.svc.cluster.local'], options: ['ndots:5'] },
    });
    const ip = await podIp(podId);
    expect(inSubnet(ip), `${ip} in ${net.network.subnet}`).toBe(true);
    const info = await docker.getContainer(podId).inspect();
    expect(info.HostConfig.NetworkMode).toBe('none');
    expect(await net.leasedIps()).toContain(ip);

    const c = await h.runContainer(podId, config, 'probe');
    const addr = await exec(c, ['ip', '-o', '-4', 'addr', 'show', 'eth0']);
    expect(addr.out).toContain(`inet ${ip}/24`);
    const lo = await exec(c, ['ip', '-o', 'link', 'show', 'lo']);
    expect(lo.out).toMatch(/state UNKNOWN|,UP/);
    // DNS as the pod asked, through Docker (which takes it with network mode none).
    const resolv = await exec(c, ['cat', '/etc/resolv.conf']);
    expect(resolv.out).toContain('nameserver 10.96.0.10');
    expect(resolv.out).toContain('options ndots:5');
  });

  it('lets pods on the node reach each other by pod IP', async () => {
    const server = await h.runPod();
    await h.runContainer(server.podId, server.config, 'web', {
      image: { image: h.images.httpd },
      command: [],
    });
    const serverIp = await podIp(server.podId);
    const client = await h.runPod();
    const c = await h.runContainer(client.podId, client.config, 'curl');
    const page = await waitFor(async () => {
      // (Debian's static busybox wget crashes with -T.)
      const r = await exec(c, ['wget', '-q', '-O', '-', `http://${serverIp}/`]);
      return r.exitCode === 0 ? r.out : undefined;
    }, `http://${serverIp}/ from another pod`);
    expect(page).toContain('kubelet-harness');
    // Docker's stats of a `none` container have no interfaces: the shim reads the pod's namespace.
    const stats = (await h.client.podSandboxStats({ podSandboxId: server.podId })).stats;
    expect(stats?.linux?.network?.defaultInterface?.name).toBe('eth0');
    expect(stats?.linux?.network?.defaultInterface?.txBytes?.value).toBeGreaterThan(0n);
    expect(stats?.linux?.network?.interfaces.map((i) => i.name)).toEqual(['eth0']);
  });

  it("forwards a hostPort through portmap from the node's loopback to the pod", async () => {
    const port = 39_000 + Math.floor(Math.random() * 1_000);
    const { podId, config } = await h.runPod({
      portMappings: [{ protocol: Protocol.TCP, containerPort: 80, hostPort: port }],
    });
    await h.runContainer(podId, config, 'web', { image: { image: h.images.httpd }, command: [] });
    const page = await waitFor(
      () =>
        fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(3_000) }).then(
          (r) => r.text(),
          () => undefined,
        ),
      `127.0.0.1:${port} forwarded to the pod`,
    );
    expect(page).toContain('kubelet-harness');
    // No Docker port binding: portmap did it.
    expect((await docker.getContainer(podId).inspect()).HostConfig.PortBindings ?? {}).toEqual({});
    await h.client.stopPodSandbox({ podSandboxId: podId });
    await expect(
      fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(3_000) }),
    ).rejects.toThrow();
  });

  it('tears the network down at StopPodSandbox (lease and veth gone), and Remove is a no-op for it', async () => {
    const before = await bridgePorts();
    const { podId } = await h.runPod();
    const ip = await podIp(podId);
    expect((await bridgePorts()).length).toBe(before.length + 1);
    await h.client.stopPodSandbox({ podSandboxId: podId });
    expect(await net.leasedIps()).not.toContain(ip);
    expect(await bridgePorts()).toEqual(before);
    expect(await podIp(podId)).toBe('');
    expect(existsSync(join(net.cacheDir, 'results', `${net.name}-${podId}-eth0`))).toBe(false);
    await h.client.stopPodSandbox({ podSandboxId: podId });
    await h.client.removePodSandbox({ podSandboxId: podId });
    await h.client.removePodSandbox({ podSandboxId: podId });
    await expect(h.client.podSandboxStatus({ podSandboxId: podId })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('tears the network down at RemovePodSandbox of a running sandbox', async () => {
    const before = await bridgePorts();
    const { podId } = await h.runPod();
    const ip = await podIp(podId);
    await h.client.removePodSandbox({ podSandboxId: podId });
    expect(await net.leasedIps()).not.toContain(ip);
    expect(await bridgePorts()).toEqual(before);
  });

  it('answers and tears down after a restart of the shim, and when the pause container is gone', async () => {
    const kept = await h.runPod();
    const gone = await h.runPod();
    const [keptIp, goneIp] = [await podIp(kept.podId), await podIp(gone.podId)];
    await h.stopShim();
    await h.startShim(cniOptions());
    expect(await podIp(kept.podId)).toBe(keptIp);
    await h.client.stopPodSandbox({ podSandboxId: kept.podId });
    expect(await net.leasedIps()).not.toContain(keptIp);

    // Removed behind the shim's back: DEL with no namespace still releases the address.
    await docker.getContainer(gone.podId).remove({ force: true });
    expect(await net.leasedIps()).toContain(goneIp);
    await h.client.stopPodSandbox({ podSandboxId: gone.podId });
    expect(await net.leasedIps()).not.toContain(goneIp);
    await h.client.removePodSandbox({ podSandboxId: kept.podId });
    await h.client.removePodSandbox({ podSandboxId: gone.podId });
  });

  it("fails RunPodSandbox with the plugin's own error and leaves no container or lease behind", async () => {
    // A bin dir where `bridge` answers ADD with a CNI error, in front of the real plugins.
    const bin = join(h.dir, 'failing-bin');
    await mkdir(bin, { recursive: true });
    await writeFile(
      join(bin, 'bridge'),
      `#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then exec ${net.binDir}/bridge; fi
if [ "$CNI_COMMAND" = ADD ]; then
  echo '{"cniVersion":"0.4.0","code":7,"msg":"kh test: no address for you","details":"pool empty"}'
  exit 1
fi
exec ${net.binDir}/bridge
`,
    );
    await chmod(join(bin, 'bridge'), 0o755);
    const leases = await net.leasedIps();
    const cached = await readdir(join(net.cacheDir, 'results'));
    const other = await DockerShim.start({
      ...cniOptions(),
      cniBinDirs: [bin, net.binDir],
      socketPath: join(h.dir, 'failing.sock'),
      podInfraContainerImage: h.images.pause,
      log: () => undefined,
    });
    const client = await CriClient.connect(other.endpoint);
    try {
      const config = h.podConfig();
      await expect(client.runPodSandbox({ config })).rejects.toMatchObject({
        codeName: 'UNKNOWN',
        message: expect.stringMatching(
          /failed to set up sandbox container "[0-9a-f]{64}" network for pod "pod\d+": plugin type="bridge" failed \(add\): kh test: no address for you; pool empty/,
        ),
      });
      const left = await docker.listContainers({
        all: true,
        filters: { label: [`io.kubernetes.pod.uid=${config.metadata?.uid}`] },
      });
      expect(left).toEqual([]);
      expect(await net.leasedIps()).toEqual(leases);
      expect(await readdir(join(net.cacheDir, 'results'))).toEqual(cached);
    } finally {
      client.close();
      await other.close();
    }
  });

  it('keeps host-network pods off CNI', async () => {
    const leases = await net.leasedIps();
    const { podId } = await h.runPod({
      linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
    });
    const status = (await h.client.podSandboxStatus({ podSandboxId: podId })).status;
    expect(status?.network?.ip).toBe('');
    expect(status?.state).toBe(PodSandboxState.SANDBOX_READY);
    expect((await docker.getContainer(podId).inspect()).HostConfig.NetworkMode).toBe('host');
    expect(await net.leasedIps()).toEqual(leases);
    await h.client.removePodSandbox({ podSandboxId: podId });
  });

  it('takes the pod CIDR and writes its conf template, then networks pods from it', async () => {
    const confDir = join(h.dir, 'templated-net.d');
    const template = join(h.dir, 'template.json');
    // The conflist of the network, with the subnet left to the template.
    const conflist = await readFile(join(net.confDir, '10-kh-host.conflist'), 'utf8');
    await writeFile(template, conflist.replace(net.network.subnet, '{{.PodCIDR}}'));
    const other = await DockerShim.start({
      ...cniOptions(),
      cniConfDir: confDir,
      cniConfTemplate: template,
      socketPath: join(h.dir, 'templated.sock'),
      podInfraContainerImage: h.images.pause,
      log: () => undefined,
    });
    const client = await CriClient.connect(other.endpoint);
    try {
      const ready = async () =>
        (await client.status({})).status?.conditions.find((c) => c.type === 'NetworkReady')?.status;
      expect(await ready()).toBe(false);
      await expect(
        client.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: 'not-a-cidr' } } }),
      ).rejects.toMatchObject({ codeName: 'INVALID_ARGUMENT' });
      await client.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: net.network.subnet } } });
      expect(await ready()).toBe(true);
      const { podSandboxId } = await client.runPodSandbox({ config: h.podConfig() });
      const ip = (await client.podSandboxStatus({ podSandboxId })).status?.network?.ip ?? '';
      expect(inSubnet(ip), ip).toBe(true);
      await client.removePodSandbox({ podSandboxId });
      expect(await net.leasedIps()).not.toContain(ip);
    } finally {
      client.close();
      await other.close();
    }
  });
});
