import { afterEach, describe, expect, it } from 'vitest';
import { LATE_OOM_WAIT_MS, OomEvents } from '../src/state/oom_events.js';
import { fakeEventEngine, flush } from './fake_event_engine.js';

// Docker's times are ns since the epoch; timeNano is written with all its digits, as the Engine does.
const event = (action: string, id: string, timeNano: bigint, attributes: Record<string, string> = {}) =>
  `${JSON.stringify({ Type: 'container', Action: action, Actor: { ID: id, Attributes: attributes }, timeNano: 0 }).replace('"timeNano":0', `"timeNano":${timeNano}`)}\n`;
const nowNs = () => BigInt(Date.now()) * 1_000_000n;

let ooms: OomEvents | undefined;
afterEach(() => ooms?.close());

async function started(opts: { eventsFail?: boolean } = {}) {
  const f = fakeEventEngine(opts);
  ooms = new OomEvents(f.docker);
  await ooms.start();
  return { f, ooms };
}

describe('OomEvents', () => {
  it("subscribes to the oom, kill, die and destroy events of the shim's containers", async () => {
    const { f } = await started();
    expect(f.calls.filters).toEqual({
      type: ['container'],
      event: ['oom', 'kill', 'die', 'destroy'],
      label: ['io.kubernetes.docker.type'],
    });
  });

  it('counts an oom of the current run only, and forgets a destroyed container', async () => {
    const { f, ooms } = await started();
    const start1 = nowNs();
    f.events.write(event('oom', 'a', start1 + 5n));
    await flush();
    expect(ooms.seen('a', start1)).toBe(true);
    expect(ooms.seen('a', start1 + 6n)).toBe(false); // started again after it
    expect(ooms.seen('b', start1)).toBe(false);
    f.events.write(event('destroy', 'a', start1 + 7n));
    await flush();
    expect(ooms.seen('a', start1)).toBe(false);
  });

  it('waits for an oom after a SIGKILL exit, not after Docker sent the SIGKILL itself', async () => {
    const { f, ooms } = await started();
    const startedAt = nowNs();
    const late = ooms.lateOom('late', startedAt, Date.now());
    f.events.write(event('die', 'late', nowNs()));
    await flush();
    f.events.write(event('oom', 'late', nowNs()));
    expect(await late).toBe(true);

    // A stop's SIGTERM then SIGKILL: the kill event with signal 9 settles it at once.
    f.events.write(event('kill', 'stopped', nowNs(), { signal: '15' }));
    f.events.write(event('kill', 'stopped', nowNs(), { signal: '9' }));
    await flush();
    // Elapsed times on the monotonic clock (a wall clock can be stepped); Docker's times are wall times.
    let t0 = performance.now();
    expect(await ooms.lateOom('stopped', startedAt, Date.now())).toBe(false);
    expect(performance.now() - t0).toBeLessThan(LATE_OOM_WAIT_MS);

    // An exit long gone (a restarted shim reading old containers) does not wait.
    t0 = performance.now();
    expect(await ooms.lateOom('old', startedAt, Date.now() - 60_000)).toBe(false);
    expect(performance.now() - t0).toBeLessThan(LATE_OOM_WAIT_MS);

    // No oom comes: false after the wait, counted from the die event when that arrives later.
    t0 = performance.now();
    const none = ooms.lateOom('none', startedAt, Date.now());
    await new Promise((r) => setTimeout(r, LATE_OOM_WAIT_MS / 2));
    f.events.write(event('die', 'none', nowNs()));
    expect(await none).toBe(false);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(LATE_OOM_WAIT_MS * 1.5 - 50);
  });

  it('never waits while the event stream is down', async () => {
    const { ooms } = await started({ eventsFail: true });
    const t0 = performance.now();
    expect(await ooms.lateOom('a', nowNs(), Date.now())).toBe(false);
    expect(performance.now() - t0).toBeLessThan(LATE_OOM_WAIT_MS);
  });
});
