import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseReportArgs, runReportCommand } from '../../src/report/cli.js';
import { BASELINE_PATH, SAMPLE_PATH } from './fixtures.js';

function capture() {
  const out = {
    text: '',
    write(t: string) {
      out.text += t;
    },
  };
  return out;
}

async function report(argv: string[], signal?: AbortSignal) {
  const stdout = capture();
  const stderr = capture();
  const code = await runReportCommand(argv, { stdout, stderr, ...(signal ? { signal } : {}) });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('parseReportArgs', () => {
  it('defaults to the run command output folder, KH_OUT when set', () => {
    expect(parseReportArgs([], {})).toEqual({
      input: '.reports/e2e/results.json',
      out: '.reports/e2e/report.html',
      baseline: undefined,
      serve: false,
      port: 8080,
      durationPct: 50,
      durationMinMs: 500,
      criP99Ratio: 2,
      criMinMs: 5,
      failOnRegression: false,
    });
    expect(parseReportArgs([], { KH_OUT: '/tmp/run1' })).toMatchObject({
      input: '/tmp/run1/results.json',
      out: '/tmp/run1/report.html',
    });
  });

  it('reads every option; --serve writes no file unless --out is given', () => {
    expect(
      parseReportArgs(
        [
          ...['-i', 'r.json', '-b', 'old.json', '--serve', '-p', '0', '--regression-threshold', '35.5'],
          ...['--cri-regression-ratio', '3', '--cri-regression-min-ms', '1.5'],
        ],
        {},
      ),
    ).toMatchObject({
      input: 'r.json',
      baseline: 'old.json',
      serve: true,
      port: 0,
      out: undefined,
      durationPct: 35.5,
      criP99Ratio: 3,
      criMinMs: 1.5,
    });
    expect(parseReportArgs(['--serve', '--out', 'x.html'], {})).toMatchObject({ out: 'x.html' });
    expect(parseReportArgs(['--help'], {})).toBeUndefined();
  });

  it.each([
    [['--bogus'], /Unknown option '--bogus'/],
    [['--serve', '--port', '80a'], /--port must be a non-negative integer/],
    [['--serve', '--port', '70000'], /at most 65535/],
    [['--port', '9000'], /--port only applies with --serve/],
    [['--regression-min-ms=-5'], /--regression-min-ms must be a non-negative number/],
    [['stray'], /positional/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseReportArgs(argv, {})).toThrow(message);
  });
});

describe('runReportCommand', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-test-report-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes one HTML file and prints what it found', async () => {
    const out = join(dir, 'report.html');
    const r = await report(['-i', SAMPLE_PATH, '-b', BASELINE_PATH, '-o', out]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toContain(`Wrote ${out} (18 cells: 15 passed, 2 failed, 1 skipped; 3 regressions`);
    expect(r.stdout).toContain('(docker/probes, containerd/gc, containerd agent CreateContainer p99)');
    const html = await readFile(out, 'utf8');
    expect(html.startsWith('<!doctype html>')).toBe(true);
  });

  it('exits 1 on regressions only when asked to', async () => {
    const out = join(dir, 'gate.html');
    expect(
      (await report(['-i', SAMPLE_PATH, '-b', BASELINE_PATH, '-o', out, '--fail-on-regression'])).code,
    ).toBe(1);
    // The baseline compared with itself has no regressions.
    expect(
      (await report(['-i', BASELINE_PATH, '-b', BASELINE_PATH, '-o', out, '--fail-on-regression'])).code,
    ).toBe(0);
  });

  it('exits 2 with a message for bad arguments and unreadable input', async () => {
    const bad = await report(['--port', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^kubelet-harness report: .*\n\nUsage: kubelet-harness report/);

    const missing = await report(['-i', join(dir, 'absent.json'), '-o', join(dir, 'x.html')]);
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toContain('absent.json: no such file');

    const unwritable = await report(['-i', SAMPLE_PATH, '-o', join(dir, 'no', 'such', 'dir.html')]);
    expect(unwritable.code).toBe(2);
    expect(unwritable.stderr).toContain('ENOENT');
  });

  it('prints usage for --help', async () => {
    const r = await report(['-h']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--baseline <file|dir>');
  });

  it('serves the page on 127.0.0.1 until stopped', async () => {
    const stop = new AbortController();
    const stdout = capture();
    const done = runReportCommand(['-i', SAMPLE_PATH, '--serve', '--port', '0'], {
      stdout,
      signal: stop.signal,
    });
    const url = await waitFor(
      () => /Serving the report at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout.text)?.[1],
    );
    try {
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await page.text()).toContain('id="report-data"');
      expect((await fetch(new URL('report.html', url))).status).toBe(200);
      expect((await fetch(new URL('other', url))).status).toBe(404);
      expect((await fetch(url, { method: 'POST' })).status).toBe(405);
    } finally {
      stop.abort();
    }
    expect(await done).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  });

  it('says when the port is taken', async () => {
    const stop = new AbortController();
    const first = capture();
    const done = runReportCommand(['-i', SAMPLE_PATH, '--serve', '-p', '0'], {
      stdout: first,
      signal: stop.signal,
    });
    const port = await waitFor(() => /127\.0\.0\.1:(\d+)/.exec(first.text)?.[1]);
    try {
      const r = await report(['-i', SAMPLE_PATH, '--serve', '-p', port]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`port ${port} on 127.0.0.1 is in use`);
    } finally {
      stop.abort();
      await done;
    }
  });
});

async function waitFor<T>(probe: () => T | undefined, attempts = 200): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not met');
}
