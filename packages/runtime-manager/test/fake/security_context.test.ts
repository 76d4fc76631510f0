// The security context through syncPod over the fake runtime: what RunPodSandbox and
// CreateContainer receive, and runAsNonRoot's CreateContainerConfigError from the image's user.
import type { CreateContainerRequest, CriClient, RunPodSandboxRequest } from '@kh/cri-api';
import { SecurityProfile_ProfileType, SupplementalGroupsPolicy } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { ErrCreateContainerConfig } from '../../src/container/sync_result.js';
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

describe('hostUsers: false', () => {
  it('fails the sandbox, saying the runtime handler does not support user namespaces', async () => {
    const pod = makePod('userns', [ctr('app')], { hostUsers: false });
    const r = await h.sync(pod);
    expect(r.steps.find((s) => s.action === 'CreatePodSandbox')).toMatchObject({
      reason: 'CreatePodSandboxError',
      message: 'Failed to create pod sandbox: RuntimeClass handler "" does not support user namespaces',
    });
    expect(h.requests('RunPodSandbox')).toEqual([]);
    expect(h.events.find((e) => e.reason === 'FailedCreatePodSandBox')?.message).toContain(
      'does not support user namespaces',
    );
  });

  it('leaves hostUsers: true pods in the host user namespace', async () => {
    const r = await h.sync(makePod('host-users', [ctr('app')], { hostUsers: true }));
    expect(r.steps.filter((s) => s.error)).toEqual([]);
  });
});
