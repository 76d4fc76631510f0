// Quarantine: kh.config.json's entries (checked when read), which cells and cases they name, their
// expiry, and what a held failure does to the run's verdict, counts, table and JUnit.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBackends } from '../../src/backends/registry.js';
import { toJUnit } from '../../src/results/junit.js';
import type { CellResult } from '../../src/results/model.js';
import {
  applyQuarantine,
  failsRun,
  heldByQuarantine,
  namesCell,
  quarantineActive,
} from '../../src/results/quarantine.js';
import { countOutcomes, countsLine, formatMatrix } from '../../src/results/table.js';
import { type QuarantineEntry, readConfigFile } from '../../src/support/project-config.js';
import { cell as fixtureCell, run } from '../report/fixtures.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-quarantine-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const entry = (over: Partial<QuarantineEntry> = {}): QuarantineEntry => ({
  cell: 'docker-20.10/kubectl',
  owner: 'sig-node',
  expires: '2026-12-31',
  reason: 'moby/libnetwork#2649',
  ...over,
});

/** A failed cell unless told otherwise. */
const cell = (runtime: string, scenario: string, over: Partial<CellResult> = {}): CellResult =>
  fixtureCell(runtime, scenario, {
    outcome: 'failed',
    reason: `${scenario} broke`,
    durationMs: 1500,
    ...over,
  });

describe('kh.config.json quarantine', () => {
  const config = async (body: unknown) => {
    const file = join(dir, `${Math.random().toString(36).slice(2)}.json`);
    await writeFile(file, JSON.stringify(body));
    return file;
  };

  it('reads the entries, and none when the file has no list', async () => {
    const q = [
      entry(),
      { ...entry({ cell: '*/probes', case: 'liveness-redirect-remote' }) },
      entry({ cell: '*/pod-resize', symptom: 'container init was OOM-killed' }),
    ];
    expect(readConfigFile(await config({ suite: '@kh/e2e', quarantine: q })).quarantine).toEqual(q);
    expect(readConfigFile(await config({ suite: '@kh/e2e' })).quarantine).toEqual([]);
  });

  it.each([
    [{ quarantine: {} }, /"quarantine" must be an array of entries/],
    [{ quarantine: [{ ...entry(), owner: '' }] }, /quarantine\[0\]\.owner must be a non-empty string/],
    [{ quarantine: [entry({ cell: 'kubectl' })] }, /quarantine\[0\]\.cell must be runtime\/scenario/],
    [
      { quarantine: [entry({ expires: '2026-02-30' })] },
      /quarantine\[0\]\.expires must be a date, YYYY-MM-DD/,
    ],
    [{ quarantine: [entry({ expires: 'next week' })] }, /expires must be a date/],
    [{ quarantine: [entry(), { ...entry(), until: 'x' }] }, /quarantine\[1\] has unknown field "until"/],
    [
      { quarantine: [entry({ symptom: 'OOM-killed (' })] },
      /quarantine\[0\]\.symptom must be a regular expression/,
    ],
  ])('refuses a bad entry, naming it: %j', async (body, message) => {
    await expect(config(body).then(readConfigFile)).rejects.toThrow(message);
  });

  it("the repository's entries each name a registered column", async () => {
    const root = new URL('../../../../', import.meta.url).pathname;
    const { quarantine } = readConfigFile(join(root, 'kh.config.json'));
    const { registered } = await loadBackends({ env: {}, cwd: root });
    for (const e of quarantine)
      expect(
        registered.some(({ backend }) =>
          namesCell(e, { runtime: backend.name, scenario: e.cell.split('/')[1]! }),
        ),
        e.cell,
      ).toBe(true);
  });
});

describe('applyQuarantine', () => {
  it('holds through the whole of its expiry date (UTC), and not a moment longer', () => {
    expect(quarantineActive(entry(), new Date('2026-12-31T23:59:59.999Z'))).toBe(true);
    expect(quarantineActive(entry(), new Date('2027-01-01T00:00:00Z'))).toBe(false);
  });

  it('marks the cells an active entry names (globs allowed), passed or failed; a failure held does not fail the run', () => {
    const results = run([
      cell('docker-20.10', 'kubectl'),
      cell('docker-26', 'kubectl', { outcome: 'passed', reason: undefined }),
      cell('docker-26', 'probes'),
      cell('containerd-1.7', 'kubectl'),
    ]);
    const { results: held, expired } = applyQuarantine(
      results,
      [entry(), entry({ cell: 'docker-*/kubectl', owner: 'second' })],
      new Date('2026-12-01T00:00:00Z'),
    );
    expect(expired).toEqual([]);
    expect(held.cells.map((c) => c.quarantine?.owner)).toEqual(['sig-node', 'second', undefined, undefined]);
    expect(held.cells.map(failsRun)).toEqual([false, false, true, true]);
    expect(countOutcomes(held)).toEqual({ passed: 1, failed: 2, skipped: 0, quarantined: 1 });
    expect(countsLine(countOutcomes(held))).toBe('1 passed, 2 failed, 0 skipped, 1 quarantined');
    expect(formatMatrix(held)).toContain('FAIL* 1.5s');
    expect(formatMatrix(held)).toMatch(
      /\* quarantined in kh\.config\.json: the failure is reported but does not fail the run$/,
    );
    // JUnit keeps the failure, and says who holds it until when.
    expect(toJUnit(held)).toContain(
      '<failure message="[quarantined until 2026-12-31 (sig-node): moby/libnetwork#2649] kubectl broke">',
    );
    // The input is not changed; an entry's old mark on a cell is replaced.
    expect(results.cells[0]!.quarantine).toBeUndefined();
  });

  it('after its expiry the failure fails the run again, and the entry is named', () => {
    const { results: held, expired } = applyQuarantine(
      run([cell('docker-20.10', 'kubectl'), cell('docker-20.10', 'gc', { outcome: 'passed' })]),
      [entry(), entry({ cell: 'docker-20.10/gc' })],
      new Date('2027-01-01T00:00:00Z'),
    );
    expect(held.cells[0]!.quarantine).toBeUndefined();
    expect(held.cells.some(failsRun)).toBe(true);
    expect(countsLine(countOutcomes(held))).toBe('1 passed, 1 failed, 0 skipped');
    // A passing cell's expired entry is not worth a warning.
    expect(expired).toEqual([{ entry: entry(), failures: ['docker-20.10/kubectl'] }]);
  });

  it('an entry with a case holds that case; a cell is held when every failed case is', () => {
    const cases = [
      { name: 'liveness-redirect-remote', outcome: 'failed' as const, reason: 'timeout' },
      { name: 'liveness-exec', outcome: 'passed' as const },
    ];
    const c = cell('containerd-1.7-gvisor', 'probes', { cases });
    const q = [entry({ cell: '*-gvisor/probes', case: 'liveness-redirect-remote' })];
    const { results: held } = applyQuarantine(run([c]), q, new Date('2026-12-01T00:00:00Z'));
    const out = held.cells[0]!;
    expect(out.quarantine).toBeUndefined();
    expect(out.cases!.map((k) => Boolean(k.quarantine))).toEqual([true, false]);
    expect(heldByQuarantine(out)).toBe(true);
    expect(failsRun(out)).toBe(false);
    // Another case failing too: the cell fails the run.
    const worse = {
      ...out,
      cases: [...out.cases!.slice(0, 1), { name: 'liveness-exec', outcome: 'failed' as const }],
    };
    expect(failsRun(worse)).toBe(true);
    // A failed cell whose cases all passed (it broke outside them) is not held by case entries.
    expect(heldByQuarantine({ ...out, cases: [{ name: 'x', outcome: 'passed' }] })).toBe(false);
  });

  it('an entry with a symptom holds only failures that show nothing else, in the reason or what each failed assertion saw', () => {
    const oom = 'runc create failed: unable to start container process: container init was OOM-killed';
    const q = [entry({ cell: 'containerd-1.7/pod-resize', symptom: 'container init was OOM-killed' })];
    const seen = (actual: unknown) => ({
      assertions: [{ name: 'pod Running', outcome: 'failed' as const, expected: 'Running', actual }],
    });
    const { results: held } = applyQuarantine(
      run([
        cell('containerd-1.7', 'pod-resize', seen({ lastState: { terminated: { message: oom } } })),
        cell('containerd-1.7', 'pod-resize', { reason: oom }),
        cell('containerd-1.7', 'pod-resize', seen({ restartCount: 2 })),
        // The symptom and another failure: the other one fails the run.
        cell('containerd-1.7', 'pod-resize', {
          assertions: [
            ...seen({ message: oom }).assertions,
            { name: 'cpu.max', outcome: 'failed', expected: '2000 100000', actual: 'max 100000' },
          ],
        }),
        cell('containerd-1.7', 'pod-resize', { outcome: 'passed', reason: undefined }),
      ]),
      q,
      new Date('2026-12-01T00:00:00Z'),
    );
    expect(held.cells.map((c) => Boolean(c.quarantine))).toEqual([true, true, false, false, false]);
    expect(held.cells.map(failsRun)).toEqual([false, false, true, true, false]);
    // Cases too.
    const c = cell('containerd-1.7', 'pod-resize', {
      cases: [
        { name: 'a', outcome: 'failed', reason: oom },
        { name: 'b', outcome: 'failed', reason: 'cpu.max differs' },
      ],
    });
    const cases = applyQuarantine(
      run([c]),
      [
        { ...q[0]!, case: 'a' },
        { ...q[0]!, case: 'b' },
      ],
      new Date('2026-12-01'),
    ).results.cells[0]!.cases!;
    expect(cases.map((k) => Boolean(k.quarantine))).toEqual([true, false]);
  });
});
