import { NamespaceMode } from '@kh/cri-api';
import { expectEqual } from '../framework/assert.js';
import { defineGroup } from '../framework/framework.js';
import { statusField } from '../framework/proc_status.js';

// NoNewPrivs is the kernel's no_new_privs flag (setuid binaries and file capabilities stop raising
// privileges), on the container's process and on every process exec'd into it. The test image has no
// setuid binary, so the flag itself, from /proc/<pid>/status, is the evidence.

export const noNewPrivs = defineGroup('no_new_privs', {
  'NoNewPrivs true sets no_new_privs on the container and its execs, false leaves it clear': async (ctx) => {
    const pod = await ctx.runPod();
    // Its own PID namespace, so that PID 1 is the container's process.
    const container = (name: string, noNewPrivs: boolean) =>
      ctx.startedContainer(pod, name, {
        linux: { securityContext: { noNewPrivs, namespaceOptions: { pid: NamespaceMode.CONTAINER } } },
      });
    for (const [id, expected] of [
      [await container('nnp-true', true), '1'],
      [await container('nnp-false', false), '0'],
    ] as const) {
      const flag = async (pid: string) =>
        statusField((await ctx.exec(id, ['cat', `/proc/${pid}/status`])).stdout, 'NoNewPrivs');
      expectEqual(
        await flag('1'),
        expected,
        `NoNewPrivs of the container's process (no_new_privs ${expected === '1'})`,
      );
      expectEqual(
        await flag('self'),
        expected,
        `NoNewPrivs of an exec'd process (no_new_privs ${expected === '1'})`,
      );
    }
  },
});
