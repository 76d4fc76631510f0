import { formatFieldError } from '@kh/apimachinery';
import { describe, expect, it } from 'vitest';
import { probeSpec, resolvePort, validateProbe } from '../../src/prober/probe_spec.js';

describe('probeSpec', () => {
  it('applies the API defaults', () => {
    expect(probeSpec({ tcpSocket: { port: 80 } }, 'readiness')).toEqual({
      type: 'readiness',
      handler: { kind: 'tcpSocket', port: 80 },
      initialDelayMs: 0,
      periodMs: 10_000,
      timeoutMs: 1_000,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(probeSpec({ httpGet: { port: 'http' } }, 'liveness').handler).toEqual({
      kind: 'httpGet',
      scheme: 'HTTP',
      port: 'http',
      path: '/',
      headers: [],
    });
  });

  it('keeps explicit settings and the probe-level grace period', () => {
    const s = probeSpec(
      {
        exec: { command: ['true'] },
        initialDelaySeconds: 5,
        periodSeconds: 2,
        timeoutSeconds: 3,
        failureThreshold: 1,
        terminationGracePeriodSeconds: 4,
      },
      'liveness',
    );
    expect(s).toMatchObject({
      initialDelayMs: 5000,
      periodMs: 2000,
      timeoutMs: 3000,
      failureThreshold: 1,
      terminationGracePeriodSeconds: 4,
    });
    expect(probeSpec({ grpc: { port: 9000 } }, 'startup').handler).toEqual({
      kind: 'grpc',
      port: 9000,
      service: '',
    });
  });
});

describe('validateProbe', () => {
  const msgs = (...args: Parameters<typeof validateProbe>) => validateProbe(...args).map(formatFieldError);

  it('accepts a good probe', () => {
    expect(
      validateProbe({ httpGet: { port: 8080, path: '/healthz' }, successThreshold: 2 }, 'readiness', 'p'),
    ).toEqual([]);
  });

  it('lists every problem', () => {
    expect(
      msgs(
        {
          exec: { command: ['true'] },
          tcpSocket: { port: 0 },
          periodSeconds: -1,
          successThreshold: 2,
          terminationGracePeriodSeconds: 0,
        },
        'liveness',
        'spec.containers[0].livenessProbe',
      ),
    ).toEqual([
      'spec.containers[0].livenessProbe.tcpSocket: Invalid value: "tcpSocket": may not specify more than 1 handler type',
      'spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0',
      'spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1',
      'spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0',
      'spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: 0: must be a valid port number (1-65535) or name (IANA_SVC_NAME)',
    ]);
  });

  it('requires a handler, refuses a readiness grace period and checks startup thresholds, schemes and gRPC ports', () => {
    expect(msgs({}, 'readiness', 'p')).toEqual(['p: Required value: must specify a handler type']);
    expect(msgs({ exec: { command: ['x'] }, terminationGracePeriodSeconds: 5 }, 'readiness', 'p')).toEqual([
      'p.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes',
    ]);
    expect(msgs({ exec: { command: ['x'] }, successThreshold: 3 }, 'startup', 'p')).toEqual([
      'p.successThreshold: Invalid value: 3: must be 1',
    ]);
    expect(msgs({ httpGet: { port: 'Not_A_Name', scheme: 'FTP' } }, 'readiness', 'p')).toHaveLength(2);
    expect(msgs({ grpc: { port: 70000 } }, 'readiness', 'p')).toEqual([
      'p.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive',
    ]);
    expect(msgs({ exec: {} }, 'liveness', 'p')).toEqual(['p.exec.command: Required value']);
  });
});

describe('resolvePort', () => {
  const c = { name: 'web', ports: [{ name: 'http', containerPort: 8080 }] };
  it('takes numbers, numeric strings and named container ports', () => {
    expect(resolvePort(81, c)).toBe(81);
    expect(resolvePort('82', c)).toBe(82);
    expect(resolvePort('http', c)).toBe(8080);
    expect(() => resolvePort('metrics', c)).toThrow("couldn't find port: metrics in container web");
  });
});
