import { NamespaceMode } from '@kh/cri-api';
import { expectTrue } from '../framework/assert.js';
import { type CaseContext, defineGroup } from '../framework/framework.js';
import { capabilityDifference, capabilitySet } from '../framework/proc_status.js';

// "Every capability" means every capability the runtime's host has: a host whose bounding set lacks
// one (this project's machines lack CAP_SYS_RESOURCE) cannot hand it to a container, so the reference
// is the bounding set of PID 1 on the runtime's host, read from a container in the host PID namespace.

const hex = (mask: bigint) => mask.toString(16).padStart(16, '0');

function expectHostSet(actual: bigint, host: bigint, what: string): void {
  const difference = capabilityDifference(actual, host);
  expectTrue(
    difference === undefined,
    `${what} ${hex(actual)} ${difference} of the runtime host's bounding set ${hex(host)}`,
  );
}

async function hostBoundingSet(ctx: CaseContext): Promise<bigint> {
  const hostPid = { linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.NODE } } } };
  const pod = await ctx.runPod(hostPid);
  const id = await ctx.startedContainer(pod, 'host-pid', hostPid);
  return capabilitySet((await ctx.exec(id, ['cat', '/proc/1/status'])).stdout, 'CapBnd');
}

async function capabilities(ctx: CaseContext, id: string) {
  const status = (await ctx.exec(id, ['cat', '/proc/self/status'])).stdout;
  return { effective: capabilitySet(status, 'CapEff'), bounding: capabilitySet(status, 'CapBnd') };
}

export const privileged = defineGroup('privileged', {
  'Privileged gets the bounding set of the runtime host': async (ctx) => {
    const host = await hostBoundingSet(ctx);
    const pod = await ctx.runPod({ linux: { securityContext: { privileged: true } } });
    const id = await ctx.startedContainer(pod, 'privileged', {
      linux: { securityContext: { privileged: true } },
    });
    const caps = await capabilities(ctx, id);
    expectHostSet(caps.bounding, host, 'CapBnd of a privileged container');
    expectHostSet(caps.effective, host, 'CapEff of a privileged container');
  },

  'adding ALL capabilities gives the bounding set of the runtime host': async (ctx) => {
    const host = await hostBoundingSet(ctx);
    const pod = await ctx.runPod();
    const all = await ctx.startedContainer(pod, 'add-all', {
      linux: { securityContext: { capabilities: { addCapabilities: ['ALL'] } } },
    });
    const plain = await ctx.startedContainer(pod, 'default-caps');
    expectHostSet((await capabilities(ctx, all)).effective, host, 'CapEff with ALL added');
    const defaults = (await capabilities(ctx, plain)).effective;
    expectTrue(
      defaults !== host && (defaults & ~host) === 0n,
      `default CapEff ${hex(defaults)} should be a strict subset of the host bounding set ${hex(host)}`,
    );
  },
});
