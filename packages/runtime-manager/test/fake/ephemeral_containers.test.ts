import { type CreateContainerRequest, NamespaceMode } from '@kh/cri-api';
import type { V1EphemeralContainer, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { PodSyncResult } from '../../src/container/runtime.js';
import { ctr, type Harness, harnessPerTest, IMAGE, makePod } from './harness.js';

let h: Harness;
harnessPerTest((started) => {
  h = started;
});

const failures = (r: PodSyncResult) =>
  r.steps.filter((s) => s.error).map((s) => `${s.action} ${s.target}: ${s.reason}: ${s.message}`);
const debuggerC = (name: string, extra: Partial<V1EphemeralContainer> = {}): V1EphemeralContainer => ({
  name,
  image: IMAGE,
  command: ['sh'],
  stdin: true,
  tty: true,
  ...extra,
});
const withEphemeral = (pod: V1Pod, ...ecs: V1EphemeralContainer[]): V1Pod => ({
  ...pod,
  spec: { ...pod.spec!, ephemeralContainers: [...(pod.spec!.ephemeralContainers ?? []), ...ecs] },
});
const created = (name: string) =>
  h.requests<CreateContainerRequest>('CreateContainer').find((c) => c.config!.metadata!.name === name)!
    .config!;

describe('ephemeral containers over the fake runtime', () => {
  it('starts a new one in the running sandbox, with stdin and tty, and leaves the others alone', async () => {
    let pod = makePod('dbg', [ctr('app')]);
    await h.sync(pod);
    const sandbox = (await h.status(pod)).sandboxStatuses[0]!.id;
    pod = withEphemeral(pod, debuggerC('debugger'));
    const r = await h.sync(pod);
    expect(failures(r)).toEqual([]);
    expect(r.steps.map((s) => `${s.action} ${s.target}`)).toEqual(['StartContainer debugger']);
    const create = h.requests<CreateContainerRequest>('CreateContainer').at(-1)!;
    expect(create.podSandboxId).toBe(sandbox);
    expect(create.config).toMatchObject({ stdin: true, tty: true, logPath: 'debugger/0.log' });
    expect(create.config!.labels['io.kubernetes.container.name']).toBe('debugger');
    // Without a target it gets a PID namespace of its own, as any container of this pod.
    expect(create.config!.linux!.securityContext!.namespaceOptions!.pid).toBe(NamespaceMode.CONTAINER);
    const st = await h.status(pod);
    expect(st.containerStatuses.map((c) => [c.name, c.state]).sort()).toEqual([
      ['app', 'running'],
      ['debugger', 'running'],
    ]);
    expect((await h.sync(pod)).steps).toEqual([]);
  });

  it('joins the PID namespace of its running target (TARGET with target_id)', async () => {
    let pod = makePod('target', [ctr('app'), ctr('other')]);
    await h.sync(pod);
    const app = (await h.status(pod)).containerStatuses.find((c) => c.name === 'app')!;
    pod = withEphemeral(pod, debuggerC('debugger', { targetContainerName: 'app' }));
    expect(failures(await h.sync(pod))).toEqual([]);
    const ns = created('debugger').linux!.securityContext!.namespaceOptions!;
    expect(ns.pid).toBe(NamespaceMode.TARGET);
    expect(ns.targetId).toBe(app.id.id);
  });

  it('keeps the pod namespace of a pod that shares one, whatever the target', async () => {
    let pod = makePod('shared', [ctr('app')], { shareProcessNamespace: true });
    await h.sync(pod);
    pod = withEphemeral(pod, debuggerC('debugger', { targetContainerName: 'app' }));
    expect(failures(await h.sync(pod))).toEqual([]);
    const ns = created('debugger').linux!.securityContext!.namespaceOptions!;
    expect(ns).toMatchObject({ pid: NamespaceMode.POD, targetId: '' });
  });

  it('fails with CreateContainerConfigError while its target is not running', async () => {
    let pod = makePod('gone', [ctr('app')], { restartPolicy: 'Never' });
    await h.sync(pod);
    pod = withEphemeral(pod, debuggerC('debugger', { targetContainerName: 'init' }));
    const r = await h.sync(pod);
    expect(failures(r)).toEqual([
      'StartContainer debugger: CreateContainerConfigError: unable to find target container init',
    ]);
    expect(h.events.at(-1)).toMatchObject({
      type: 'Warning',
      reason: 'Failed',
      message: 'Error: unable to find target container init',
    });
    expect(
      h.requests<CreateContainerRequest>('CreateContainer').map((c) => c.config!.metadata!.name),
    ).toEqual(['app']);
  });

  it('is never restarted, whatever the pod restart policy, and never restarts the pod', async () => {
    let pod = makePod('once', [ctr('app')], { restartPolicy: 'Always' });
    await h.sync(pod);
    pod = withEphemeral(pod, debuggerC('debugger'));
    await h.sync(pod);
    const dbg = (await h.status(pod)).containerStatuses.find((c) => c.name === 'debugger')!;
    h.fake.exitContainer(dbg.id.id, 1);
    const r = await h.sync(pod);
    expect(r.steps).toEqual([]);
    const st = await h.status(pod);
    expect(st.containerStatuses.filter((c) => c.name === 'debugger').map((c) => c.state)).toEqual(['exited']);
    expect(st.containerStatuses.find((c) => c.name === 'app')!.state).toBe('running');
  });

  it('starts while an init container still runs, before it, and never in a new sandbox', async () => {
    let pod = makePod('init', [ctr('app')], { initContainers: [ctr('init')] });
    await h.sync(pod);
    pod = withEphemeral(pod, debuggerC('debugger'));
    const r = await h.sync(pod);
    expect(r.steps.map((s) => `${s.action} ${s.target}`)).toEqual(['StartContainer debugger']);
    // A dead sandbox: the new one gets the init container first, and no debugger.
    const sandbox = (await h.status(pod)).sandboxStatuses[0]!.id;
    await h.manager.context.cri.stopPodSandbox({ podSandboxId: sandbox });
    const again = await h.sync(pod);
    expect(again.steps.map((s) => s.action)).toEqual(['KillPodSandbox', 'CreatePodSandbox', 'InitContainer']);
  });
});
