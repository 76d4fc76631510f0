import { execFile } from 'node:child_process';
import { appendFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriCallLogReader, parseCriCallLine } from '../../src/node/cri-call-log.js';
import type { NodeHost } from '../../src/node/host.js';
import { LineTail } from '../../src/node/lines.js';

// Runs the reader's shell script on this machine, and returns its output the way ContainerHost
// does (docker exec output through a LineTail), so offsets and partial lines are tested for real.
const localHost: Pick<NodeHost, 'exec'> & { execs: number } = {
  execs: 0,
  exec(cmd) {
    this.execs++;
    return new Promise((resolve) => {
      execFile(cmd[0]!, cmd.slice(1), (err, stdout, stderr) => {
        const out = new LineTail(100_000);
        out.push(stdout);
        out.push(stderr);
        resolve({ exitCode: err ? Number(err.code ?? 1) : 0, output: out.tail(100_000).join('\n') });
      });
    });
  },
};

const line = (method: string, ms: number, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({ time: new Date(1_700_000_000_000 + ms).toISOString(), method, durationMs: ms, code: 'OK', ...extra })}\n`;

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kh-cri-read-'));
  path = join(dir, 'cri-calls.jsonl');
  localHost.execs = 0;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('parseCriCallLine', () => {
  it('reads a record and rejects anything else', () => {
    expect(parseCriCallLine(line('RunPodSandbox', 96, { code: 'UNKNOWN', error: 'boom' }))).toEqual({
      at: 1_700_000_000_096,
      method: 'RunPodSandbox',
      durationMs: 96,
      code: 'UNKNOWN',
      error: 'boom',
    });
    expect(parseCriCallLine('not json')).toBeUndefined();
    expect(parseCriCallLine('{"time":"x","method":"Version","durationMs":1,"code":"OK"}')).toBeUndefined();
    expect(
      parseCriCallLine('{"time":"2026-01-01T00:00:00Z","method":"Version","code":"OK"}'),
    ).toBeUndefined();
  });
});

describe('CriCallLogReader', () => {
  it('returns nothing while the agent has not written the file', async () => {
    expect(await new CriCallLogReader(localHost, path).readNew()).toEqual([]);
  });

  it('returns each call once: only what was appended since the last read', async () => {
    const reader = new CriCallLogReader(localHost, path);
    appendFileSync(path, line('Version', 1) + line('RunPodSandbox', 2));
    expect((await reader.readNew()).map((c) => c.method)).toEqual(['Version', 'RunPodSandbox']);
    expect(await reader.readNew()).toEqual([]);
    appendFileSync(path, line('CreateContainer', 3));
    expect((await reader.readNew()).map((c) => c.method)).toEqual(['CreateContainer']);
  });

  it('leaves a line the agent is still writing for the next read', async () => {
    const reader = new CriCallLogReader(localHost, path);
    const full = line('StartContainer', 4);
    appendFileSync(path, line('CreateContainer', 3) + full.slice(0, 20));
    expect((await reader.readNew()).map((c) => c.method)).toEqual(['CreateContainer']);
    appendFileSync(path, full.slice(20));
    expect((await reader.readNew()).map((c) => c.method)).toEqual(['StartContainer']);
  });

  it('finishes the rotated file before the new one, losing nothing', async () => {
    const reader = new CriCallLogReader(localHost, path);
    appendFileSync(path, line('Version', 1));
    await reader.readNew();
    appendFileSync(path, line('ListContainers', 2));
    renameSync(path, `${path}.1`);
    appendFileSync(path, line('ListPodSandbox', 3));
    expect((await reader.readNew()).map((c) => c.method)).toEqual(['ListContainers', 'ListPodSandbox']);
    expect(await reader.readNew()).toEqual([]);
  });

  it('reads a large backlog in chunks', async () => {
    const reader = new CriCallLogReader(localHost, path, 1_000);
    const all = Array.from({ length: 100 }, (_, i) => line('ListContainers', i)).join('');
    appendFileSync(path, all);
    const calls = await reader.readNew();
    expect(calls.map((c) => c.durationMs)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(localHost.execs).toBeGreaterThan(5);
  });

  it('fails with the output when the script cannot run', async () => {
    const broken: Pick<NodeHost, 'exec'> = { exec: async () => ({ exitCode: 126, output: 'sh: not found' }) };
    await expect(new CriCallLogReader(broken, path).readNew()).rejects.toThrow(/sh: not found/);
  });
});
