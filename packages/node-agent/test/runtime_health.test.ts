import { FakeClock } from '@kh/apimachinery';
import type { RuntimeStatus } from '@kh/runtime-manager';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/api/node_api.js';
import { KubeletEventRecorder } from '../src/events/recorder.js';
import { RuntimeHealthMonitor, RuntimeState } from '../src/runtime_health.js';

const healthy: RuntimeStatus = {
  conditions: [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ],
  runtimeHandlers: [{ name: '', supportsRecursiveReadOnlyMounts: false, supportsUserNamespaces: true }],
};

function setup() {
  const clock = new FakeClock();
  const state = new RuntimeState(clock);
  let next: () => Promise<RuntimeStatus> = async () => healthy;
  const changes: boolean[] = [];
  const monitor = new RuntimeHealthMonitor({
    runtime: { status: () => next() },
    state,
    clock,
    onChange: (ready) => changes.push(ready),
  });
  const respond = (fn: () => Promise<RuntimeStatus>) => {
    next = fn;
  };
  return { clock, state, monitor, changes, respond };
}

describe('runtime health', () => {
  it('is not ready before the first successful Status', () => {
    const { state } = setup();
    expect(state.runtimeErrors()).toEqual(['container runtime status check may not have completed yet']);
  });

  it('keeps the handlers of the last Status that answered (the user namespace check reads them)', async () => {
    const { state, monitor, respond } = setup();
    expect(state.runtimeHandlers()).toBeUndefined();
    await monitor.check();
    expect(state.runtimeHandlers()).toEqual(healthy.runtimeHandlers);
    respond(async () => {
      throw new Error('connection refused');
    });
    await monitor.check();
    expect(state.runtimeHandlers()).toEqual(healthy.runtimeHandlers);
  });

  it('reads "container runtime is down" once Status has failed for 30s, and recovers', async () => {
    const { clock, state, monitor, changes, respond } = setup();
    const abort = new AbortController();
    void monitor.run(abort.signal);
    await clock.advance(0);
    expect(state.runtimeErrors()).toEqual([]);
    respond(async () => {
      throw new Error('connection refused');
    });
    await clock.advance(25_000);
    expect(state.ready()).toBe(true); // within the threshold
    await clock.advance(5_000);
    expect(state.runtimeErrors()).toEqual(['container runtime is down']);
    expect(changes).toEqual([false]);
    respond(async () => healthy);
    await clock.advance(5_000);
    expect(state.ready()).toBe(true);
    expect(changes).toEqual([false, true]);
    abort.abort();
  });

  it('names a runtime that answers but is not ready, and a network that is not ready', async () => {
    const { state, monitor, respond } = setup();
    respond(async () => ({
      conditions: [
        { type: 'RuntimeReady', status: false, reason: 'ContainerdNotReady', message: 'plugin init failed' },
        {
          type: 'NetworkReady',
          status: false,
          reason: 'NetworkPluginNotReady',
          message: 'cni config uninitialized',
        },
      ],
      runtimeHandlers: [],
    }));
    await monitor.check();
    expect(state.runtimeErrors()).toEqual([
      'container runtime status check may not have completed yet',
      'container runtime not ready: RuntimeReady=false reason:ContainerdNotReady message:plugin init failed',
    ]);
    expect(state.networkErrors()).toEqual([
      'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni config uninitialized',
    ]);
    respond(async () => ({ conditions: [], runtimeHandlers: [] }));
    await monitor.check();
    expect(state.networkErrors()).toEqual([
      'container runtime network not ready: NetworkReady condition missing',
    ]);
  });

  it("keeps the features of the runtime's last Status, or none when it sends none", async () => {
    const { state, monitor, respond } = setup();
    expect(state.runtimeFeatures()).toBeUndefined();
    respond(async () => ({ ...healthy, features: { supplementalGroupsPolicy: true } }));
    await monitor.check();
    expect(state.runtimeFeatures()).toEqual({ supplementalGroupsPolicy: true });
    respond(async () => healthy);
    await monitor.check();
    expect(state.runtimeFeatures()).toBeUndefined();
  });

  it('includes failing health checks such as PLEG', async () => {
    const { state, monitor } = setup();
    let pleg = { ok: true, message: '' };
    state.addHealthCheck('PLEG', () => pleg);
    await monitor.check();
    expect(state.ready()).toBe(true);
    pleg = { ok: false, message: 'pleg was last seen active 3m0s ago; threshold is 3m0s' };
    expect(state.runtimeErrors()).toEqual([
      'PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s',
    ]);
  });
});

describe('event recorder', () => {
  it('writes pod events with an object reference and never throws when the API fails', async () => {
    const posted: unknown[] = [];
    let fail = true;
    const clock = new FakeClock();
    const rec = new KubeletEventRecorder(
      {
        createEvent: async (e) => {
          if (fail) throw new ApiError(0, 'connect ECONNREFUSED');
          posted.push(e);
        },
      },
      { host: 'node-a', clock },
    );
    rec.event(
      { metadata: { name: 'web', namespace: 'prod', uid: 'u1' } },
      'Normal',
      'Pulling',
      'Pulling image "busybox"',
    );
    await rec.flush();
    expect(posted).toEqual([]);
    fail = false;
    rec.event(
      { metadata: { name: 'web', namespace: 'prod', uid: 'u1' } },
      'Warning',
      'BackOff',
      'Back-off restarting failed container',
    );
    rec.nodeEvent('Normal', 'Starting', 'Starting kubelet.');
    await rec.flush();
    expect(posted).toMatchObject([
      {
        metadata: { namespace: 'prod' },
        involvedObject: { kind: 'Pod', name: 'web', namespace: 'prod', uid: 'u1' },
        reason: 'BackOff',
        type: 'Warning',
        source: { component: 'kubelet', host: 'node-a' },
        count: 1,
      },
      {
        metadata: { namespace: 'default' },
        involvedObject: { kind: 'Node', name: 'node-a' },
        reason: 'Starting',
      },
    ]);
    const names = (posted as { metadata: { name: string } }[]).map((e) => e.metadata.name);
    expect(new Set(names).size).toBe(2);
  });
});
