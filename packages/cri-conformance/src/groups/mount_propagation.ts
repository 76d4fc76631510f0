import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { MountPropagation } from '@kh/cri-api';
import { expectEqual } from '../framework/assert.js';
import { type CaseContext, defineGroup, Skip } from '../framework/framework.js';
import { unmountAll } from '../framework/mounts.js';

// Mount propagation of a host path: a "host side" container with a bidirectional mount of the same
// directory makes mounts that reach the runtime's host, and the container under test, with the
// propagation being tested, must (or must not) see them; then the reverse direction. The directory
// must sit on a shared mount of the runtime's host, so the suite bind-mounts it on itself and makes
// it rshared, as critest does (which needs root and the runtime's mount namespace).

const run = promisify(execFile);
const REFUSED = /not (a )?shared|neither shared/i;

async function sharedHostDir(ctx: CaseContext): Promise<{ runtime: string; local: string }> {
  const dir = await ctx.hostDir('propagation');
  ctx.onCleanup(() => unmountAll(dir.local));
  try {
    await run('mount', ['--bind', dir.local, dir.local]);
    await run('mount', ['--make-rshared', dir.local]);
  } catch (err) {
    throw new Skip(
      `the suite cannot make ${dir.local} a shared mount (it needs root in the runtime's mount namespace): ${(err as Error).message.trim()}`,
    );
  }
  return dir;
}

/** Mounts a tmpfs holding a marker file at /mnt/s/<name>, from inside a container. */
const mountMarker = (ctx: CaseContext, id: string, name: string) =>
  ctx.exec(id, [
    'sh',
    '-c',
    `mkdir -p /mnt/s/${name} && mount -t tmpfs ${name} /mnt/s/${name} && touch /mnt/s/${name}/marker`,
  ]);

const sees = async (ctx: CaseContext, id: string, name: string) =>
  (await ctx.exec(id, ['test', '-e', `/mnt/s/${name}/marker`])).exitCode === 0;

async function checkPropagation(
  ctx: CaseContext,
  propagation: MountPropagation,
  expected: { hostToContainer: boolean; containerToHost: boolean },
): Promise<void> {
  const dir = await sharedHostDir(ctx);
  const pod = await ctx.runPod();
  const withMount = (mode: MountPropagation) => ({
    mounts: [{ containerPath: '/mnt/s', hostPath: dir.runtime, propagation: mode }],
    linux: { securityContext: { capabilities: { addCapabilities: ['SYS_ADMIN'] } } },
  });
  let host: string;
  let subject: string;
  try {
    host = await ctx.startedContainer(
      pod,
      'host-side',
      withMount(MountPropagation.PROPAGATION_BIDIRECTIONAL),
    );
    subject = await ctx.startedContainer(pod, 'subject', withMount(propagation));
  } catch (err) {
    const message = (err as Error).message;
    if (REFUSED.test(message))
      throw new Skip(`the runtime's host does not hold ${dir.runtime} on a shared mount: ${message}`);
    throw err;
  }
  const { status } = await ctx.client.containerStatus({ containerId: subject });
  expectEqual(
    status?.mounts.find((m) => m.containerPath === '/mnt/s')?.propagation,
    propagation,
    'propagation of the mount in ContainerStatus',
  );
  const made = await mountMarker(ctx, host, 'from-host');
  expectEqual(made.exitCode, 0, `mount in the host-side container (${made.stderr.trim()})`);
  expectEqual(
    await sees(ctx, subject, 'from-host'),
    expected.hostToContainer,
    'a host mount visible in the container',
  );
  const back = await mountMarker(ctx, subject, 'from-container');
  expectEqual(back.exitCode, 0, `mount in the container (${back.stderr.trim()})`);
  expectEqual(
    await sees(ctx, host, 'from-container'),
    expected.containerToHost,
    "the container's mount visible on the host",
  );
}

export const mountPropagation = defineGroup('mount propagation', {
  'PROPAGATION_PRIVATE: no mount crosses between host and container': (ctx) =>
    checkPropagation(ctx, MountPropagation.PROPAGATION_PRIVATE, {
      hostToContainer: false,
      containerToHost: false,
    }),

  'PROPAGATION_HOST_TO_CONTAINER (rslave): host mounts reach the container, not the reverse': (ctx) =>
    checkPropagation(ctx, MountPropagation.PROPAGATION_HOST_TO_CONTAINER, {
      hostToContainer: true,
      containerToHost: false,
    }),

  'PROPAGATION_BIDIRECTIONAL (rshared): mounts cross both ways': (ctx) =>
    checkPropagation(ctx, MountPropagation.PROPAGATION_BIDIRECTIONAL, {
      hostToContainer: true,
      containerToHost: true,
    }),
});
