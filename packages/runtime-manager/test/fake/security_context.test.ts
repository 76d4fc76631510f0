// The security context through syncPod over the fake runtime: what RunPodSandbox and
// CreateContainer receive, and runAsNonRoot's CreateContainerConfigError from the image's user.
import type { CreateContainerRequest, CriClient, RunPodSandboxRequest, UserNamespace } from '@kh/cri-api';
import { NamespaceMode, SecurityProfile_ProfileType, SupplementalGroupsPolicy } from '@kh/cri-api';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ErrCreateContainerConfig } from '../../src/container/sync_result.js';
import type { UserNamespaceProvider } from '../../src/kuberuntime/context.js';
import { ctr, type Harness, harnessPerTest, makePod } from './harness.js';

let h: Harness;
harnessPerTest((started) => {
  h = started;
});

/** A manager whose ImageStatus reports the given user for every image. */
async function managerWithImageUser(user: { uid?: bigint; username?: string }) {
  const cri = h.clients[0]!;
  const withUser: CriClient = Object.create(cri, {
    imageStatus: {
      value: async (...args: Parameters<CriClient['imageStatus']>) => {
        const res = await cri.imageStatus(...args);
        if (!res.image) return res;
        return {
          ...res,
          image: {
            ...res.image,
            uid: user.uid === undefined ? undefined : { value: user.uid },
            username: user.username ?? '',
          },
        };
      },
    },
  });
  h.manager = await h.newManager({ cri: withUser });
}

describe('security context over the fake runtime', () => {
  it('sends the default masks, seccompDefault and the sandbox RuntimeDefault profile', async () => {
    h.manager = await h.newManager({ security: { seccompDefault: true } });
    const r = await h.sync(makePod('masks', [ctr('app')]));
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    const sc = h.requests<CreateContainerRequest>('CreateContainer')[0]!.config!.linux!.securityContext!;
    expect(sc.maskedPaths).toContain('/proc/kcore');
    expect(sc.readonlyPaths).toContain('/proc/sys');
    expect(sc.seccomp?.profileType).toBe(SecurityProfile_ProfileType.RuntimeDefault);
    const sandbox = h.requests<RunPodSandboxRequest>('RunPodSandbox')[0]!.config!.linux!;
    expect(sandbox.securityContext?.seccomp?.profileType).toBe(SecurityProfile_ProfileType.RuntimeDefault);
  });

  it('makes the sandbox privileged when any container is, an ephemeral one too', async () => {
    const privileged = { securityContext: { privileged: true } };
    await h.sync(makePod('plain', [ctr('app')]));
    await h.sync(makePod('init', [ctr('app')], { initContainers: [{ ...ctr('setup'), ...privileged }] }));
    await h.sync(
      makePod('debugged', [ctr('app')], {
        ephemeralContainers: [{ ...ctr('debugger'), ...privileged }],
      }),
    );
    const sandboxes = h.requests<RunPodSandboxRequest>('RunPodSandbox');
    expect(
      sandboxes.map((r) => [r.config!.metadata!.name, r.config!.linux!.securityContext!.privileged]),
    ).toEqual([
      ['plain', false],
      ['init', true],
      ['debugged', true],
    ]);
  });

  it('sends sysctls with dots as separators', async () => {
    const pod = makePod('sysctl', [ctr('app')], {
      securityContext: { sysctls: [{ name: 'kernel/shm_rmid_forced', value: '1' }] },
    });
    await h.sync(pod);
    const sandbox = h.requests<RunPodSandboxRequest>('RunPodSandbox')[0]!.config!.linux!;
    expect(sandbox.sysctls).toEqual({ 'kernel.shm_rmid_forced': '1' });
  });

  it('fails runAsNonRoot with CreateContainerConfigError when the image would run as root', async () => {
    await managerWithImageUser({});
    const pod = makePod('root-image', [ctr('app', { securityContext: { runAsNonRoot: true } })]);
    const r = await h.sync(pod);
    const failed = r.steps.find((s) => s.action === 'StartContainer');
    expect(failed?.reason).toBe(ErrCreateContainerConfig);
    expect(failed?.message).toContain('container has runAsNonRoot and image will run as root');
    expect(h.requests('CreateContainer')).toEqual([]);
    expect(h.events.find((e) => e.reason === 'Failed')?.message).toMatch(
      /^Error: container has runAsNonRoot/,
    );
  });

  it("runs runAsNonRoot as the image's numeric non-root user", async () => {
    await managerWithImageUser({ uid: 1234n });
    const pod = makePod('user-image', [ctr('app', { securityContext: { runAsNonRoot: true } })]);
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    const sc = h.requests<CreateContainerRequest>('CreateContainer')[0]!.config!.linux!.securityContext!;
    expect(sc.runAsUser).toEqual({ value: 1234n });
  });
});

describe('SupplementalGroupsPolicy', () => {
  it("sends the pod's policy with the sandbox and every container; Merge when unset", async () => {
    await h.sync(
      makePod('strict', [ctr('app')], { securityContext: { supplementalGroupsPolicy: 'Strict' } }),
    );
    await h.sync(makePod('unset', [ctr('app')]));
    const sandboxes = h.requests<RunPodSandboxRequest>('RunPodSandbox');
    const containers = h.requests<CreateContainerRequest>('CreateContainer');
    expect(sandboxes.map((r) => r.config?.linux?.securityContext?.supplementalGroupsPolicy)).toEqual([
      SupplementalGroupsPolicy.Strict,
      SupplementalGroupsPolicy.Merge,
    ]);
    expect(containers.map((r) => r.config?.linux?.securityContext?.supplementalGroupsPolicy)).toEqual([
      SupplementalGroupsPolicy.Strict,
      SupplementalGroupsPolicy.Merge,
    ]);
  });

  it("passes on the runtime's features and the user it reports for a container", async () => {
    const cri = h.clients[0]!;
    const user = { uid: 1000n, gid: 1000n, supplementalGroups: [1000n, 60000n] };
    const reporting: CriClient = Object.create(cri, {
      status: {
        value: async (...args: Parameters<CriClient['status']>) => ({
          ...(await cri.status(...args)),
          features: { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false, mountOptions: false },
        }),
      },
      containerStatus: {
        value: async (...args: Parameters<CriClient['containerStatus']>) => {
          const res = await cri.containerStatus(...args);
          return res.status ? { ...res, status: { ...res.status, user: { linux: user } } } : res;
        },
      },
    });
    h.manager = await h.newManager({ cri: reporting });
    expect((await h.manager.status()).features).toEqual({ supplementalGroupsPolicy: true });
    const pod = makePod('user', [ctr('app')]);
    await h.sync(pod);
    expect((await h.status(pod)).containerStatuses[0]?.user).toEqual(user);
  });
});

/**
 * The node agent's user namespace manager behind the runtime manager's narrow interface: mode
 * NODE for every pod but hostUsers: false ones, which get a fixed range (or the given error).
 */
class UserNamespaces implements UserNamespaceProvider {
  readonly calls: { pod: string; handler: string }[] = [];
  refusal: string | undefined;
  async getOrCreateUserNamespaceMappings(pod: V1Pod, handler: string): Promise<UserNamespace> {
    this.calls.push({ pod: pod.metadata?.name ?? '', handler });
    if (pod.spec?.hostUsers !== false) return { mode: NamespaceMode.NODE, uids: [], gids: [] };
    if (this.refusal) throw new Error(this.refusal);
    return { mode: NamespaceMode.POD, uids: [RANGE], gids: [RANGE] };
  }
}
const RANGE = { hostId: 3 * 65536, containerId: 0, length: 65536 };

const usernsSent = () => [
  ...h
    .requests<RunPodSandboxRequest>('RunPodSandbox')
    .map((r) => r.config?.linux?.securityContext?.namespaceOptions?.usernsOptions),
  ...h
    .requests<CreateContainerRequest>('CreateContainer')
    .map((r) => r.config?.linux?.securityContext?.namespaceOptions?.usernsOptions),
];

describe('user namespaces (UserNamespacesSupport)', () => {
  it("sends mode POD with the pod's mappings for hostUsers: false, on the sandbox and each container", async () => {
    const userns = new UserNamespaces();
    h.manager = await h.newManager({ userNamespaces: userns });
    const pod = makePod('userns', [ctr('app'), ctr('sidecar')], { hostUsers: false });
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    const mode = { mode: NamespaceMode.POD, uids: [RANGE], gids: [RANGE] };
    expect(usernsSent()).toEqual([mode, mode, mode]);
    // Every mount (here the termination message file) is ID-mapped like the pod.
    const mounts = h
      .requests<CreateContainerRequest>('CreateContainer')
      .flatMap((r) => r.config?.mounts ?? []);
    expect(mounts.length).toBeGreaterThan(0);
    for (const m of mounts) expect([m.uidMappings, m.gidMappings]).toEqual([[RANGE], [RANGE]]);
    expect(userns.calls).toEqual([
      { pod: 'userns', handler: '' },
      { pod: 'userns', handler: '' },
      { pod: 'userns', handler: '' },
    ]);
  });

  it('sends mode NODE for every pod that does not ask for a user namespace', async () => {
    h.manager = await h.newManager({ userNamespaces: new UserNamespaces() });
    await h.sync(makePod('plain', [ctr('app')]));
    await h.sync(makePod('host-users', [ctr('app')], { hostUsers: true }));
    const node = { mode: NamespaceMode.NODE, uids: [], gids: [] };
    expect(usernsSent()).toEqual([node, node, node, node]);
    const mounts = h
      .requests<CreateContainerRequest>('CreateContainer')
      .flatMap((r) => r.config?.mounts ?? []);
    for (const m of mounts) expect([m.uidMappings, m.gidMappings]).toEqual([[], []]);
  });

  it("fails the sandbox with the manager's reason before asking the runtime for one", async () => {
    const userns = new UserNamespaces();
    userns.refusal = "can't set `spec.hostUsers: false`, runtime does not support user namespaces";
    h.manager = await h.newManager({ userNamespaces: userns });
    const r = await h.sync(makePod('userns', [ctr('app')], { hostUsers: false }));
    const message = `Failed to create pod sandbox: ${userns.refusal}`;
    expect(r.steps.find((s) => s.action === 'CreatePodSandbox')).toMatchObject({
      reason: 'CreatePodSandboxError',
      message,
    });
    expect(h.requests('RunPodSandbox')).toEqual([]);
    expect(h.events.find((e) => e.reason === 'FailedCreatePodSandBox')?.message).toBe(message);
  });

  it('sends no user namespace option with the gate off, and refuses pods that set hostUsers', async () => {
    await h.sync(makePod('plain', [ctr('app')]));
    expect(usernsSent()).toEqual([undefined, undefined]);
    for (const hostUsers of [false, true]) {
      const r = await h.sync(makePod(`host-users-${hostUsers}`, [ctr('app')], { hostUsers }));
      expect(r.steps.find((s) => s.action === 'CreatePodSandbox')?.message).toBe(
        'Failed to create pod sandbox: the feature gate "UserNamespacesSupport" is disabled: can\'t set spec.HostUsers',
      );
    }
    expect(h.requests('RunPodSandbox')).toHaveLength(1);
  });
});
