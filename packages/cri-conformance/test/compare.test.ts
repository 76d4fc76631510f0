import { describe, expect, it } from 'vitest';
import { flakeAttemptsOf } from '../src/critest/cli.js';
import { runtimeLogLines, troubledSpecs } from '../src/critest/report.js';
import { critestArgs, imagesFile } from '../src/critest/run.js';
import { literalPattern } from '../src/critest/skips.js';
import {
  CRITEST_SKIPS,
  type CritestResult,
  compareSides,
  critestSides,
  formatComparison,
  parseGinkgoReport,
  type Side,
  type SuiteResult,
  suiteSide,
} from '../src/index.js';

const reference: Side = {
  label: 'containerd 1.6.20 (unix:///a.sock)',
  results: [
    { id: 'exec › streaming Exec', status: 'passed' },
    { id: 'logs › short-lived container', status: 'passed' },
    { id: 'events › GetContainerEvents', status: 'skipped', message: 'UNIMPLEMENTED' },
    { id: 'privileged', status: 'passed' },
    { id: 'broken everywhere', status: 'failed', message: 'A says no' },
    { id: 'only on A', status: 'passed' },
  ],
};
const candidate: Side = {
  label: 'docker 20.10.24 (unix:///b.sock)',
  results: [
    { id: 'exec › streaming Exec', status: 'failed', message: 'UNIMPLEMENTED: streaming Exec\nsecond line' },
    { id: 'logs › short-lived container', status: 'passed' },
    { id: 'events › GetContainerEvents', status: 'passed' },
    { id: 'privileged', status: 'skipped', message: 'cannot grant every capability' },
    { id: 'broken everywhere', status: 'failed', message: 'B says no' },
  ],
};

describe('compareSides', () => {
  const c = compareSides([reference, candidate]);

  it('lines up cases by id, in the reference order, and marks differences and regressions', () => {
    expect(c.rows.map((r) => [r.id, r.statuses, r.differs, r.regression])).toEqual([
      ['exec › streaming Exec', ['passed', 'failed'], true, true],
      ['logs › short-lived container', ['passed', 'passed'], false, false],
      ['events › GetContainerEvents', ['skipped', 'passed'], true, false],
      ['privileged', ['passed', 'skipped'], true, false],
      ['broken everywhere', ['failed', 'failed'], false, false],
      ['only on A', ['passed', undefined], true, false],
    ]);
    expect(c.regressions).toBe(1);
    expect(c.differences).toBe(4);
  });

  it('counts only "A passed, B failed" as a regression, whatever the order of the sides', () => {
    expect(compareSides([candidate, reference]).regressions).toBe(0);
    expect(compareSides([reference, reference]).differences).toBe(0);
  });
});

describe('formatComparison', () => {
  const text = formatComparison(compareSides([reference, candidate]));

  it('names the sides, lists the differences first with every side messages, folded to one line', () => {
    expect(text.split('\n').slice(0, 5)).toEqual([
      'A = containerd 1.6.20 (unix:///a.sock)',
      'B = docker 20.10.24 (unix:///b.sock)',
      '',
      'Where they differ (4):',
      '  A     B     case',
    ]);
    expect(text).toContain(
      '  pass  FAIL  exec › streaming Exec\n        B: UNIMPLEMENTED: streaming Exec | second line\n',
    );
    expect(text).toContain('  skip  pass  events › GetContainerEvents\n        A: UNIMPLEMENTED\n');
    expect(text).toContain('  pass  -     only on A\n');
    expect(text.indexOf('Where they differ')).toBeLessThan(text.indexOf('Failed on every side (1):'));
    expect(text).toContain('  FAIL  FAIL  broken everywhere\n        A: A says no\n        B: B says no');
    expect(text).toContain('The same (1):\n  A     B     case\n  pass  pass  logs › short-lived container');
  });

  it('ends with the totals and the verdict', () => {
    expect(text).toMatch(
      /A: 4 passed, 1 failed, 1 skipped; B: 2 passed, 2 failed, 1 skipped\n1 case\(s\) pass on A and fail on B\.$/,
    );
    expect(formatComparison(compareSides([reference, reference]))).toMatch(
      /Nothing that passes on A fails on B\.$/,
    );
  });

  it('with one side: failures first, then the rest with skip reasons, no verdict', () => {
    const one = formatComparison(compareSides([candidate]));
    expect(one).not.toContain('differ');
    expect(one).toContain('Failed (2):');
    expect(one).toContain('  skip  privileged  (cannot grant every capability)');
    expect(one).toMatch(/\nA: 2 passed, 2 failed, 1 skipped$/);
  });

  it('shows a pass that took a retry as flaky, with the earlier failure and the runtime log, not as a regression', () => {
    const flakySide: Side = {
      label: 'docker 26',
      results: [
        {
          id: 'logs › short-lived container',
          status: 'passed',
          attempts: 2,
          message: 'attempt 1 failed: stop container "c0" timeout.',
          runtimeLog: [
            'level=info msg="Container failed to exit within 1m0s of signal 15 - using the force"',
          ],
        },
      ],
    };
    const comparison = compareSides([reference, flakySide]);
    expect(comparison.regressions).toBe(0);
    expect(comparison.flaky).toBe(1);
    const flakyText = formatComparison(comparison);
    expect(flakyText).toContain(
      'Passed, but only on a retry (1):\n  A     B     case\n  pass  flaky logs › short-lived container\n' +
        '        B: attempt 1 failed: stop container "c0" timeout.\n' +
        '          B log: level=info msg="Container failed to exit within 1m0s of signal 15 - using the force"\n',
    );
    expect(flakyText).not.toMatch(/The same[\s\S]*short-lived/);
    expect(flakyText).toContain('B: 1 passed (1 only on a retry), 0 failed, 0 skipped');
    expect(text).not.toContain('retry');
  });

  it('cuts long messages', () => {
    const long = formatComparison(
      compareSides([{ label: 'x', results: [{ id: 'c', status: 'failed', message: 'y'.repeat(1000) }] }]),
    );
    expect(long).toMatch(/A: y{299}…\n/);
  });
});

// The shape of ginkgo v2.4's JSON report as critest v1.26 writes it (trimmed to the fields read).
const statusDump = `failed to attach in container "a4e0"
Unexpected error:
    <*status.Error | 0xc0000129f0>: {
        s: {
                Code: 12,
                Message: "Attach is not implemented",
        },
    }
    rpc error: code = Unimplemented desc = Attach is not implemented
occurred`;
const spec = (texts: string[], leaf: string, State: string, Failure?: object, LeafNodeType = 'It') => ({
  ContainerHierarchyTexts: texts,
  LeafNodeType,
  LeafNodeText: leaf,
  State,
  RunTime: 1_500_000_000,
  ...(Failure ? { Failure } : {}),
});
const report = (specs: object[]) =>
  JSON.stringify([{ SuiteSucceeded: false, SpecialSuiteFailureReasons: null, SpecReports: specs }]);

describe('parseGinkgoReport', () => {
  const parsed = parseGinkgoReport(
    report([
      spec([], '', 'passed', undefined, 'BeforeSuite'),
      spec(
        ['[k8s.io] Streaming', 'runtime should support streaming interfaces'],
        'runtime should support attach',
        'failed',
        {
          Message: statusDump,
          Location: { FileName: '/build/cri-tools/pkg/validate/streaming.go', LineNumber: 243 },
          FailureNodeType: 'It',
        },
      ),
      spec(['[k8s.io] Container'], 'runtime should support execSync with timeout [Conformance]', 'skipped'),
      spec(['[k8s.io] Container'], 'runtime should support execSync [Conformance]', 'passed'),
      spec(['[k8s.io] AppArmor'], 'should enforce a profile', 'skipped', {
        Message: 'apparmor is not enabled',
      }),
      spec(['[k8s.io] Container benchmark'], 'benchmark about basic operations', 'skipped'),
      spec(['[k8s.io] Multiple Containers'], 'should support network', 'failed', {
        Message: 'Expected\n    <string>: sh: pgrep: not found\nto be empty',
        Location: { FileName: '/x/container.go', LineNumber: 7 },
        FailureNodeType: 'BeforeEach',
      }),
    ]),
    CRITEST_SKIPS,
  );

  it('gives one result per selected spec with its full text, status and duration', () => {
    expect(parsed.map((s) => [s.id, s.status, s.durationMs])).toEqual([
      [
        '[k8s.io] Streaming runtime should support streaming interfaces runtime should support attach',
        'failed',
        1500,
      ],
      ['[k8s.io] Container runtime should support execSync with timeout [Conformance]', 'skipped', 1500],
      ['[k8s.io] Container runtime should support execSync [Conformance]', 'passed', 1500],
      ['[k8s.io] AppArmor should enforce a profile', 'skipped', 1500],
      ['[k8s.io] Multiple Containers should support network', 'failed', 1500],
    ]);
  });

  it('keeps the first line and the gRPC status of a failure, not the Go struct dump, and where it failed', () => {
    expect(parsed[0]?.message).toBe(
      'failed to attach in container "a4e0" | rpc error: code = Unimplemented desc = Attach is not implemented (streaming.go:243)',
    );
    expect(parsed[4]?.message).toBe(
      'Expected <string>: sh: pgrep: not found to be empty (container.go:7) [in BeforeEach]',
    );
  });

  it('gives skips their reason: the skip list, or the spec own Skip message', () => {
    expect(parsed[1]?.message).toMatch(/pgrep/);
    expect(parsed[3]?.message).toBe('apparmor is not enabled');
  });

  it('reads a pass after a failed attempt as flaky: its attempts, the earlier failure, and the ids it logged', () => {
    const id = 'a509c9f05d75b602aa67361f30c7c55182ff3ffc19605626c773235fba073f0d';
    const sandbox = 'f'.repeat(64);
    const [flaky, failed] = parseGinkgoReport(
      report([
        {
          ...spec(
            ['[k8s.io] Idempotence', 'StopContainer'],
            'should not return an error if already stopped',
            'passed',
          ),
          NumAttempts: 2,
          AdditionalFailures: [
            {
              Failure: {
                Message: `Failure recorded during attempt 1:\nstop container "${id}" timeout.\n`,
                Location: { FileName: '/x/container.go', LineNumber: 459 },
                FailureNodeType: 'It',
              },
            },
          ],
          CapturedGinkgoWriterOutput: `STEP: create sandbox\nCreated PodSandbox "${sandbox}"\nStopped container "${'e'.repeat(64)}"`,
        },
        {
          ...spec(['[k8s.io] Container'], 'should support stopping container', 'failed', {
            Message: `stop container "${id}" timeout.`,
          }),
          NumAttempts: 2,
        },
      ]),
      [],
    );
    expect(flaky).toMatchObject({
      status: 'passed',
      attempts: 2,
      message: `attempt 1 failed: stop container "${id}" timeout. (container.go:459)`,
    });
    expect(flaky?.objectIds?.sort()).toEqual([id, 'e'.repeat(64), sandbox].sort());
    expect(failed).toMatchObject({ status: 'failed', attempts: 2, objectIds: [id] });
    expect(parsed[2]).not.toHaveProperty('attempts');
    expect(troubledSpecs([flaky!, failed!, parsed[2]!, parsed[1]!])).toEqual([flaky, failed]);
  });

  it('throws when a suite node failed, since then no spec result means anything', () => {
    expect(() =>
      parseGinkgoReport(
        report([spec([], '', 'failed', { Message: 'connection refused' }, 'BeforeSuite')]),
        [],
      ),
    ).toThrow('critest BeforeSuite failed: connection refused');
  });
});

describe('critest invocation', () => {
  it('passes the same images file and every skip as a literal regex', () => {
    const args = critestArgs(
      {
        endpoint: 'unix:///x.sock',
        images: { busybox: 'b', httpd: 'h' },
        focus: ['Streaming'],
        skip: ['sysctl'],
      },
      { images: '/d/images.yaml', report: '/d/report.json' },
    );
    expect(args.slice(0, 6)).toEqual([
      '--runtime-endpoint=unix:///x.sock',
      '--image-endpoint=unix:///x.sock',
      '--test-images-file=/d/images.yaml',
      '--ginkgo.json-report=/d/report.json',
      '--ginkgo.no-color',
      '--ginkgo.focus=Streaming',
    ]);
    expect(args).toContain(
      "--ginkgo.skip=if the container's primary UID belongs to some groups in the image",
    );
    expect(args).toContain('--ginkgo.skip=Image Manager');
    expect(args.at(-1)).toBe('--ginkgo.skip=sysctl');
    expect(args.filter((a) => a.startsWith('--ginkgo.skip='))).toHaveLength(CRITEST_SKIPS.length + 1);
    expect(imagesFile({ busybox: 'docker.io/x/busybox:1', httpd: 'h:2' })).toBe(
      'defaultTestContainerImage: "docker.io/x/busybox:1"\nwebServerTestImage: "h:2"\n',
    );
  });

  it('asks ginkgo for retries only when more than one attempt is wanted', () => {
    const files = { images: '/i', report: '/r' };
    const base = { endpoint: 'unix:///x.sock', images: { busybox: 'b', httpd: 'h' } };
    expect(critestArgs({ ...base, flakeAttempts: 2 }, files)).toContain('--ginkgo.flake-attempts=2');
    expect(critestArgs({ ...base, flakeAttempts: 1 }, files).join(' ')).not.toContain('flake');
    expect(critestArgs(base, files).join(' ')).not.toContain('flake');
    expect([
      flakeAttemptsOf('3'),
      flakeAttemptsOf('0'),
      flakeAttemptsOf('1.5'),
      flakeAttemptsOf('x'),
    ]).toEqual([3, undefined, undefined, undefined]);
  });

  it("finds the runtime's log lines that name a spec's ids, the last few", () => {
    const id = 'c'.repeat(64);
    const log = [
      `time="t1" level=info msg="starting" container=${id}`,
      'time="t2" level=info msg="unrelated"',
      `time="t3" level=info msg="Container failed to exit within 1m0s of signal 15 - using the force" container=${id}`,
      `  time="t4" level=info msg="ignoring event" container=${id}  `,
    ].join('\n');
    expect(runtimeLogLines(log, [id], 2)).toEqual([
      `time="t3" level=info msg="Container failed to exit within 1m0s of signal 15 - using the force" container=${id}`,
      `time="t4" level=info msg="ignoring event" container=${id}`,
    ]);
    expect(runtimeLogLines(log, [])).toEqual([]);
  });

  it('skips are literal text: regex characters in a spec name are escaped', () => {
    const pattern = literalPattern(
      'listing stats for three created containers when filter is nil. [Conformance]',
    );
    expect(
      new RegExp(pattern).test(
        'x listing stats for three created containers when filter is nil. [Conformance]',
      ),
    ).toBe(true);
    expect(new RegExp(pattern).test('listing stats for three created containers when filter is nilX C')).toBe(
      false,
    );
  });
});

describe('sides', () => {
  it('names suite cases "group › case" and sorts critest specs (ginkgo shuffles them)', () => {
    const suite = {
      endpoint: 'unix:///a',
      runtime: { name: 'docker', version: '20.10', apiVersion: 'v1' },
      cases: [{ group: 'logs', name: 'x', status: 'passed', durationMs: 1 }],
    } as unknown as SuiteResult;
    expect(suiteSide(suite)).toEqual({
      label: 'docker 20.10 (unix:///a)',
      results: [{ id: 'logs › x', status: 'passed', message: undefined }],
    });
    const critest = {
      endpoint: 'unix:///b',
      runtime: { name: 'containerd', version: '1.6' },
      durationMs: 61_000,
      specs: [
        { id: 'b', status: 'passed', durationMs: 1 },
        { id: 'a', status: 'failed', durationMs: 1 },
      ],
    } as unknown as CritestResult;
    expect(critestSides([critest])[0]).toMatchObject({
      label: 'containerd 1.6 (unix:///b), 61.0 s',
      results: [{ id: 'a' }, { id: 'b' }],
    });
  });
});
