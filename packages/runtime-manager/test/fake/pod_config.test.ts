// Envs and API volumes end to end through syncPod over the fake runtime: what reaches
// CreateContainer, and a missing config map that blocks the container until it appears.
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { CreateContainerRequest, RunPodSandboxRequest } from '@kh/cri-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DefaultRuntimeHelper } from '../../src/kuberuntime/runtime_helper.js';
import type { SubPathMounter } from '../../src/kuberuntime/subpath.js';
import { FakeObjects } from '../fake_objects.js';
import { ctr, Harness, IMAGE, makePod } from './harness.js';

let h: Harness;
let objects: FakeObjects;
beforeEach(async () => {
  objects = new FakeObjects();
  h = await Harness.start();
  h.manager = await h.newManager({ runtimeHelper: new DefaultRuntimeHelper(h.podsDir, '', objects) });
  h.fake.addImage(IMAGE, 1000);
});
afterEach(async () => {
  await h.stop();
});

const env = (req: CreateContainerRequest) =>
  Object.fromEntries(req.config!.envs.map((e) => [e.key, Buffer.from(e.value).toString('utf8')]));

describe('pod config over the fake runtime', () => {
  it('passes envFrom, valueFrom and $(VAR) in env, command and args, and the config map mount', async () => {
    objects.configMap('cfg', { GREETING: 'hello', 'index.html': '<p>hi</p>' });
    const pod = makePod(
      'cfg',
      [
        ctr('app', {
          command: ['sh', '-c', 'echo $(GREETING) $(POD_NAME)'],
          args: ['$(GREETING)'],
          envFrom: [{ configMapRef: { name: 'cfg' } }],
          env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
          volumeMounts: [{ name: 'www', mountPath: '/www' }],
        }),
      ],
      {
        volumes: [
          { name: 'www', configMap: { name: 'cfg', items: [{ key: 'index.html', path: 'index.html' }] } },
        ],
      },
    );
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    const [req] = h.requests<CreateContainerRequest>('CreateContainer');
    // index.html is a valid variable name too (letters, digits, '-', '.', '_').
    expect(env(req!)).toEqual({ GREETING: 'hello', 'index.html': '<p>hi</p>', POD_NAME: 'cfg' });
    expect(req!.config!.command).toEqual(['sh', '-c', 'echo hello cfg']);
    expect(req!.config!.args).toEqual(['hello']);
    const www = req!.config!.mounts.find((m) => m.containerPath === '/www')!;
    expect(www).toMatchObject({
      hostPath: join(h.podsDir, pod.metadata!.uid!, 'volumes', 'kubernetes.io~configmap', 'www'),
      readonly: true,
    });
  });

  it("gives a hostNetwork pod the IPs its caller set (the node's) for status.podIP and a managed /etc/hosts", async () => {
    const pod = makePod(
      'hostnet',
      [ctr('app', { env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }] })],
      { hostNetwork: true },
    );
    const status = { ...(await h.status(pod)), ips: ['172.18.0.2'] };
    const r = await h.manager.syncPod(pod, status, [], h.backoff);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    const [req] = h.requests<CreateContainerRequest>('CreateContainer');
    expect(env(req!)).toEqual({ POD_IP: '172.18.0.2' });
    expect(req!.config!.mounts.find((m) => m.containerPath === '/etc/hosts')).toMatchObject({
      hostPath: join(h.podsDir, pod.metadata!.uid!, 'etc-hosts'),
    });
  });

  it('fails with CreateContainerConfigError while the config map is missing and starts once it exists', async () => {
    const pod = makePod('late', [ctr('app', { envFrom: [{ configMapRef: { name: 'late-cfg' } }] })]);
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error).map((s) => [s.target, s.reason, s.message])).toEqual([
      ['app', 'CreateContainerConfigError', 'configmap "late-cfg" not found'],
    ]);
    expect(h.events).toContainEqual(
      expect.objectContaining({ reason: 'Failed', message: 'Error: configmap "late-cfg" not found' }),
    );
    expect(h.requests('CreateContainer')).toEqual([]);

    objects.configMap('late-cfg', { A: '1' });
    const again = await h.sync(pod);
    expect(again.steps.filter((s) => s.error)).toEqual([]);
    const st = await h.status(pod);
    expect(st.containerStatuses.map((c) => [c.name, c.state, c.restartCount])).toEqual([
      ['app', 'running', 0],
    ]);
    // The same sandbox: the pod was never recreated.
    expect(h.requests('RunPodSandbox')).toHaveLength(1);
  });

  it('fails with CreateContainerConfigError while the services cannot be read and starts once they can', async () => {
    const notRead = 'services have not yet been read at least once, cannot construct envvars';
    let read = false;
    const services = Object.assign(objects, {
      listServices: async () => {
        if (!read) throw new Error(notRead);
        return [];
      },
    });
    h.manager = await h.newManager({ runtimeHelper: new DefaultRuntimeHelper(h.podsDir, '', services) });
    const pod = makePod('svc-wait', [ctr('app')]);
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error).map((s) => [s.target, s.reason, s.message])).toEqual([
      ['app', 'CreateContainerConfigError', notRead],
    ]);
    expect(h.events).toContainEqual(
      expect.objectContaining({ reason: 'Failed', message: `Error: ${notRead}` }),
    );
    expect(h.requests('CreateContainer')).toEqual([]);
    read = true;
    expect((await h.sync(pod)).steps.filter((s) => s.error)).toEqual([]);
  });
});

describe('subPath over the fake runtime', () => {
  /** Binds by name only: what the manager hands the runtime, and what killPod releases. */
  const mounted = new Set<string>();
  const mounter: SubPathMounter = {
    bind: async (_source, target) => void mounted.add(target),
    unmount: async (target) => void mounted.delete(target),
    isMountPoint: async (target) => mounted.has(target),
  };
  beforeEach(async () => {
    mounted.clear();
    h.manager = await h.newManager({
      runtimeHelper: new DefaultRuntimeHelper(h.podsDir, '', objects, mounter),
    });
  });
  const subPathPod = (name: string, subPath: string) =>
    makePod(name, [ctr('app', { volumeMounts: [{ name: 'data', mountPath: '/d', subPath }] })], {
      volumes: [{ name: 'data', emptyDir: {} }],
    });

  it('mounts the prepared volume-subpaths path and killPod unmounts it', async () => {
    const pod = subPathPod('sub', 'a/b');
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    const [req] = h.requests<CreateContainerRequest>('CreateContainer');
    const target = join(h.podsDir, pod.metadata!.uid!, 'volume-subpaths', 'data', 'app', '0');
    expect(req!.config!.mounts.find((m) => m.containerPath === '/d')?.hostPath).toBe(target);
    expect([...mounted]).toEqual([target]);
    const running = (await h.manager.getPods(false)).find((p) => p.uid === pod.metadata!.uid)!;
    await h.manager.killPod(pod, running, 0);
    expect(mounted.size).toBe(0);
  });

  it('refuses a link out of the volume with CreateContainerConfigError and creates no container', async () => {
    const pod = subPathPod('escape', 'root');
    const vol = join(h.podsDir, pod.metadata!.uid!, 'volumes', 'kubernetes.io~empty-dir', 'data');
    await mkdir(vol, { recursive: true });
    await symlink('/', join(vol, 'root'));
    const r = await h.sync(pod);
    const failed = r.steps.filter((s) => s.error);
    expect(failed.map((s) => [s.reason, s.message])).toEqual([
      ['CreateContainerConfigError', 'failed to prepare subPath for volumeMount "data" of container "app"'],
    ]);
    expect(h.requests('CreateContainer')).toEqual([]);
    expect(mounted.size).toBe(0);
  });
});

describe('the sandbox cgroup parent', () => {
  it('is what the helper gives this pod (the agent: its pod cgroup)', async () => {
    h.manager = await h.newManager({
      runtimeHelper: new DefaultRuntimeHelper(h.podsDir, (p) => `/kubepods/besteffort/pod${p.metadata?.uid}`),
    });
    const pod = makePod('cg', [ctr('app')]);
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    const [req] = h.requests<RunPodSandboxRequest>('RunPodSandbox');
    expect(req!.config!.linux!.cgroupParent).toBe(`/kubepods/besteffort/pod${pod.metadata!.uid}`);
  });
});
