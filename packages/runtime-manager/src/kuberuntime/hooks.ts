// Lifecycle handlers (postStart, preStop): exec through CRI ExecSync, httpGet against the pod
// IP (or the handler's host), and sleep.
import type { V1ContainerPort, V1LifecycleHandler } from '@kubernetes/client-node';

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
    const url = `${scheme}://${hostPart}:${port}${path}`;
    const headers: Record<string, string> = {};
    for (const hd of h.httpHeaders ?? []) headers[hd.name] = hd.value;
    const res = await fetch(url, {
      headers,
      signal: AbortSignal.timeout(Math.max(1, timeoutSeconds) * 1000),
    });
    await res.arrayBuffer();
    if (res.status < 200 || res.status >= 400) {
      throw new Error(
        `HTTP lifecycle hook (${path}) for Container "${target.containerName}" failed - error: HTTP status ${res.status}`,
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
