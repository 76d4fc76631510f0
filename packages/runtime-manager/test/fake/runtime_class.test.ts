// spec.runtimeClassName → RunPodSandbox's runtime_handler, through the manager's resolver, as
// the kubelet's createPodSandbox does; a class that cannot be resolved fails the sandbox step.
import type { RunPodSandboxRequest } from '@kh/cri-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RuntimeHandlerResolver } from '../../src/kuberuntime/context.js';
import { ctr, Harness, IMAGE, makePod } from './harness.js';

/** Classes by name, as an API server would hold them; lookups are counted. */
class Classes implements RuntimeHandlerResolver {
  readonly lookups: (string | undefined)[] = [];
  constructor(readonly handlers: Map<string, string>) {}
  async lookupRuntimeHandler(name: string | undefined) {
    this.lookups.push(name);
    if (!name) return '';
    const handler = this.handlers.get(name);
    if (handler === undefined) throw new Error(`runtimeclass.node.k8s.io "${name}" not found`);
    return handler;
  }
}

let h: Harness;
let classes: Classes;
beforeEach(async () => {
  classes = new Classes(new Map([['native', 'runc']]));
  // The fake runtime knows the handler "runc" (and the default "").
  h = await Harness.start({ runtimeClassManager: classes });
  h.fake.addImage(IMAGE, 1000);
});
afterEach(async () => {
  await h.stop();
});

const handlers = () => h.requests<RunPodSandboxRequest>('RunPodSandbox').map((r) => r.runtimeHandler);

describe('runtime classes', () => {
  it('runs a pod of a class on its handler, and a pod without one on the default handler ""', async () => {
    expect(
      (await h.sync(makePod('classy', [ctr('app')], { runtimeClassName: 'native' }))).steps.at(-1)?.error,
    ).toBeUndefined();
    expect((await h.sync(makePod('plain', [ctr('app')]))).steps.at(-1)?.error).toBeUndefined();
    expect(
      (await h.sync(makePod('empty', [ctr('app')], { runtimeClassName: '' }))).steps.at(-1)?.error,
    ).toBeUndefined();
    expect(handlers()).toEqual(['runc', '', '']);
    expect(
      h.fake
        .sandboxes()
        .map((s) => [s.metadata?.name, s.runtimeHandler])
        .sort(),
    ).toEqual([
      ['classy', 'runc'],
      ['empty', ''],
      ['plain', ''],
    ]);
    expect(classes.lookups).toEqual(['native', undefined, '']);
  });

  it('fails sandbox creation for an unknown class with FailedCreatePodSandBox, then runs once the class exists', async () => {
    const pod = makePod('waiting', [ctr('app')], { runtimeClassName: 'gvisor' });
    const first = await h.sync(pod);
    expect(first.steps.map((s) => [s.action, s.reason, s.message])).toEqual([
      [
        'CreatePodSandbox',
        'CreatePodSandboxError',
        'Failed to create pod sandbox: runtimeclass.node.k8s.io "gvisor" not found',
      ],
    ]);
    expect(h.events.filter((e) => e.reason === 'FailedCreatePodSandBox')).toEqual([
      {
        pod: 'waiting',
        type: 'Warning',
        reason: 'FailedCreatePodSandBox',
        message: 'Failed to create pod sandbox: runtimeclass.node.k8s.io "gvisor" not found',
      },
    ]);
    expect(handlers()).toEqual([]);

    classes.handlers.set('gvisor', 'runc');
    const second = await h.sync(pod);
    expect(second.steps.filter((s) => s.error)).toEqual([]);
    expect(handlers()).toEqual(['runc']);
  });

  it("passes the runtime's own error for a handler it does not have to the event", async () => {
    classes.handlers.set('kata', 'kata');
    const r = await h.sync(makePod('kata-pod', [ctr('app')], { runtimeClassName: 'kata' }));
    expect(r.steps[0]?.reason).toBe('CreatePodSandboxError');
    expect(handlers()).toEqual(['kata']);
    const [event] = h.events.filter((e) => e.reason === 'FailedCreatePodSandBox');
    expect(event?.message).toMatch(/^Failed to create pod sandbox: .*no runtime for "kata" is configured/);
  });
});
