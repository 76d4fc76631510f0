import { afterEach, describe, expect, it } from 'vitest';
import type { ContainerInspect } from '../src/docker/client.js';
import { InspectCache } from '../src/state/inspect_cache.js';
import { fakeEventEngine, flush } from './fake_event_engine.js';

const inspect = (id: string, status: string) =>
  ({ Id: id, State: { Status: status } }) as unknown as ContainerInspect;
const event = (action: string, id: string) =>
  `${JSON.stringify({ Type: 'container', Action: action, Actor: { ID: id } })}\n`;

let cache: InspectCache | undefined;
afterEach(() => cache?.close());

async function started(opts: { eventsFail?: boolean } = {}) {
  const f = fakeEventEngine(opts);
  cache = new InspectCache(f.docker);
  await cache.start();
  return { f, cache };
}

describe('InspectCache', () => {
  it("subscribes to the shim's containers' state changes only, not to exec or health events", async () => {
    const { f } = await started();
    const filters = f.calls.filters as Record<string, string[]>;
    expect(filters.type).toEqual(['container']);
    expect(filters.label).toEqual(['io.kubernetes.docker.type']);
    expect(filters.event).toEqual(expect.arrayContaining(['start', 'die', 'oom', 'destroy', 'update']));
    expect(filters.event).not.toContain('exec_start');
  });

  it('keeps an inspect until an event for that container comes', async () => {
    const { f, cache } = await started();
    cache.put(inspect('a', 'created'), cache.mark());
    cache.put(inspect('b', 'running'), cache.mark());
    expect(cache.get('a')?.State.Status).toBe('created');
    f.events.write(event('start', 'a'));
    await flush();
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')?.State.Status).toBe('running');
    // After the change, a fresh inspect is kept again.
    cache.put(inspect('a', 'running'), cache.mark());
    expect(cache.get('a')?.State.Status).toBe('running');
  });

  it('refuses an inspect begun before its container changed, but not one begun after', async () => {
    const { f, cache } = await started();
    const before = cache.mark();
    cache.evict('a'); // e.g. StartContainer returned while a status call's inspect was in flight
    cache.put(inspect('a', 'created'), before);
    expect(cache.get('a')).toBeUndefined();
    cache.put(inspect('a', 'running'), cache.mark());
    expect(cache.get('a')?.State.Status).toBe('running');

    const beforeDie = cache.mark();
    f.events.write(event('die', 'a'));
    await flush();
    cache.put(inspect('a', 'running'), beforeDie);
    expect(cache.get('a')).toBeUndefined();
    // Another container's change does not spoil this one's inspect.
    const mark = cache.mark();
    cache.evict('b');
    cache.put(inspect('a', 'exited'), mark);
    expect(cache.get('a')?.State.Status).toBe('exited');
  });

  it('keeps a running inspect through a start event that comes after it, but not one that does not say running', async () => {
    const { f, cache } = await started();
    const running = { Id: 'a', State: { Status: 'running', Running: true } } as unknown as ContainerInspect;
    // StartContainer (or RunPodSandbox) evicts, inspects the running container, and only then hears
    // Docker's start event on the event connection.
    cache.evict('a');
    cache.put(running, cache.mark());
    f.events.write(event('start', 'a'));
    await flush();
    expect(cache.get('a')).toBe(running);
    // An inspect from before a start that says it is not running is refused; one that says running
    // has seen that start.
    const before = cache.mark();
    f.events.write(event('start', 'b'));
    await flush();
    cache.put(inspect('b', 'created'), before);
    expect(cache.get('b')).toBeUndefined();
    cache.put({ ...running, Id: 'b' }, before);
    expect(cache.get('b')?.State.Running).toBe(true);
    // A running container starts again only after it died, and the die comes first: evicted.
    f.events.write(event('die', 'a'));
    f.events.write(event('start', 'a'));
    await flush();
    expect(cache.get('a')).toBeUndefined();
  });

  it('answers nothing while the event stream is down, and forgets all when it breaks', async () => {
    const down = await started({ eventsFail: true });
    down.cache.put(inspect('a', 'running'), down.cache.mark());
    expect(down.cache.get('a')).toBeUndefined();
    down.cache.close();

    const { f, cache } = await started();
    const beforeBreak = cache.mark();
    cache.put(inspect('a', 'running'), cache.mark());
    f.events.destroy(new Error('engine restarted'));
    await flush();
    expect(cache.get('a')).toBeUndefined();
    cache.put(inspect('a', 'running'), beforeBreak);
    expect(cache.get('a')).toBeUndefined();
  });
});
