import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CriCallEvent, CriClient, FakeRuntime, NotFoundError } from '@kh/cri-api';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flagsHelp, parseFlags } from '../src/config/flags.js';
import { CriCallLog, type CriCallRecord, criCallObserver } from '../src/runtime/cri_call_log.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kh-cri-log-'));
});
afterEach(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

const call = (method: string, durationMs: number, error?: NotFoundError): CriCallEvent => ({
  method,
  service: 'runtime.v1.RuntimeService',
  durationMs,
  ...(error ? { error } : {}),
});

const lines = (path: string): CriCallRecord[] =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as CriCallRecord)
    : [];

describe('CriCallLog', () => {
  it('writes one JSON line per call with its start time, method, latency and gRPC code', () => {
    const path = join(dir, 'sub', 'calls.jsonl');
    const log = CriCallLog.open(path, { now: () => Date.parse('2026-11-23T01:00:00.500Z') });
    log.record(call('RunPodSandbox', 96.1234567));
    log.record(call('ContainerStatus', 2, new NotFoundError('container "abc" not found')));
    log.close();
    expect(lines(path)).toEqual([
      { time: '2026-11-23T01:00:00.403Z', method: 'RunPodSandbox', durationMs: 96.123, code: 'OK' },
      {
        time: '2026-11-23T01:00:00.498Z',
        method: 'ContainerStatus',
        durationMs: 2,
        code: 'NOT_FOUND',
        error: 'container "abc" not found',
      },
    ]);
  });

  it('writes ASCII only, so byte offsets equal character offsets', () => {
    const path = join(dir, 'calls.jsonl');
    const log = CriCallLog.open(path);
    log.record(call('PullImage', 3, new NotFoundError('image "caf\u00e9:\u2603" not found\n')));
    log.close();
    const text = readFileSync(path, 'utf8');
    expect(text).toMatch(/^[\x20-\x7e]*\n$/);
    expect(lines(path)[0]?.error).toBe('image "caf\u00e9:\u2603" not found\n');
  });

  it('buffers lines and writes them after the flush interval, not per call', () => {
    vi.useFakeTimers();
    const path = join(dir, 'calls.jsonl');
    const log = CriCallLog.open(path, { flushIntervalMs: 250 });
    log.record(call('ListContainers', 1));
    log.record(call('ListPodSandbox', 1));
    expect(readFileSync(path, 'utf8')).toBe('');
    vi.advanceTimersByTime(250);
    expect(lines(path).map((r) => r.method)).toEqual(['ListContainers', 'ListPodSandbox']);
    log.close();
  });

  it('writes at once when the buffer is full', () => {
    vi.useFakeTimers();
    const path = join(dir, 'calls.jsonl');
    const log = CriCallLog.open(path, { flushIntervalMs: 60_000, maxBufferBytes: 200 });
    for (let i = 0; i < 5; i++) log.record(call('ListContainers', i));
    expect(lines(path).length).toBeGreaterThanOrEqual(2);
    log.close();
    expect(lines(path)).toHaveLength(5);
  });

  it('appends across restarts and rotates to <path>.1 instead of growing past maxBytes', () => {
    const path = join(dir, 'calls.jsonl');
    writeFileSync(path, `${JSON.stringify({ time: 't', method: 'Version', durationMs: 1, code: 'OK' })}\n`);
    const log = CriCallLog.open(path, { maxBytes: 1_000 });
    for (let i = 0; i < 40; i++) {
      log.record(call('ListContainers', i));
      log.flush();
    }
    log.close();
    const current = lines(path);
    const rotated = lines(`${path}.1`);
    expect(statSync(path).size).toBeLessThanOrEqual(1_000);
    expect(statSync(`${path}.1`).size).toBeLessThanOrEqual(1_000);
    // The two files hold the newest calls, in order, without a gap.
    const all = [...rotated, ...current].map((r) => r.durationMs);
    expect(all.length).toBeGreaterThan(current.length);
    expect(all).toEqual(Array.from({ length: all.length }, (_, i) => 40 - all.length + i));
    expect(current.length).toBeGreaterThan(0);
  });

  it('names the flag and the path when the file cannot be opened', () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    expect(() => CriCallLog.open(join(file, 'calls.jsonl'))).toThrow(
      `--cri-call-log ${join(file, 'calls.jsonl')}:`,
    );
  });

  it('reports a failed write once and keeps the agent going', () => {
    const errors: Error[] = [];
    const log = CriCallLog.open(join(dir, 'calls.jsonl'), { onError: (e) => errors.push(e) });
    log.close();
    const reopened = CriCallLog.open('/dev/full', { onError: (e) => errors.push(e) });
    reopened.record(call('Version', 1));
    expect(() => reopened.flush()).not.toThrow();
    reopened.record(call('Version', 1));
    reopened.flush();
    reopened.close();
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/ENOSPC/);
  });
});

describe('criCallObserver', () => {
  it('feeds the metrics, and the log only when a path is given', () => {
    const seen: string[] = [];
    const metrics = { recordCriCall: (e: CriCallEvent) => seen.push(e.method) };
    criCallObserver(metrics, '')(call('Version', 1));
    expect(seen).toEqual(['Version']);
    expect(existsSync(join(dir, 'calls.jsonl'))).toBe(false);
  });

  it('records every call of a real CRI client, failures with their gRPC code', async () => {
    const fake = await FakeRuntime.start();
    const path = join(dir, 'calls.jsonl');
    const seen: string[] = [];
    const onCall = criCallObserver({ recordCriCall: (e) => seen.push(e.method) }, path);
    const cri = await CriClient.connect(fake.endpoint, { onCall });
    try {
      await cri.version({});
      const sandbox = await cri.runPodSandbox({
        config: { metadata: { name: 'p', namespace: 'ns', uid: 'u1', attempt: 0 } },
      });
      await cri.listContainers({});
      await expect(cri.containerStatus({ containerId: 'missing' })).rejects.toThrow();
      await cri.stopPodSandbox({ podSandboxId: sandbox.podSandboxId });
    } finally {
      cri.close();
      await fake.stop();
    }
    await vi.waitFor(() => expect(lines(path)).toHaveLength(5), { timeout: 2_000 });
    const recs = lines(path);
    expect(recs.map((r) => r.method)).toEqual(seen);
    expect(recs.map((r) => r.method)).toEqual([
      'Version',
      'RunPodSandbox',
      'ListContainers',
      'ContainerStatus',
      'StopPodSandbox',
    ]);
    expect(recs[3]).toMatchObject({ code: 'NOT_FOUND' });
    expect(recs[3]?.error).toMatch(/missing/);
    for (const r of recs) {
      expect(Number.isNaN(Date.parse(r.time))).toBe(false);
      expect(r.durationMs).toBeGreaterThanOrEqual(0);
    }
  });
});

describe('--cri-call-log', () => {
  it('sets the option and is documented as a harness extension', () => {
    const { options, configOverrides, errors } = parseFlags(['--cri-call-log', '/var/log/kh/cri.jsonl']);
    expect(errors).toEqual([]);
    expect(options.criCallLog).toBe('/var/log/kh/cri.jsonl');
    expect(configOverrides).toEqual({});
    expect(parseFlags([]).options.criCallLog).toBe('');
    expect(flagsHelp()).toMatch(/--cri-call-log\s+Harness extension, not a kubelet flag/);
  });
});
