import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResultsFileError, readResultsFile, validateResults } from '../../src/results/load.js';
import { cell, loadFixture, run, SAMPLE_PATH } from '../report/fixtures.js';

describe('validateResults', () => {
  it('accepts the recorded run', () => {
    expect(validateResults(loadFixture(SAMPLE_PATH)).cells).toHaveLength(18);
  });

  const broken: [string, (r: Record<string, unknown>) => unknown, RegExp][] = [
    ['not an object', () => [], /top level must be an object/],
    ['another schema version', (r) => ({ ...r, schemaVersion: 2 }), /schemaVersion must be 1, got 2/],
    ['no cells', (r) => ({ ...r, cells: undefined }), /\$\.cells must be an array/],
    [
      'a bad outcome',
      (r) => ({ ...r, cells: [{ ...cell('a', 'b'), outcome: 'ok' }] }),
      /cells\[0\]\.outcome/,
    ],
    [
      "a cell's CPU-seconds that are not a number",
      (r) => ({ ...r, cells: [cell('a', 'b', { cpu: { nodeSeconds: '12' as never } })] }),
      /cells\[0\]\.cpu\.nodeSeconds must be a number/,
    ],
    [
      "the run's CPU without its total",
      (r) => ({ ...r, cpu: { nodes: [], world: [], harnessSeconds: 1 } }),
      /\$\.cpu\.totalSeconds must be a number/,
    ],
    [
      'a node CPU record without seconds',
      (r) => ({ ...r, cpu: { nodes: [{ name: 'n' }], world: [], harnessSeconds: 1, totalSeconds: 1 } }),
      /\$\.cpu\.nodes\[0\]\.seconds must be a number/,
    ],
    [
      'a repeated cell',
      (r) => ({ ...r, cells: [cell('a', 'b'), cell('a', 'b')] }),
      /cells\[1\] repeats the cell a\/b/,
    ],
    [
      'an unknown timeline kind',
      (r) => ({ ...r, cells: [cell('a', 'b', { timeline: [{ t: 1, kind: 'x' as never, summary: '' }] })] }),
      /cells\[0\]\.timeline\[0\]\.kind is not a timeline kind: "x"/,
    ],
    [
      'a CRI call from an unknown caller',
      (r) => ({
        ...r,
        cells: [
          cell('a', 'b', { timeline: [{ t: 1, kind: 'cri-call', summary: '', source: 'kubelet' as never }] }),
        ],
      }),
      /cells\[0\]\.timeline\[0\]\.source must be agent or harness/,
    ],
    [
      'CRI call statistics without a count',
      (r) => ({
        ...r,
        runtimes: [
          {
            name: 'a',
            runtimeName: 'a',
            runtimeVersion: '1',
            criCalls: [{ source: 'agent', method: 'Version' }],
          },
        ],
      }),
      /runtimes\[0\]\.criCalls\[0\]\.count must be a number/,
    ],
    [
      'CRI call statistics with a code count that is not a number',
      (r) => ({
        ...r,
        runtimes: [
          {
            name: 'a',
            runtimeName: 'a',
            runtimeVersion: '1',
            criCalls: [
              {
                source: 'agent',
                method: 'Version',
                count: 1,
                errors: 1,
                codes: { UNKNOWN: 'x' },
                min: 1,
                p50: 1,
                p90: 1,
                p99: 1,
                max: 1,
              },
            ],
          },
        ],
      }),
      /runtimes\[0\]\.criCalls\[0\]\.codes\.UNKNOWN must be a number/,
    ],
    [
      'a contract row with an unknown status',
      (r) => ({
        ...r,
        runtimes: [
          {
            name: 'a',
            runtimeName: 'a',
            runtimeVersion: '1',
            criContract: [{ method: 'Version', status: 'hidden', count: 1 }],
          },
        ],
      }),
      /runtimes\[0\]\.criContract\[0\]\.status must be called, unimplemented or not-called/,
    ],
    [
      "a cell's CRI call statistics with a bad source",
      (r) => ({ ...r, cells: [{ ...cell('a', 'b'), criCalls: [{ source: 'x' }] }] }),
      /cells\[0\]\.criCalls\[0\]\.source must be agent or harness/,
    ],
    [
      'podStartupMs with a string',
      (r) => ({ ...r, cells: [{ ...cell('a', 'b'), podStartupMs: [1, '2'] }] }),
      /podStartupMs must be an array of numbers/,
    ],
    [
      'a start-up breakdown with an unknown stage',
      (r) => ({
        ...r,
        cells: [
          cell('a', 'b', {
            startupBreakdown: {
              pods: 1,
              incomplete: 0,
              total: { p50: 1, p90: 1, p99: 1 },
              stages: [{ stage: 'pull' as never, p50: 1, p90: 1, p99: 1 }],
            },
          }),
        ],
      }),
      /cells\[0\]\.startupBreakdown\.stages\[0\]\.stage is not a start-up stage/,
    ],
    [
      'a per-pod start-up row with a stage missing',
      (r) => ({
        ...r,
        cells: [
          cell('a', 'b', {
            startupBreakdown: {
              pods: 1,
              incomplete: 0,
              total: { p50: 1, p90: 1, p99: 1 },
              stages: [],
              perPod: [{ pod: 'n/p', totalMs: 1, stagesMs: [1] }],
            },
          }),
        ],
      }),
      /cells\[0\]\.startupBreakdown\.perPod\[0\]\.stagesMs must be 9 numbers/,
    ],
    [
      'a floor without its single-pod figure',
      (r) => ({ ...r, cells: [{ ...cell('a', 'b'), startupFloor: { burst: { pods: 30 } } }] }),
      /cells\[0\]\.startupFloor\.singleMs must be a number/,
    ],
    [
      'a start-up target without its verdict',
      (r) => ({
        ...r,
        runtimes: [
          {
            name: 'a',
            runtimeName: 'a',
            runtimeVersion: '1',
            startupTarget: { p50Ms: 1, floorMs: 1, ratio: 1, limit: 2 },
          },
        ],
      }),
      /runtimes\[0\]\.startupTarget\.met must be a boolean/,
    ],
    [
      'a benchmark without metrics',
      (r) => ({ ...r, benchmarks: [{ name: 'x' }] }),
      /benchmarks\[0\]\.metrics must be an object/,
    ],
  ];
  it.each(broken)('rejects %s, naming the field', (_, mutate, message) => {
    const data = mutate(run([cell('a', 'b')]) as unknown as Record<string, unknown>);
    expect(() => validateResults(data, 'r.json')).toThrow(ResultsFileError);
    expect(() => validateResults(data, 'r.json')).toThrow(message);
  });
});

describe('readResultsFile', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-test-report-load-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('says when the file is missing', async () => {
    await expect(readResultsFile(join(dir, 'nope.json'))).rejects.toThrow(/nope\.json: no such file/);
  });

  it('says when the file is not JSON', async () => {
    const path = join(dir, 'truncated.json');
    await writeFile(path, '{"schemaVersion": 1, "cells": [');
    await expect(readResultsFile(path)).rejects.toThrow(/truncated\.json: not valid JSON/);
  });

  it('reads a valid file', async () => {
    const path = join(dir, 'ok.json');
    await writeFile(path, JSON.stringify(run([cell('a', 'b')])));
    expect((await readResultsFile(path)).runId).toBe('test-run');
  });
});
