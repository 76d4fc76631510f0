// Sysctl names are validated on create as kube-apiserver's ValidatePodSecurityContext does: a
// malformed or repeated name is a 422 Invalid Status naming it; whether a sysctl is safe is the
// node's decision (SysctlForbidden at admission), not the apiserver's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, pod, startHarness } from './helpers.js';

const PODS = '/api/v1/namespaces/default/pods';
const spec = (sysctls: { name: string; value: string }[]) => ({
  securityContext: { sysctls },
  containers: [{ name: 'c', image: 'busybox:1.36', command: ['sleep', '3600'] }],
});

describe('sysctl validation', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it("rejects upstream's invalid names, and only those", async () => {
    const res = await h.api.post(
      PODS,
      pod(
        'bad-sysctls',
        spec([
          { name: 'foo-', value: 'bar' },
          { name: 'kernel.shmmax', value: '100000000' },
          { name: 'safe-and-unsafe', value: '100000000' },
          { name: 'bar..', value: '42' },
        ]),
      ),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    const message: string = res.body.message;
    expect(message).toContain('Invalid value: "foo-"');
    expect(message).toContain('Invalid value: "bar.."');
    expect(message).not.toContain('safe-and-unsafe');
    expect(message).not.toContain('kernel.shmmax');
    expect(res.body.details.causes.map((c: { field: string }) => c.field)).toEqual([
      'spec.securityContext.sysctls[0].name',
      'spec.securityContext.sysctls[3].name',
    ]);
  });

  it('accepts both separators and refuses a repeated name', async () => {
    const ok = await h.api.post(
      PODS,
      pod(
        'good-sysctls',
        spec([
          { name: 'kernel/shm_rmid_forced', value: '1' },
          { name: 'net.ipv4.ip_local_port_range', value: '1024 65535' },
        ]),
      ),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    const dup = await h.api.post(
      PODS,
      pod(
        'dup-sysctls',
        spec([
          { name: 'kernel.msgmax', value: '1' },
          { name: 'kernel.msgmax', value: '2' },
        ]),
      ),
    );
    expect(dup.status).toBe(422);
    expect(dup.body.message).toContain(
      'spec.securityContext.sysctls[1].name: Duplicate value: "kernel.msgmax"',
    );
  });
});
