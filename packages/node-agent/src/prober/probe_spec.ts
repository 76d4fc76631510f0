// A container probe with the API's defaults applied, and the API server's validation rules, so
// a static pod or an unvalidated source cannot hand the prober a probe it would misread.

import { ErrorList, type FieldError } from '@kh/apimachinery';
import type { V1Container, V1Probe } from '@kubernetes/client-node';

export type ProbeType = 'liveness' | 'readiness' | 'startup';

export type ProbeHandler =
  | { kind: 'exec'; command: string[] }
  | {
      kind: 'httpGet';
      scheme: 'HTTP' | 'HTTPS';
      host?: string;
      port: number | string;
      path: string;
      headers: { name: string; value: string }[];
    }
  | { kind: 'tcpSocket'; host?: string; port: number | string }
  | { kind: 'grpc'; port: number; service: string };

export interface ProbeSpec {
  type: ProbeType;
  handler: ProbeHandler;
  initialDelayMs: number;
  periodMs: number;
  timeoutMs: number;
  successThreshold: number;
  failureThreshold: number;
  /** Probe-level override of the pod's grace period for the kill a failure causes. */
  terminationGracePeriodSeconds?: number;
}

export const PROBE_FIELD: Record<ProbeType, 'livenessProbe' | 'readinessProbe' | 'startupProbe'> = {
  liveness: 'livenessProbe',
  readiness: 'readinessProbe',
  startup: 'startupProbe',
};

/** Every problem with a probe, in the API server's field-error form. */
export function validateProbe(probe: V1Probe, type: ProbeType, path: string): FieldError[] {
  const errs = new ErrorList();
  const handlers = (['exec', 'httpGet', 'tcpSocket', 'grpc'] as const).filter((h) => probe[h] !== undefined);
  if (handlers.length === 0) errs.required(path, 'must specify a handler type');
  if (handlers.length > 1)
    errs.invalid(`${path}.${handlers[1]}`, handlers[1], 'may not specify more than 1 handler type');
  for (const f of [
    'initialDelaySeconds',
    'timeoutSeconds',
    'periodSeconds',
    'successThreshold',
    'failureThreshold',
  ] as const) {
    const v = probe[f];
    if (v !== undefined && (!Number.isInteger(v) || v < 0))
      errs.invalid(`${path}.${f}`, v, 'must be greater than or equal to 0');
  }
  if (
    (type === 'liveness' || type === 'startup') &&
    probe.successThreshold !== undefined &&
    probe.successThreshold !== 1
  )
    errs.invalid(`${path}.successThreshold`, probe.successThreshold, 'must be 1');
  const grace = probe.terminationGracePeriodSeconds;
  if (grace !== undefined) {
    if (type === 'readiness')
      errs.invalid(`${path}.terminationGracePeriodSeconds`, grace, 'must not be set for readinessProbes');
    else if (!Number.isInteger(grace) || grace <= 0)
      errs.invalid(`${path}.terminationGracePeriodSeconds`, grace, 'must be greater than 0');
  }
  if (probe.exec && (probe.exec.command ?? []).length === 0) errs.required(`${path}.exec.command`);
  const port = probe.httpGet?.port ?? probe.tcpSocket?.port;
  if (port !== undefined) {
    const field = `${path}.${probe.httpGet ? 'httpGet' : 'tcpSocket'}.port`;
    if (
      typeof port === 'number' ? port < 1 || port > 65535 : !/^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/.test(port)
    )
      errs.invalid(field, port, 'must be a valid port number (1-65535) or name (IANA_SVC_NAME)');
  }
  if (probe.httpGet?.scheme !== undefined && !['HTTP', 'HTTPS'].includes(probe.httpGet.scheme))
    errs.notSupported(`${path}.httpGet.scheme`, probe.httpGet.scheme, ['HTTP', 'HTTPS']);
  if (probe.grpc && (!Number.isInteger(probe.grpc.port) || probe.grpc.port < 1 || probe.grpc.port > 65535))
    errs.invalid(`${path}.grpc.port`, probe.grpc.port, 'must be between 1 and 65535, inclusive');
  return errs.errors;
}

/** Applies the API defaults (period 10s, timeout 1s, success 1, failure 3); assumes validateProbe passed. */
export function probeSpec(probe: V1Probe, type: ProbeType): ProbeSpec {
  const positive = (v: number | undefined, dflt: number) => (v && v > 0 ? v : dflt);
  let handler: ProbeHandler;
  if (probe.exec) handler = { kind: 'exec', command: probe.exec.command ?? [] };
  else if (probe.httpGet)
    handler = {
      kind: 'httpGet',
      scheme: probe.httpGet.scheme === 'HTTPS' ? 'HTTPS' : 'HTTP',
      host: probe.httpGet.host || undefined,
      port: probe.httpGet.port,
      path: probe.httpGet.path || '/',
      headers: probe.httpGet.httpHeaders ?? [],
    };
  else if (probe.tcpSocket)
    handler = { kind: 'tcpSocket', host: probe.tcpSocket.host || undefined, port: probe.tcpSocket.port };
  else if (probe.grpc) handler = { kind: 'grpc', port: probe.grpc.port, service: probe.grpc.service ?? '' };
  else throw new Error('probe has no handler');
  return {
    type,
    handler,
    initialDelayMs: (probe.initialDelaySeconds ?? 0) * 1000,
    periodMs: positive(probe.periodSeconds, 10) * 1000,
    timeoutMs: positive(probe.timeoutSeconds, 1) * 1000,
    successThreshold: positive(probe.successThreshold, 1),
    failureThreshold: positive(probe.failureThreshold, 3),
    ...(probe.terminationGracePeriodSeconds !== undefined
      ? { terminationGracePeriodSeconds: probe.terminationGracePeriodSeconds }
      : {}),
  };
}

/** A named port resolves against the container's declared ports, as the kubelet does. */
export function resolvePort(port: number | string, container: V1Container): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const found = (container.ports ?? []).find((p) => p.name === port);
  if (!found) throw new Error(`couldn't find port: ${port} in container ${container.name}`);
  return found.containerPort;
}
