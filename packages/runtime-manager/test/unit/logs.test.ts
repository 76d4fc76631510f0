// The manager's log layout and the CRI log format (kuberuntime/logs.ts).
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  containerLogPath,
  parseCriLog,
  podLogDir,
  podLogDirOf,
  readTail,
  removeContainerLog,
  restartCountFromLogDir,
} from '../../src/kuberuntime/logs.js';

const line = (stream: string, tag: string, text: string) =>
  `2024-01-01T00:00:00.000000000Z ${stream} ${tag} ${text}`;

describe('CRI log parsing', () => {
  it('joins partial lines and keeps both streams in order', () => {
    const text = [
      line('stdout', 'P', 'hel'),
      line('stdout', 'F', 'lo'),
      line('stderr', 'F', 'oops'),
      '',
    ].join('\n');
    expect(parseCriLog(text)).toEqual(['hello', 'oops']);
  });
  it('keeps lines in another format whole, and an unfinished partial line at the end', () => {
    expect(parseCriLog(['not cri', line('stdout', 'P', 'half'), ''].join('\n'))).toEqual(['not cri', 'half']);
    expect(parseCriLog('2024-01-01T00:00:00Z stdout F')).toEqual(['']);
  });
});

describe('log layout', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kh-logs-'));
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("puts a pod's logs in <root>/<namespace>_<name>_<uid> and an instance in <container>/<n>.log", () => {
    expect(podLogDir('/var/log/pods', 'default', 'web', 'u1')).toBe('/var/log/pods/default_web_u1');
    const pod = { metadata: { namespace: 'kube-system', name: 'dns', uid: 'u2' } };
    expect(podLogDirOf('/logs', pod)).toBe('/logs/kube-system_dns_u2');
    expect(containerLogPath('app', 3)).toBe('app/3.log');
  });

  it('gives the restart count after the highest <n>.log, and 0 without a directory', async () => {
    const logs = join(dir, 'app');
    await mkdir(logs);
    expect(await restartCountFromLogDir(logs)).toBe(0);
    for (const f of ['0.log', '4.log', '2.log', 'notes.txt', '7.log.gz']) await writeFile(join(logs, f), '');
    expect(await restartCountFromLogDir(logs)).toBe(5);
    expect(await restartCountFromLogDir(join(dir, 'missing'))).toBe(0);
  });

  it('removes a log file, and one already gone is no error', async () => {
    const f = join(dir, 'gone.log');
    await writeFile(f, 'x');
    await removeContainerLog(f);
    await removeContainerLog(f);
    expect(await readdir(dir)).not.toContain('gone.log');
  });

  it('removes the rotated and compressed files with the log, and no other instance', async () => {
    const d = join(dir, 'rotated');
    await mkdir(d);
    for (const n of ['0.log', '0.log.20261128-203105.gz', '0.log.20261128-203106', '10.log', '1.log'])
      await writeFile(join(d, n), 'x');
    await removeContainerLog(join(d, '0.log'));
    expect((await readdir(d)).sort()).toEqual(['1.log', '10.log']);
  });

  it('reads the tail of a file', async () => {
    const f = join(dir, 'tail.log');
    await writeFile(f, 'abcdefgh');
    expect((await readTail(f, 3)).toString()).toBe('fgh');
    expect((await readTail(f, 100)).toString()).toBe('abcdefgh');
  });
});
