import { ContainerState } from '@kh/cri-api';
import { expectEqual, expectFailure, expectTrue } from '../framework/assert.js';
import { defineGroup } from '../framework/framework.js';

export const exec = defineGroup('exec', {
  'ExecSync returns stdout, stderr and exit code': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'exec');
    expectEqual(
      await ctx.exec(id, ['echo', 'hello']),
      { stdout: 'hello\n', stderr: '', exitCode: 0 },
      'echo',
    );
    expectEqual(
      await ctx.exec(id, ['sh', '-c', 'echo oops >&2; exit 42']),
      { stdout: '', stderr: 'oops\n', exitCode: 42 },
      'failing command',
    );
  },

  'ExecSync timeout answers DEADLINE_EXCEEDED': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'exec-timeout');
    const started = Date.now();
    await expectFailure(
      ctx.client.execSync({ containerId: id, cmd: ['sleep', '60'], timeout: 1n }),
      'ExecSync with a 1 s timeout',
      'DEADLINE_EXCEEDED',
    );
    expectTrue(Date.now() - started < 30_000, 'the timeout was not honoured');
  },

  'ExecSync in a stopped container fails': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'exec-exited', { command: ['true'] });
    await ctx.waitForState(id, ContainerState.CONTAINER_EXITED);
    await expectFailure(
      ctx.client.execSync({ containerId: id, cmd: ['true'], timeout: 5n }),
      'exec in exited container',
    );
  },
});
