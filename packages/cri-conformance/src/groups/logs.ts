import { existsSync } from 'node:fs';
import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerState } from '@kh/cri-api';
import { expectEqual, expectFailure, expectTrue } from '../framework/assert.js';
import { type CaseContext, defineGroup, waitFor } from '../framework/framework.js';

// CRI log line: <RFC3339Nano timestamp> <stdout|stderr> <P|F> <message>
const LINE =
  /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) (stdout|stderr) ([PF]) (.*)$/;

async function readLog(path: string): Promise<{ stream: string; tag: string; message: string }[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = LINE.exec(line);
      if (!m) throw new Error(`not a CRI log line: ${JSON.stringify(line)}`);
      return { stream: m[2] ?? '', tag: m[3] ?? '', message: m[4] ?? '' };
    });
}

async function podWithLogs(ctx: CaseContext) {
  const dirName = `${ctx.uid}-${Math.random().toString(36).slice(2, 8)}`;
  const pod = await ctx.runPod({ logDirectory: join(ctx.options.logDir.runtime, dirName) });
  return { pod, local: join(ctx.options.logDir.local, dirName) };
}

export const logs = defineGroup('logs', {
  'container output lands in log_directory/log_path in the CRI format': async (ctx) => {
    const { pod, local } = await podWithLogs(ctx);
    const id = await ctx.startedContainer(pod, 'logger', {
      command: ['sh', '-c', 'echo to-stdout; echo to-stderr >&2'],
      logPath: 'logger/0.log',
    });
    await ctx.waitForState(id, ContainerState.CONTAINER_EXITED);
    const lines = await waitFor(async () => {
      const l = await readLog(join(local, 'logger/0.log'));
      return l.length >= 2 ? l : undefined;
    }, 'two log lines');
    expectEqual(
      lines.map((l) => [l.stream, l.tag, l.message]).sort(),
      [
        ['stderr', 'F', 'to-stderr'],
        ['stdout', 'F', 'to-stdout'],
      ],
      'log lines',
    );
    const { status } = await ctx.client.containerStatus({ containerId: id });
    expectTrue(status?.logPath.endsWith('logger/0.log'), `log_path in status is ${status?.logPath}`);
  },

  'the log file exists when StartContainer returns': async (ctx) => {
    const { pod, local } = await podWithLogs(ctx);
    await ctx.startedContainer(pod, 'quiet', { command: ['sleep', '3600'], logPath: 'quiet/0.log' });
    expectTrue(existsSync(join(local, 'quiet/0.log')), 'no log file right after StartContainer');
  },

  "a short-lived container's log is complete once ContainerStatus says EXITED": async (ctx) => {
    const { pod, local } = await podWithLogs(ctx);
    const id = await ctx.startedContainer(pod, 'short', {
      command: ['sh', '-c', 'i=1; while [ $i -le 200 ]; do echo "line $i"; i=$((i+1)); done; printf last'],
      logPath: 'short/0.log',
    });
    await ctx.waitForState(id, ContainerState.CONTAINER_EXITED);
    // Read once, without waiting: kubectl logs of a completed pod reads the file at this point.
    const lines = await readLog(join(local, 'short/0.log'));
    // A P(artial) line continues in the next one; how a last line without newline is tagged varies.
    const got = lines
      .map((l) => (l.tag === 'P' ? l.message : `${l.message}\n`))
      .join('')
      .replace(/\n$/, '')
      .split('\n');
    const want = [...Array.from({ length: 200 }, (_, i) => `line ${i + 1}`), 'last'];
    const first = want.findIndex((line, i) => got[i] !== line);
    expectTrue(
      first < 0 && got.length === want.length,
      `the log of the exited container holds ${got.length} of ${want.length} lines; line ${first + 1} is ${JSON.stringify(got[first])}`,
    );
  },

  'ReopenContainerLog starts a new file after rotation': async (ctx) => {
    const { pod, local } = await podWithLogs(ctx);
    const id = await ctx.startedContainer(pod, 'rotating', {
      command: ['sh', '-c', 'i=0; while true; do i=$((i+1)); echo line $i; sleep 0.2; done'],
      logPath: 'rotating/0.log',
    });
    const path = join(local, 'rotating/0.log');
    await waitFor(async () => ((await readLog(path)).length > 0 ? true : undefined), 'first log lines');
    await rename(path, `${path}.1`);
    await ctx.client.reopenContainerLog({ containerId: id });
    await waitFor(
      async () => ((await readLog(path)).length > 0 ? true : undefined),
      'lines in the reopened file',
    );
    const rotated = (await readLog(`${path}.1`)).length;
    await new Promise((r) => setTimeout(r, 1_000));
    expectEqual((await readLog(`${path}.1`)).length, rotated, 'lines still written to the rotated file');
  },

  'ReopenContainerLog fails for a stopped container': async (ctx) => {
    const { pod } = await podWithLogs(ctx);
    const id = await ctx.startedContainer(pod, 'stopped-log', {
      command: ['true'],
      logPath: 'stopped-log/0.log',
    });
    await ctx.waitForState(id, ContainerState.CONTAINER_EXITED);
    await expectFailure(
      ctx.client.reopenContainerLog({ containerId: id }),
      'reopen log of an exited container',
    );
  },
});
