import { describe, expect, it } from 'vitest';
import { compareCell, compareRuns, DEFAULT_THRESHOLDS } from '../../src/report/compare.js';
import { BASELINE_PATH, cell, loadFixture, run, SAMPLE_PATH } from './fixtures.js';

const thresholds = { durationPct: 50, durationMinMs: 500, criP99Ratio: 2, criMinMs: 5 };

describe('compareCell', () => {
  it('flags passed -> failed as a regression and failed -> passed as fixed', () => {
    const passed = cell('docker', 'probes');
    const failed = cell('docker', 'probes', { outcome: 'failed', durationMs: 60_000 });
    expect(compareCell(failed, passed, thresholds)).toMatchObject({
      verdict: 'regressed',
      baselineOutcome: 'passed',
      baselineDurationMs: 1000,
    });
    expect(compareCell(passed, failed, thresholds).verdict).toBe('fixed');
  });

  it('flags a passing cell as slower from 1.5× on, and only when also the absolute threshold is met', () => {
    const before = cell('c', 's', { durationMs: 10_000 });
    const at = (ms: number) => compareCell(cell('c', 's', { durationMs: ms }), before, thresholds);
    expect(at(14_999).verdict).toBe('unchanged');
    expect(at(15_000)).toMatchObject({ verdict: 'slower', durationDeltaPct: 50 }); // exactly 1.5×
    expect(at(8_000)).toMatchObject({ verdict: 'unchanged', durationDeltaPct: -20 });

    // +100% but only 300 ms more: jitter on a short cell, not a regression.
    const short = cell('c', 's', { durationMs: 300 });
    expect(compareCell(cell('c', 's', { durationMs: 600 }), short, thresholds).verdict).toBe('unchanged');
    expect(compareCell(cell('c', 's', { durationMs: 800 }), short, thresholds).verdict).toBe('slower');
  });

  it('does not compare durations of failed or skipped cells', () => {
    const slowFail = cell('c', 's', { outcome: 'failed', durationMs: 90_000 });
    expect(compareCell(slowFail, cell('c', 's', { outcome: 'failed' }), thresholds).verdict).toBe(
      'unchanged',
    );
    expect(
      compareCell(cell('c', 's', { durationMs: 90_000 }), cell('c', 's', { outcome: 'skipped' }), thresholds)
        .verdict,
    ).toBe('unchanged');
  });

  it('reports a cell the baseline lacks as new, and leaves out the delta of a zero-length baseline', () => {
    expect(compareCell(cell('c', 's'), undefined, thresholds)).toEqual({ verdict: 'new' });
    const skipped = cell('c', 's', { outcome: 'skipped', durationMs: 0 });
    expect(compareCell(cell('c', 's'), skipped, thresholds).durationDeltaPct).toBeUndefined();
  });
});

describe('compareRuns', () => {
  it('finds the recorded regressions and the fixed cell between the two nightlies', () => {
    const { byCell, missing } = compareRuns(
      loadFixture(SAMPLE_PATH),
      loadFixture(BASELINE_PATH),
      DEFAULT_THRESHOLDS,
    );
    const by = (verdict: string) => [...byCell].filter(([, c]) => c.verdict === verdict).map(([id]) => id);
    expect(by('regressed')).toEqual(['docker/probes']);
    expect(by('slower')).toEqual(['containerd/gc']);
    expect(by('fixed')).toEqual(['fake/pod-lifecycle']);
    expect(by('new')).toEqual([]);
    expect(missing).toEqual([]);
    expect(byCell.size).toBe(18);
  });

  it('lists baseline cells missing from the current run', () => {
    const now = run([cell('a', 'x')]);
    const before = run([cell('a', 'x'), cell('a', 'y'), cell('b', 'x')]);
    expect(compareRuns(now, before).missing).toEqual(['a/y', 'b/x']);
  });
});
