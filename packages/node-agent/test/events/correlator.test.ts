import { FakeClock } from '@kh/apimachinery';
import type { CoreV1Event } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/node_api.js';
import { CombinedPrefix, EventCorrelator } from '../../src/events/correlator.js';
import { KubeletEventRecorder } from '../../src/events/recorder.js';
import { CorrelatingEventSink, type EventPatch, type EventSink } from '../../src/events/sink.js';

/** Events as an API server would keep them, by namespace/name, with every call recorded. */
class MemoryEventSink implements EventSink {
  readonly events = new Map<string, CoreV1Event>();
  readonly calls: string[] = [];

  async createEvent(event: CoreV1Event): Promise<void> {
    const key = `${event.metadata.namespace}/${event.metadata.name}`;
    this.calls.push(`create ${event.metadata.name}`);
    if (this.events.has(key)) throw new ApiError(409, `events "${event.metadata.name}" already exists`);
    this.events.set(key, structuredClone(event));
  }

  async patchEvent(namespace: string, name: string, patch: EventPatch): Promise<void> {
    this.calls.push(`patch ${name}`);
    const e = this.events.get(`${namespace}/${name}`);
    if (!e) throw new ApiError(404, `events "${name}" not found`, 'NotFound');
    Object.assign(e, structuredClone(patch));
  }

  list(): CoreV1Event[] {
    return [...this.events.values()];
  }
}

function setup(opts?: ConstructorParameters<typeof EventCorrelator>[1]) {
  const clock = new FakeClock();
  const sink = new MemoryEventSink();
  const recorder = new KubeletEventRecorder(
    new CorrelatingEventSink(sink, clock, new EventCorrelator(clock, opts)),
    { host: 'node-a', clock },
  );
  const pod = (name: string) => ({ metadata: { name, namespace: 'prod', uid: `uid-${name}` } });
  return { clock, sink, recorder, pod };
}

describe('event correlation', () => {
  it('turns repeats of an identical event into patches of one Event (count, lastTimestamp)', async () => {
    const { clock, sink, recorder, pod } = setup();
    const first = clock.now();
    for (let i = 0; i < 3; i++) {
      recorder.event(pod('web'), 'Warning', 'BackOff', 'Back-off restarting failed container app');
      await clock.advance(5_000);
    }
    await recorder.flush();
    const events = sink.list();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      reason: 'BackOff',
      message: 'Back-off restarting failed container app',
      count: 3,
      firstTimestamp: new Date(first),
      lastTimestamp: new Date(first + 10_000),
    });
    const name = events[0]?.metadata.name;
    expect(sink.calls).toEqual([`create ${name}`, `patch ${name}`, `patch ${name}`]);
  });

  it('keeps events apart when the object, reason, type, message or source differ', async () => {
    const { sink, recorder, pod } = setup();
    recorder.event(pod('web'), 'Normal', 'Pulled', 'Container image "a" already present on machine');
    recorder.event(pod('db'), 'Normal', 'Pulled', 'Container image "a" already present on machine');
    recorder.event(pod('web'), 'Normal', 'Created', 'Created container app');
    recorder.event(pod('web'), 'Warning', 'Created', 'Created container app');
    recorder.event(pod('web'), 'Normal', 'Pulled', 'Container image "b" already present on machine');
    recorder.nodeEvent('Normal', 'Starting', 'Starting kubelet.');
    await recorder.flush();
    expect(sink.list()).toHaveLength(6);
    expect(sink.list().every((e) => e.count === 1)).toBe(true);
    expect(sink.calls.every((c) => c.startsWith('create '))).toBe(true);
  });

  it('combines the 10th and later similar events (same reason, new message) into one Event', async () => {
    const { sink, recorder, pod } = setup();
    for (let i = 1; i <= 9; i++) recorder.event(pod('web'), 'Warning', 'Failed', `Error: attempt ${i}`);
    await recorder.flush();
    expect(sink.list()).toHaveLength(9);
    expect(sink.list().some((e) => e.message?.startsWith(CombinedPrefix))).toBe(false);

    recorder.event(pod('web'), 'Warning', 'Failed', 'Error: attempt 10');
    recorder.event(pod('web'), 'Warning', 'Failed', 'Error: attempt 11');
    recorder.event(pod('web'), 'Warning', 'Failed', 'Error: attempt 12');
    await recorder.flush();
    const combined = sink.list().filter((e) => e.message?.startsWith(CombinedPrefix));
    expect(sink.list()).toHaveLength(10);
    expect(combined).toHaveLength(1);
    expect(combined[0]).toMatchObject({
      reason: 'Failed',
      type: 'Warning',
      count: 3,
      message: '(combined from similar events): Error: attempt 12',
      involvedObject: { name: 'web', uid: 'uid-web' },
    });
  });

  it('starts counting similar events afresh after the 10-minute window', async () => {
    const { clock, sink, recorder, pod } = setup();
    for (let i = 1; i <= 9; i++) recorder.event(pod('web'), 'Warning', 'Failed', `Error: attempt ${i}`);
    await clock.advance(600_001);
    recorder.event(pod('web'), 'Warning', 'Failed', 'Error: attempt 10');
    await recorder.flush();
    expect(sink.list().filter((e) => e.message?.startsWith(CombinedPrefix))).toEqual([]);
    expect(sink.list()).toHaveLength(10);
  });

  it('writes the Event again under its name when the repeat finds it gone (expired)', async () => {
    const { sink, recorder, pod } = setup();
    recorder.event(pod('web'), 'Normal', 'Killing', 'Stopping container app');
    await recorder.flush();
    sink.events.clear();
    recorder.event(pod('web'), 'Normal', 'Killing', 'Stopping container app');
    await recorder.flush();
    const [event] = sink.list();
    expect(event).toMatchObject({ reason: 'Killing', count: 2 });
    expect(sink.calls.map((c) => c.split(' ')[0])).toEqual(['create', 'patch', 'create']);
    expect(new Set(sink.calls.map((c) => c.split(' ')[1])).size).toBe(1);
  });

  it('keeps events about different containers (fieldPath) apart, but counts them as similar', () => {
    const c = new EventCorrelator(new FakeClock(), { maxSimilarEvents: 2 });
    const ev = (fieldPath: string): CoreV1Event => ({
      metadata: { name: `web.${fieldPath}`, namespace: 'default' },
      involvedObject: { kind: 'Pod', name: 'web', namespace: 'default', fieldPath },
      reason: 'Started',
      message: 'Started container',
      source: { component: 'kubelet', host: 'n' },
    });
    expect(c.correlate(ev('spec.containers{a}'))).toMatchObject({
      update: false,
      event: { message: 'Started container' },
    });
    expect(c.correlate(ev('spec.containers{a}')).update).toBe(true);
    // The same message about another container is not a repeat.
    expect(c.correlate(ev('spec.containers{b}')).update).toBe(false);
    // But it is similar: with a limit of 2, a second distinct message combines.
    const other = ev('spec.containers{c}');
    other.message = 'Started container c';
    expect(c.correlate(other)).toMatchObject({
      update: false,
      event: { message: `${CombinedPrefix}Started container c` },
    });
  });

  it('forgets the least recently used events beyond the cache size', () => {
    const clock = new FakeClock();
    const c = new EventCorrelator(clock, { cacheSize: 2 });
    const ev = (name: string): CoreV1Event => ({
      metadata: { name: `${name}.1`, namespace: 'default' },
      involvedObject: { kind: 'Pod', name, namespace: 'default' },
      reason: 'Started',
      message: 'Started container app',
      source: { component: 'kubelet', host: 'n' },
    });
    expect(c.correlate(ev('a')).update).toBe(false);
    expect(c.correlate(ev('b')).update).toBe(false);
    expect(c.correlate(ev('a')).update).toBe(true);
    expect(c.correlate(ev('c')).update).toBe(false); // evicts b, the least recently used
    expect(c.correlate(ev('b')).update).toBe(false);
    expect(c.correlate(ev('a')).update).toBe(false); // evicted by b's return
  });

  it('drops events about one object past a burst of 25, then lets one through every 5 minutes with the full count', async () => {
    const { clock, sink, recorder, pod } = setup();
    for (let i = 0; i < 30; i++) {
      recorder.event(pod('web'), 'Warning', 'BackOff', 'Back-off restarting failed container app');
      await clock.advance(1_000);
    }
    // Another object, and another reason on the same object, have their own buckets.
    recorder.event(pod('db'), 'Warning', 'BackOff', 'Back-off restarting failed container app');
    recorder.event(pod('web'), 'Normal', 'Pulled', 'Container image "app" already present on machine');
    await recorder.flush();
    expect(sink.calls.filter((c) => c.includes('web.'))).toHaveLength(26); // 1 create, 24 patches, Pulled
    expect(sink.list().find((e) => e.reason === 'BackOff' && e.involvedObject.name === 'web')?.count).toBe(
      25,
    );
    expect(sink.list().filter((e) => e.involvedObject.name === 'db')).toHaveLength(1);

    await clock.advance(300_000);
    recorder.event(pod('web'), 'Warning', 'BackOff', 'Back-off restarting failed container app');
    recorder.event(pod('web'), 'Warning', 'BackOff', 'Back-off restarting failed container app');
    await recorder.flush();
    // One token came back: the 31st is written, carrying the dropped ones in its count; the 32nd is not.
    expect(sink.list().find((e) => e.reason === 'BackOff' && e.involvedObject.name === 'web')?.count).toBe(
      31,
    );
  });
});
