import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTerminationMessage, tailLogMessage } from '../../src/kuberuntime/termination_message.js';

const line = (stream: string, tag: string, text: string) =>
  `2024-01-01T00:00:00.000000000Z ${stream} ${tag} ${text}`;

describe('the termination message from logs', () => {
  it('keeps the last 80 lines within 2 KiB', () => {
    const text = Array.from({ length: 200 }, (_, i) => line('stdout', 'F', `l${i}`)).join('\n');
    const msg = tailLogMessage(text);
    expect(msg.split('\n').filter(Boolean)).toHaveLength(80);
    expect(msg.startsWith('l120\n')).toBe(true);
    const long = Array.from({ length: 10 }, () => line('stdout', 'F', 'x'.repeat(500))).join('\n');
    expect(Buffer.byteLength(tailLogMessage(long))).toBe(2048);
  });
  it('ends as the container ended: `echo -n DONE; false` gives DONE, without a newline', () => {
    expect(tailLogMessage(line('stdout', 'P', 'DONE'))).toBe('DONE');
    expect(tailLogMessage([line('stdout', 'F', 'a'), line('stdout', 'P', 'b'), ''].join('\n'))).toBe('a\nb');
  });
});

describe('readTerminationMessage', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kh-tm-'));
  const msgFile = join(dir, 'msg');
  const logFile = join(dir, '0.log');
  await writeFile(logFile, [line('stderr', 'F', 'panic: boom'), ''].join('\n'));
  const mounts = [{ containerPath: '/dev/termination-log', hostPath: msgFile }];
  const base = { path: '/dev/termination-log', mounts, logPath: logFile };
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('reads the file behind the terminationMessagePath mount, capped at 4 KiB', async () => {
    await writeFile(msgFile, 'y'.repeat(5000));
    expect(await readTerminationMessage({ ...base, policy: 'File', exitCode: 1 })).toHaveLength(4096);
  });
  it('falls back to the log tail only for FallbackToLogsOnError, a failure, and an empty file', async () => {
    await writeFile(msgFile, '');
    expect(await readTerminationMessage({ ...base, policy: 'FallbackToLogsOnError', exitCode: 2 })).toBe(
      'panic: boom\n',
    );
    expect(await readTerminationMessage({ ...base, policy: 'FallbackToLogsOnError', exitCode: 0 })).toBe('');
    expect(await readTerminationMessage({ ...base, policy: 'File', exitCode: 2 })).toBe('');
    await writeFile(msgFile, 'written');
    expect(await readTerminationMessage({ ...base, policy: 'FallbackToLogsOnError', exitCode: 2 })).toBe(
      'written',
    );
  });
  it('reports a read failure as the message', async () => {
    const gone = [{ containerPath: '/dev/termination-log', hostPath: join(dir, 'missing') }];
    const msg = await readTerminationMessage({ ...base, mounts: gone, policy: 'File', exitCode: 1 });
    expect(msg).toMatch(/^Error on reading termination log \/dev\/termination-log: ENOENT/);
  });
});
