// hostUsers: false (a pod in its own user namespace) is refused on create with the host's
// network, PID or IPC namespace, as kube-apiserver's ValidatePodSpec does: 422 Invalid naming
// every such field; hostUsers: false alone, or true with host namespaces, is accepted. With it,
// the pod security context's fsGroupChangePolicy, whose values ValidatePodSecurityContext checks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, pod, startHarness } from './helpers.js';

const PODS = '/api/v1/namespaces/default/pods';
const spec = (extra: Record<string, unknown>) => ({
  ...extra,
  containers: [{ name: 'c', image: 'busybox:1.36', command: ['sleep', '3600'] }],
});

describe('hostUsers validation', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('refuses hostUsers: false with hostNetwork, hostPID and hostIPC, naming each', async () => {
    const res = await h.api.post(
      PODS,
      pod('userns-host', spec({ hostUsers: false, hostNetwork: true, hostPID: true, hostIPC: true })),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Invalid' });
    expect(res.body.message).toContain('spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false');
    expect(res.body.details.causes).toEqual([
      {
        reason: 'FieldValueForbidden',
        message: 'Forbidden: when `pod.Spec.HostUsers` is false',
        field: 'spec.hostNetwork',
      },
      {
        reason: 'FieldValueForbidden',
        message: 'Forbidden: when `pod.Spec.HostUsers` is false',
        field: 'spec.HostPID',
      },
      {
        reason: 'FieldValueForbidden',
        message: 'Forbidden: when `pod.Spec.HostUsers` is false',
        field: 'spec.HostIPC',
      },
    ]);
    for (const [name, field] of [
      ['net', 'hostNetwork'],
      ['pid', 'hostPID'],
      ['ipc', 'hostIPC'],
    ] as const) {
      const one = await h.api.post(PODS, pod(`userns-${name}`, spec({ hostUsers: false, [field]: true })));
      expect(one.status).toBe(422);
      expect(one.body.details.causes).toHaveLength(1);
    }
  });

  it('takes fsGroupChangePolicy Always or OnRootMismatch only', async () => {
    for (const policy of ['Always', 'OnRootMismatch']) {
      const ok = await h.api.post(
        PODS,
        pod(
          `fsgroup-${policy.toLowerCase()}`,
          spec({ securityContext: { fsGroup: 200, fsGroupChangePolicy: policy } }),
        ),
      );
      expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    }
    const bad = await h.api.post(
      PODS,
      pod('fsgroup-bad', spec({ securityContext: { fsGroup: 200, fsGroupChangePolicy: 'Sometimes' } })),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.details.causes).toEqual([
      {
        reason: 'FieldValueNotSupported',
        message: 'Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"',
        field: 'spec.securityContext.fsGroupChangePolicy',
      },
    ]);
  });

  it('accepts a user namespace alone, and host namespaces without one', async () => {
    const alone = await h.api.post(PODS, pod('userns', spec({ hostUsers: false })));
    expect(alone.status, JSON.stringify(alone.body)).toBe(201);
    expect(alone.body.spec.hostUsers).toBe(false);
    const host = await h.api.post(
      PODS,
      pod('host-users', spec({ hostUsers: true, hostNetwork: true, hostPID: true, hostIPC: true })),
    );
    expect(host.status, JSON.stringify(host.body)).toBe(201);
  });
});
