import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { normalizeImageRef } from '@kh/apimachinery';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CNI_CONF_TEMPLATE_PATH } from '../src/containers/cni.js';
import { containerdRuntime } from '../src/containers/containerd-runtime.js';
import { runId } from '../src/containers/labels.js';
import { removeLeftovers } from '../src/containers/leftovers.js';
import { type StartedTestNetwork, TestNetwork } from '../src/containers/network.js';
import { POD_SUBNET } from '../src/containers/node-config.js';
import {
  NODE_BINARY_IN_NODE,
  NODE_VOLUMES,
  NodeContainer,
  type StartedNodeContainer,
} from '../src/containers/node-container.js';
import { ensureImages, type ImageRefs } from '../src/images/ensure.js';
import { nodeImageInfo } from '../src/images/node-image-info.js';
import { docker, isNotFound } from '../src/util/docker.js';

let refs: ImageRefs<'node' | 'pause' | 'busybox'>;
let network: StartedTestNetwork;
const nodes: StartedNodeContainer[] = [];

beforeAll(async () => {
  refs = await ensureImages(['node', 'pause', 'busybox'], { progress: (l) => console.log(l) });
  network = await new TestNetwork().start();
});

afterAll(async () => {
  for (const n of nodes) await n.stop();
  await network?.stop();
  await removeLeftovers({ runId });
});

async function gone(id: string): Promise<boolean> {
  return docker()
    .getContainer(id)
    .inspect()
    .then(
      () => false,
      (err: unknown) => isNotFound(err),
    );
}

describe('containerd node', () => {
  let node: StartedNodeContainer;

  beforeAll(async () => {
    node = await new NodeContainer(refs.node)
      .withRuntime('containerd')
      .withNetwork(network, 'node-a')
      .withMemoryLimit(1024 * 1024 * 1024)
      .withHostNode()
      .withLabels({ 'kh.test': 'node-container' })
      .withProgress((l) => console.log(l))
      .start();
    nodes.push(node);
    console.log(`containerd node ready ${Math.round(node.readyAfterMs)} ms after start()`);
  });

  test('its CRI answers on the socket bind-mounted to the host', async () => {
    expect(node.criEndpointOnHost).toBe(`unix://${join(node.sharedDirOnHost, 'containerd.sock')}`);
    expect(node.criEndpointInNode).toBe('unix:///run/kh/containerd.sock');
    const v = await node.criVersion();
    expect(v).toMatchObject({ runtimeName: 'containerd', runtimeApiVersion: 'v1' });
    // containerd's own version is the Debian package's upstream part (1.7.24~ds1 of 1.7.24~ds1-6+deb13u1).
    const { packages } = await nodeImageInfo(refs.node);
    expect(v.runtimeVersion).toMatch(/^\d+\.\d+\./);
    expect(packages.containerd?.startsWith(v.runtimeVersion)).toBe(true);
  });

  test('runs as configured: labels, memory limit, runtime config, CNI and registry settings', async () => {
    const info = await docker().getContainer(node.id).inspect();
    expect(info.Config.Labels).toMatchObject({
      'kh.run': runId,
      'kh.owner': 'test',
      'kh.role': 'node',
      'kh.test': 'node-container',
    });
    expect(info.HostConfig.Memory).toBe(1024 * 1024 * 1024);
    const cfg = await node.execOk(['containerd', 'config', 'dump']);
    expect(cfg).toContain(`sandbox_image = "${normalizeImageRef(refs.pause)}"`);
    expect(cfg).toContain('restrict_oom_score_adj = true');
    expect(await node.execOk(['ls', '/etc/containerd/certs.d/registry:5000'])).toContain('hosts.toml');
    // The network config is containerd's, from the node's template and the pod CIDR start() sent as
    // a kubelet would (CRI UpdateRuntimeConfig).
    expect(cfg).toContain(`conf_template = "${CNI_CONF_TEMPLATE_PATH}"`);
    const conflist = JSON.parse(await node.execOk(['cat', '/etc/cni/net.d/10-containerd-net.conflist']));
    expect(conflist.plugins[0].ipam).toEqual({
      type: 'host-local',
      ranges: [[{ subnet: POD_SUBNET }]],
      routes: [{ dst: '0.0.0.0/0' }],
    });
  });

  test('cgroupParent is the node container own cgroup plus /kubepods', () => {
    expect(node.cgroupParent).toBe(`/docker/${node.id}/kubepods`);
  });

  test('the pause image is preloaded and node.loadImages adds more under normalised names', async () => {
    const [busybox] = await node.loadImages([refs.busybox]);
    expect(busybox).toBe(`docker.io/${refs.busybox}`);
    const images = (await node.execOk(['ctr', '-n', 'k8s.io', 'images', 'ls', '-q'])).split('\n');
    expect(images).toEqual(expect.arrayContaining([normalizeImageRef(refs.pause), busybox]));
  });

  test('the host Node.js runs inside the node', async () => {
    expect((await node.execOk([NODE_BINARY_IN_NODE, '-p', 'process.versions.node'])).trim()).toMatch(
      /^2[2-9]\./,
    );
  });

  test('stopRuntime stops containerd but not the node or its running containers; startRuntime brings it back', async () => {
    const pause = normalizeImageRef(refs.pause);
    await node.execOk(['ctr', '-n', 'k8s.io', 'run', '-d', pause, 'survivor']);
    await node.stopRuntime();
    await expect(node.criVersion()).rejects.toThrow();
    expect((await node.exec(['pgrep', '-x', 'containerd'])).exitCode).toBe(1);
    expect((await docker().getContainer(node.id).inspect()).State.Running).toBe(true);
    const status = await node.exec(['kh-runtime', 'status']);
    expect([status.exitCode, status.stdout]).toEqual([3, 'stopped\n']);
    await node.startRuntime();
    expect((await node.criVersion()).runtimeName).toBe('containerd');
    expect(await node.execOk(['ctr', '-n', 'k8s.io', 'tasks', 'ls'])).toMatch(/survivor\s+\d+\s+RUNNING/);
    await node.execOk(['ctr', '-n', 'k8s.io', 'tasks', 'kill', '-s', 'KILL', 'survivor']);
  });

  test('is reachable on the test network by its alias', async () => {
    const other = await new NodeContainer(refs.node).withRuntime('docker').withNetwork(network).start();
    nodes.push(other);
    expect(node.ipAddress(network)).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const r = await other.exec(['getent', 'hosts', 'node-a']);
    expect(r.stdout).toContain(node.ipAddress(network));
  });
});

describe('docker node', () => {
  test('dockerd answers on the socket bind-mounted to the host and accepts loaded images; the node has its devices', async () => {
    // A host device the node is given (withDevices): fuse on this project's machines.
    const device = '/dev/fuse';
    const node = await new NodeContainer(refs.node)
      .withRuntime('docker')
      .withImages(refs.busybox)
      .withDevices([device])
      .start();
    nodes.push(node);
    expect((await node.exec(['test', '-c', device])).exitCode).toBe(0);
    const socketPath = node.runtimeEndpointOnHost.replace('unix://', '');
    const ping = await new Promise<string>((resolve, reject) => {
      http
        .get({ socketPath, path: '/_ping' }, (res) => {
          res.setEncoding('utf8');
          let body = '';
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
    expect(ping).toBe('OK');
    expect(node.criEndpointOnHost).toBe(`unix://${join(node.sharedDirOnHost, 'dockershim.sock')}`);
    const out = await node.execOk(['docker', 'run', '--rm', refs.busybox, 'echo', 'nested']);
    expect(out).toBe('nested\n');

    // dockerd really stops (its socket goes away) while the node lives on, then comes back.
    await node.stopRuntime();
    expect((await node.exec(['docker', 'version'])).exitCode).not.toBe(0);
    expect((await docker().getContainer(node.id).inspect()).State.Running).toBe(true);
    await node.startRuntime();
    const server = (await node.execOk(['docker', 'version', '--format', '{{.Server.Version}}'])).trim();
    expect(server).toMatch(/^\d+\.\d+\./);
    expect((await nodeImageInfo(refs.node)).packages['docker.io']?.startsWith(server)).toBe(true);
  });
});

describe('stop and failures', () => {
  test('stop() removes the container, its anonymous volumes and the shared host directory', async () => {
    const node = await new NodeContainer(refs.node).start();
    const info = await docker().getContainer(node.id).inspect();
    const mounts = info.Mounts.filter((m) => m.Type === 'volume');
    expect(mounts.map((m) => m.Destination).sort()).toEqual([...NODE_VOLUMES].sort());
    const volumes = mounts.map((m) => m.Name!);
    // Labelled like the container, so that cleanup finds any volume that outlives it.
    for (const v of volumes)
      expect((await docker().getVolume(v).inspect()).Labels).toMatchObject({
        'kh.run': runId,
        'kh.role': 'node',
        'kh.pid': String(process.pid),
      });
    await node.stop();
    expect(await gone(node.id)).toBe(true);
    expect(existsSync(node.sharedDirOnHost)).toBe(false);
    for (const v of volumes) {
      await expect(docker().getVolume(v).inspect()).rejects.toMatchObject({ statusCode: 404 });
    }
    await node.stop(); // idempotent
  });

  test('withSharedDirOnTmpfs: the node sees a tmpfs of that size at /run/kh, and stop() unmounts and removes it', async () => {
    const node = await new NodeContainer(refs.node).withSharedDirOnTmpfs('size=64m').start();
    const df = await node.execOk(['df', '-k', '--output=fstype,size', '/run/kh']);
    expect(df.trim().split('\n').at(-1)?.trim().split(/\s+/)).toEqual(['tmpfs', String(64 * 1024)]);
    await node.stop();
    expect(existsSync(node.sharedDirOnHost)).toBe(false);
    const mounts = await readFile('/proc/self/mounts', 'utf8');
    expect(mounts).not.toContain(node.sharedDirOnHost);
  });

  test('withVolumesOnTmpfs: the node volumes are one tmpfs of that size, images load and a container runs on it; stop() removes it', async () => {
    const node = await new NodeContainer(refs.node)
      .withVolumesOnTmpfs('size=256m')
      .withImages(refs.busybox)
      .start();
    const info = await docker().getContainer(node.id).inspect();
    expect(info.Mounts.filter((m) => m.Type === 'volume')).toEqual([]);
    // One filesystem: statfs of every volume reports the same tmpfs (nodefs and imagefs shared).
    const df = await node.execOk(['stat', '-f', '-c', '%T %b %S %i', ...NODE_VOLUMES]);
    const fs = df.trim().split('\n');
    expect(new Set(fs).size).toBe(1);
    const [type, blocks, bsize] = fs[0]!.split(' ');
    expect(type).toBe('tmpfs');
    expect(Number(blocks) * Number(bsize)).toBe(256 * 2 ** 20);
    // containerd's overlayfs snapshotter works on it: a container writes into its layer there.
    const busybox = `docker.io/${refs.busybox}`;
    await node.execOk([
      'ctr',
      '-n',
      'k8s.io',
      'run',
      '--rm',
      busybox,
      'on-tmpfs',
      'sh',
      '-c',
      'dd if=/dev/zero of=/f bs=1M count=8',
    ]);
    await node.stop();
    expect(existsSync(node.volumesDirOnHost!)).toBe(false);
    expect(await readFile('/proc/self/mounts', 'utf8')).not.toContain(node.volumesDirOnHost!);
  });

  test('a node that cannot become ready fails start() with the reason and leaves nothing behind', async () => {
    const before = await docker().listContainers({ all: true, filters: { label: [`kh.run=${runId}`] } });
    await expect(
      new NodeContainer(refs.node).withImages('kubelet-harness/does-not-exist:1').start(),
    ).rejects.toThrow(/does-not-exist/);
    const after = await docker().listContainers({ all: true, filters: { label: [`kh.run=${runId}`] } });
    expect(after.map((c) => c.Id).sort()).toEqual(before.map((c) => c.Id).sort());
  });

  test("a spec's setup runs before the runtime; a failing step ends the node with its output", async () => {
    const spec = containerdRuntime({ setup: ['echo kh-setup-step-ran', 'exit 7'] });
    await expect(new NodeContainer(refs.node).withRuntime(spec).start()).rejects.toThrow(
      /exited \(code 7\) before containerd was ready[\s\S]*kh-setup-step-ran/,
    );
  });

  test('an image that does not exist locally is never pulled', async () => {
    await expect(new NodeContainer('kubelet-harness/node:missing').start()).rejects.toThrow(
      /does not exist locally/,
    );
  });
});

describe('removeLeftovers', () => {
  test('removes the labelled containers, networks and volumes of one run only', async () => {
    const otherRun = `${runId}x`;
    const net = await docker().createNetwork({ Name: `kh-${otherRun}-net`, Labels: { 'kh.run': otherRun } });
    const vol = await docker().createVolume({ Name: `kh-${otherRun}-vol`, Labels: { 'kh.run': otherRun } });
    const c = await docker().createContainer({
      Image: refs.busybox,
      Cmd: ['sleep', '600'],
      Labels: { 'kh.run': otherRun },
      HostConfig: { NetworkMode: `kh-${otherRun}-net` },
    });
    await c.start();
    const removed = await removeLeftovers({ runId: otherRun });
    expect(removed).toEqual({ containers: 1, networks: 1, volumes: 1 });
    expect(await gone(c.id)).toBe(true);
    await expect(docker().getNetwork(net.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(docker().getVolume(vol.name).inspect()).rejects.toMatchObject({ statusCode: 404 });
    // This run's own network is untouched.
    expect((await docker().getNetwork(network.id).inspect()).Name).toBe(network.name);
  });
});
