import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { criTools } from '../src/cri-tools.js';
import {
  HostContainerd,
  removeHostContainerdLeftovers,
  type StartedHostContainerd,
} from '../src/host-containerd.js';
import { ensureImages, type ImageRefs } from '../src/images/ensure.js';
import { run } from '../src/util/process.js';

// A private containerd on the host, driven through crictl (testkit cannot depend on @kh/cri-api).

let refs: ImageRefs<'pause' | 'busybox' | 'httpd'>;
let crictlBin: string;
let ctrd: StartedHostContainerd;

const crictl = async (...args: string[]) =>
  (await run(crictlBin, ['--runtime-endpoint', ctrd.endpoint, '--image-endpoint', ctrd.endpoint, ...args]))
    .stdout;

async function writeJson(name: string, value: unknown): Promise<string> {
  const path = `${ctrd.dir}/${name}`;
  await writeFile(path, JSON.stringify(value));
  return path;
}

/** Mount points and processes that belong to a HostContainerd dir (for leak checks). */
async function traces(dir: string, socketPath: string) {
  const mounts = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((l) => l.includes(dir));
  const procs: string[] = [];
  for (const pid of (await readdir('/proc')).filter((e) => /^\d+$/.test(e))) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(dir) || cmd.includes(socketPath)) procs.push(`${pid} ${cmd.replaceAll('\0', ' ')}`);
  }
  return { mounts, procs };
}

beforeAll(async () => {
  refs = await ensureImages(['pause', 'busybox', 'httpd']);
  crictlBin = (await criTools()).crictl;
  ctrd = await new HostContainerd().withImages([refs.busybox, refs.httpd]).start();
});

afterAll(async () => {
  await ctrd?.stop();
});

describe('HostContainerd', () => {
  test('answers CRI on its own socket with the local images imported under normalised names', async () => {
    expect(ctrd.version).toMatchObject({ runtimeName: 'containerd', runtimeApiVersion: 'v1' });
    expect(ctrd.endpoint).toBe(`unix://${ctrd.dir}/containerd.sock`);
    expect(ctrd.images).toEqual([
      `docker.io/${refs.pause}`,
      `docker.io/${refs.busybox}`,
      `docker.io/${refs.httpd}`,
    ]);
    const listed = JSON.parse(await crictl('images', '-o', 'json')) as {
      images: Array<{ repoTags: string[] }>;
    };
    const tags = listed.images.flatMap((i) => i.repoTags);
    for (const name of ctrd.images) expect(tags).toContain(name);
    const info = JSON.parse(await crictl('info')) as {
      status: { conditions: Array<{ type: string; status: boolean }> };
    };
    expect(info.status.conditions).toContainEqual(
      expect.objectContaining({ type: 'NetworkReady', status: true }),
    );
  });

  test('runs a pod on its private bridge and subnet; pods reach each other and host ports on loopback', async () => {
    expect(ctrd.network.subnet).toMatch(/^10\.\d+\.\d+\.0\/24$/);
    const pod = (name: string, ports: unknown[] = []) =>
      writeJson(`${name}-pod.json`, {
        metadata: { name, namespace: 'kh-test', uid: `${name}-uid`, attempt: 0 },
        port_mappings: ports,
        linux: {},
      });
    const container = (name: string, image: string, command?: string[]) =>
      writeJson(`${name}-ctr.json`, {
        metadata: { name },
        image: { image },
        ...(command ? { command } : {}),
        linux: {},
      });

    const hostPort = 20_000 + Math.floor(Math.random() * 10_000);
    const webPod = await pod('web', [{ container_port: 80, host_port: hostPort, host_ip: '127.0.0.1' }]);
    const web = (
      await crictl('run', '--no-pull', await container('web', ctrd.images[2] ?? ''), webPod)
    ).trim();
    const webPodId = JSON.parse(await crictl('inspect', web)).info.sandboxID as string;
    const webIp = JSON.parse(await crictl('inspectp', webPodId)).status.network.ip as string;
    expect(webIp.startsWith(ctrd.network.subnet.replace(/0\/24$/, ''))).toBe(true);

    const clientPod = await pod('client');
    const client = (
      await crictl(
        'run',
        '--no-pull',
        await container('client', ctrd.images[1] ?? '', ['sleep', '600']),
        clientPod,
      )
    ).trim();
    const out = await crictl('exec', client, 'wget', '-q', '-O', '-', `http://${webIp}/healthz`);
    expect(out).toBe('ok\n');
    const viaHostPort = await fetch(`http://127.0.0.1:${hostPort}/healthz`);
    expect(await viaHostPort.text()).toBe('ok\n');
    expect(existsSync(`/sys/class/net/${ctrd.network.bridge}`)).toBe(true);
  });

  test('stop() removes pods, containerd, shims, mounts, bridge and dir, even with running pods; twice is fine', async () => {
    const pods = JSON.parse(await crictl('pods', '-o', 'json')) as { items: unknown[] };
    expect(pods.items.length).toBeGreaterThan(0);
    const { dir, socketPath, network } = {
      dir: ctrd.dir,
      socketPath: ctrd.socketPath,
      network: ctrd.network,
    };
    expect((await traces(dir, socketPath)).procs.length).toBeGreaterThan(1); // containerd and shims
    await ctrd.stop();
    await ctrd.stop();
    expect(await traces(dir, socketPath)).toEqual({ mounts: [], procs: [] });
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(`/sys/class/net/${network.bridge}`)).toBe(false);
    const routes = (await run('ip', ['route'])).stdout;
    expect(routes).not.toContain(network.subnet.replace(/\/24$/, ''));
  });

  test('a failed start leaves nothing behind', async () => {
    const lines: string[] = [];
    const failing = new HostContainerd()
      .withImages(['kubelet-harness/no-such-image:0'])
      .withProgress((line) => lines.push(line));
    await expect(failing.start()).rejects.toThrow(/no-such-image:0 is not in the host engine/);
    // containerd was up when the import failed: its dir and bridge are named in the progress.
    const m = /host containerd (\S+) \(bridge (\S+),/.exec(lines.join('\n'));
    expect(m, lines.join('\n')).not.toBeNull();
    const [, dir = '', bridge = ''] = m ?? [];
    expect(await traces(dir, `${dir}/containerd.sock`)).toEqual({ mounts: [], procs: [] });
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(`/sys/class/net/${bridge}`)).toBe(false);
  });

  test('removeHostContainerdLeftovers stops one whose owning process died, pods and all', async () => {
    const orphan = await new HostContainerd().start();
    const { dir, socketPath } = orphan;
    const bridge = orphan.network.bridge;
    const podJson = join(dir, 'pod.json');
    await writeFile(
      podJson,
      JSON.stringify({ metadata: { name: 'orphan', namespace: 'kh-test', uid: 'orphan-uid' }, linux: {} }),
    );
    await run(crictlBin, ['--runtime-endpoint', orphan.endpoint, 'runp', podJson]);
    // As if the test process that started it had been killed: its owner is a pid that has exited.
    const dead = await new Promise<number>((resolve) => {
      const child = spawn('true');
      child.once('exit', () => resolve(child.pid ?? 0));
    });
    const owner = JSON.parse(await readFile(join(dir, 'owner.json'), 'utf8'));
    await writeFile(join(dir, 'owner.json'), JSON.stringify({ ...owner, pid: dead }));
    expect(await removeHostContainerdLeftovers()).toBeGreaterThanOrEqual(1);
    expect(await traces(dir, socketPath)).toEqual({ mounts: [], procs: [] });
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(`/sys/class/net/${bridge}`)).toBe(false);
  });
});
