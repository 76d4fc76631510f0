// Probe specs are validated on create as kube-apiserver's ValidateProbe does: an invalid one is a
// 422 Invalid Status with one field cause per problem, and the node never sees the pod.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, pod, startHarness } from './helpers.js';

const PODS = '/api/v1/namespaces/default/pods';

describe('probe validation', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
  });
  afterAll(async () => {
    await h?.stop();
  });

  const causes = async (name: string, spec: object) => {
    const res = await h.api.post(PODS, pod(name, spec));
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Invalid', details: { kind: 'Pod', name } });
    return res.body.details.causes.map((c: { field: string; message: string }) => `${c.field}: ${c.message}`);
  };
  const app = (probes: object) => ({
    containers: [{ name: 'c', image: 'busybox:1.36', command: ['sleep', '3600'], ...probes }],
  });

  it('accepts every handler, a probe-level grace period and named ports', async () => {
    const spec = {
      containers: [
        {
          name: 'c',
          image: 'busybox:1.36',
          ports: [{ name: 'http', containerPort: 8080 }],
          livenessProbe: { httpGet: { port: 'http', path: '/healthz' }, terminationGracePeriodSeconds: 5 },
          readinessProbe: { tcpSocket: { port: 8080 } },
          startupProbe: { grpc: { port: 5000 }, failureThreshold: 60, terminationGracePeriodSeconds: 5 },
        },
      ],
      initContainers: [
        {
          name: 'sidecar',
          image: 'busybox:1.36',
          restartPolicy: 'Always',
          readinessProbe: { exec: { command: ['true'] } },
        },
      ],
    };
    const res = await h.api.post(PODS, pod('good-probes', spec));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });

  it('rejects two handlers, negative settings and successThreshold != 1 on liveness and startup', async () => {
    expect(
      await causes(
        'bad-probes',
        app({
          livenessProbe: { exec: { command: ['true'] }, httpGet: { port: 80 }, successThreshold: 2 },
          readinessProbe: { tcpSocket: { port: 80 }, periodSeconds: -1, successThreshold: 3 },
          startupProbe: { exec: { command: ['true'] }, successThreshold: 0, failureThreshold: -2 },
        }),
      ),
    ).toEqual([
      'spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type',
      'spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1',
      'spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0',
      'spec.containers[0].startupProbe.failureThreshold: Invalid value: -2: must be greater than or equal to 0',
      'spec.containers[0].startupProbe.successThreshold: Invalid value: 0: must be 1',
    ]);
  });

  it('rejects a probe without a handler, an empty command, bad ports and schemes', async () => {
    expect(
      await causes(
        'bad-handlers',
        app({
          livenessProbe: { periodSeconds: 1 },
          readinessProbe: { exec: { command: [] } },
          startupProbe: { httpGet: { port: 70000, scheme: 'FTP' } },
        }),
      ),
    ).toEqual([
      'spec.containers[0].livenessProbe: Required value: must specify a handler type',
      'spec.containers[0].readinessProbe.exec.command: Required value',
      'spec.containers[0].startupProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive',
      'spec.containers[0].startupProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"',
    ]);
    expect(
      await causes(
        'bad-ports',
        app({ livenessProbe: { tcpSocket: { port: 'Not_A_Name' } }, readinessProbe: { grpc: { port: 0 } } }),
      ),
    ).toEqual([
      'spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: "Not_A_Name": must be a port number (1-65535) or a valid port name (IANA_SVC_NAME)',
      'spec.containers[0].readinessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive',
    ]);
  });

  it('allows terminationGracePeriodSeconds only on liveness and startup, and only above 0', async () => {
    expect(
      await causes(
        'bad-grace',
        app({
          livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 0 },
          readinessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 5 },
        }),
      ),
    ).toEqual([
      'spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0',
      'spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes',
    ]);
  });

  it('forbids probes on init containers that are not sidecars', async () => {
    expect(
      await causes('init-probe', {
        initContainers: [
          { name: 'setup', image: 'busybox:1.36', livenessProbe: { exec: { command: ['true'] } } },
        ],
      }),
    ).toEqual([
      'spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always',
    ]);
  });
});
