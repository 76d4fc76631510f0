import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type DeepPartial,
  type LinuxContainerSecurityContext,
  SecurityProfile_ProfileType,
} from '@kh/cri-api';
import { expectContains, expectEqual, expectFailure, expectTrue } from '../framework/assert.js';
import { type CaseContext, defineGroup } from '../framework/framework.js';
import { statusField } from '../framework/proc_status.js';

// Seccomp as kubelet asks for it: the `seccomp` SecurityProfile, or the older seccomp_profile_path
// ("runtime/default", "unconfined", "localhost/<absolute path>"). /proc/self/status says whether a
// filter is installed (Seccomp: 2) or not (0); a Localhost profile is proved by the syscall it denies.

/** Allows everything but chmod (the syscalls busybox chmod may use), which fails with EPERM. */
const BLOCK_CHMOD = {
  defaultAction: 'SCMP_ACT_ALLOW',
  syscalls: [{ names: ['chmod', 'fchmodat', 'fchmodat2'], action: 'SCMP_ACT_ERRNO' }],
};

async function seccompMode(ctx: CaseContext, securityContext: DeepPartial<LinuxContainerSecurityContext>) {
  const pod = await ctx.runPod();
  const id = await ctx.startedContainer(pod, 'seccomp', { linux: { securityContext } });
  return statusField((await ctx.exec(id, ['cat', '/proc/self/status'])).stdout, 'Seccomp');
}

/** The profile written where the runtime reads it; returns its path as the runtime sees it. */
async function blockChmodProfile(ctx: CaseContext): Promise<string> {
  const dir = await ctx.hostDir('seccomp');
  await writeFile(join(dir.local, 'block-chmod.json'), JSON.stringify(BLOCK_CHMOD));
  return join(dir.runtime, 'block-chmod.json');
}

const chmod = (ctx: CaseContext, id: string) =>
  ctx.exec(id, ['sh', '-c', 'touch /tmp/f && chmod 600 /tmp/f']);

export const seccomp = defineGroup('seccomp', {
  'RuntimeDefault installs a filter': async (ctx) => {
    expectEqual(
      await seccompMode(ctx, { seccomp: { profileType: SecurityProfile_ProfileType.RuntimeDefault } }),
      '2',
      'Seccomp in /proc/self/status with RuntimeDefault',
    );
    expectEqual(
      await seccompMode(ctx, { seccompProfilePath: 'runtime/default' }),
      '2',
      'Seccomp in /proc/self/status with seccomp_profile_path runtime/default',
    );
  },

  'Unconfined installs none': async (ctx) => {
    expectEqual(
      await seccompMode(ctx, { seccomp: { profileType: SecurityProfile_ProfileType.Unconfined } }),
      '0',
      'Seccomp in /proc/self/status with Unconfined',
    );
  },

  'a Localhost profile denies the syscalls it lists, from either field': async (ctx) => {
    const profile = await blockChmodProfile(ctx);
    const pod = await ctx.runPod();
    const byField = await ctx.startedContainer(pod, 'localhost-field', {
      linux: {
        securityContext: {
          seccomp: { profileType: SecurityProfile_ProfileType.Localhost, localhostRef: profile },
        },
      },
    });
    const byPath = await ctx.startedContainer(pod, 'localhost-path', {
      linux: { securityContext: { seccompProfilePath: `localhost/${profile}` } },
    });
    const unconfined = await ctx.startedContainer(pod, 'unconfined', {
      linux: { securityContext: { seccomp: { profileType: SecurityProfile_ProfileType.Unconfined } } },
    });
    for (const [what, id] of [
      ['seccomp Localhost', byField],
      ['seccomp_profile_path localhost/', byPath],
    ] as const) {
      const r = await chmod(ctx, id);
      expectTrue(r.exitCode !== 0, `chmod succeeded under the ${what} profile that denies it`);
      expectContains(r.stderr, 'Operation not permitted', `chmod under the ${what} profile`);
    }
    expectEqual((await chmod(ctx, unconfined)).exitCode, 0, 'chmod exit code without a profile');
  },

  'a profile path without localhost/ is refused': async (ctx) => {
    const profile = await blockChmodProfile(ctx);
    const pod = await ctx.runPod();
    await expectFailure(
      ctx.createContainer(pod, 'no-prefix', { linux: { securityContext: { seccompProfilePath: profile } } }),
      `CreateContainer with seccomp_profile_path ${profile} (no localhost/ prefix)`,
    );
  },
});
