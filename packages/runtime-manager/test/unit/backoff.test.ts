import { FakeClock } from '@kh/apimachinery';
import { describe, expect, it } from 'vitest';
import { ExponentialBackoff, newCrashLoopBackoff } from '../../src/util/backoff.js';

describe('CrashLoopBackOff backoff', () => {
  it('starts at 10s and doubles to a 5 minute cap', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const b = newCrashLoopBackoff(clock);
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      b.next('k', clock.now());
      seen.push(b.get('k'));
      clock.step(b.get('k'));
    }
    expect(seen).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000]);
  });

  it('is in backoff until the delay since the event has passed', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const b = newCrashLoopBackoff(clock);
    const died = clock.now();
    expect(b.isInBackOffSince('k', died)).toBe(false);
    b.next('k', died);
    clock.step(9_999);
    expect(b.isInBackOffSince('k', died)).toBe(true);
    clock.step(1);
    expect(b.isInBackOffSince('k', died)).toBe(false);
    expect(b.isInBackOffSince('other', died)).toBe(false);
  });

  it('resets after a container ran for more than 10 minutes', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const b = newCrashLoopBackoff(clock);
    for (let i = 0; i < 4; i++) b.next('k', clock.now());
    expect(b.get('k')).toBe(80_000);
    // Restarted now; it dies 10 min + 1 ms later: the old delay no longer applies.
    clock.step(600_001);
    const died = clock.now();
    expect(b.isInBackOffSince('k', died)).toBe(false);
    b.next('k', died);
    expect(b.get('k')).toBe(10_000);
  });

  it('keeps doubling when the container died within 10 minutes', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const b = newCrashLoopBackoff(clock);
    b.next('k', clock.now());
    clock.step(599_000);
    b.next('k', clock.now());
    expect(b.get('k')).toBe(20_000);
  });

  it('isInBackOffSinceUpdate measures from the last retry', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const b = new ExponentialBackoff({ initialMs: 1000, maxMs: 4000, clock });
    b.next('img', 0);
    expect(b.isInBackOffSinceUpdate('img')).toBe(true);
    clock.step(1000);
    expect(b.isInBackOffSinceUpdate('img')).toBe(false);
  });

  it('gc forgets idle entries and rejects bad bounds', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const b = newCrashLoopBackoff(clock);
    b.next('k', clock.now());
    clock.step(600_001);
    b.gc();
    expect(b.get('k')).toBe(0);
    expect(() => new ExponentialBackoff({ initialMs: 10, maxMs: 5 })).toThrow(/initialMs <= maxMs/);
  });
});
