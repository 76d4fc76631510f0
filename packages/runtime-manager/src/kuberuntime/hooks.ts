// Lifecycle handlers (postStart, preStop): exec through CRI ExecSync, httpGet against the pod
// IP (or the handler's host; HTTPS without verifying the certificate, as the kubelet), and sleep.
import type { V1ContainerPort, V1LifecycleHandler } from '@kubernetes/client-node';
import { httpGet } from '../util/http_get.js';

/** The kubelet's User-Agent for httpGet hooks. */
export const LIFECYCLE_USER_AGENT = 'kube-lifecycle/1.33';
const MAX_REDIRECTS = 10;

export interface HookTarget {
  containerId: string;
  containerName: string;
  podIP: string | undefined;
  ports: V1ContainerPort[];
}

export interface HookRunner {
  exec(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
  ): Promise<{ exitCode: number; output: string }>;
}

function resolvePort(port: number | string, ports: V1ContainerPort[]): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = ports.find((p) => p.name === port);
  if (!named) throw new Error(`couldn't find port "${port}" in the container's ports`);
  return named.containerPort;
}

/** Runs a handler, giving up after `timeoutSeconds`; resolves on success, rejects with why it failed. */
export async function runHandler(
  handler: V1LifecycleHandler,
  target: HookTarget,
  runner: HookRunner,
  timeoutSeconds: number,
): Promise<void> {
  if (handler.exec) {
    const cmd = handler.exec.command ?? [];
    const { exitCode, output } = await runner.exec(target.containerId, cmd, timeoutSeconds);
    if (exitCode !== 0) {
      throw new Error(
        `Exec lifecycle hook (${JSON.stringify(cmd)}) for Container "${target.containerName}" failed - exit code ${exitCode}, message: ${JSON.stringify(output)}`,
      );
    }
    return;
  }
  if (handler.httpGet) {
    const h = handler.httpGet;
    const host = h.host || target.podIP;
    if (!host)
      throw new Error(
        `HTTP lifecycle hook for Container "${target.containerName}" has no host: the pod has no IP`,
      );
    const port = resolvePort(h.port as number | string, target.ports);
    const scheme = (h.scheme ?? 'HTTP').toLowerCase();
    const path = h.path ? (h.path.startsWith('/') ? h.path : `/${h.path}`) : '/';
    const hostPart = host.includes(':') ? `[${host}]` : host;
    let url = new URL(`${scheme}://${hostPart}:${port}${path}`);
    const signal = AbortSignal.timeout(Math.max(1, timeoutSeconds) * 1000);
    let status: number;
    // Redirects are followed while they stay on the hook's host (the kubelet's redirect checker);
    // one that leaves it is the answer.
    for (let hop = 0; ; hop++) {
      const { res } = await httpGet(url, LIFECYCLE_USER_AGENT, h.httpHeaders ?? [], signal);
      status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (status < 300 || status >= 400 || !location || hop >= MAX_REDIRECTS) break;
      const next = new URL(location, url);
      if (next.hostname !== url.hostname) break;
      url = next;
    }
    if (status < 200 || status >= 400) {
      throw new Error(
        `HTTP lifecycle hook (${path}) for Container "${target.containerName}" failed - error: HTTP status ${status}`,
      );
    }
    return;
  }
  if (handler.sleep) {
    const ms = Math.min(handler.sleep.seconds, timeoutSeconds) * 1000;
    await new Promise((r) => setTimeout(r, ms));
    return;
  }
  throw new Error(
    `lifecycle hook for Container "${target.containerName}" has no handler (exec, httpGet or sleep)`,
  );
}
