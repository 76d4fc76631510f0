// POST /checkpoint/{namespace}/{pod}/{container} (the ContainerCheckpoint feature gate): the
// kubelet checks that the pod and the container exist, finds the running container in the
// runtime, and asks CRI CheckpointContainer to write the archive under <root-dir>/checkpoints.
// Answers as the kubelet's: 404 with a plain-text reason for a pod or container it does not know,
// 500 "checkpointing of ns/pod/container failed (...)" for anything the runtime refuses, the
// runtime's UNIMPLEMENTED included, and {"items":["<archive path>"]} on success.
import { mkdir } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { type CriClient, CriError, GrpcStatus } from '@kh/cri-api';
import type { RunningPod } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';

export interface CheckpointDeps {
  /** The pod manager's pods. */
  getPods(): V1Pod[];
  /** Running pods as the runtime reports them (the kubelet's GetPods(false)). */
  runtime: { getPods(all: boolean): Promise<RunningPod[]> };
  cri: Pick<CriClient, 'checkpointContainer'>;
  /** <root-dir>/checkpoints. */
  checkpointsDir: string;
  now?: () => Date;
}

class CheckpointRequestError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export class ContainerCheckpoint {
  constructor(private readonly deps: CheckpointDeps) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const parts = url.pathname.split('/').filter((p) => p !== '');
    if (parts.length !== 4) return plain(res, 404, '404 page not found\n');
    const [namespace, podName, container] = parts.slice(1).map(decodeURIComponent) as [
      string,
      string,
      string,
    ];
    try {
      const location = await this.checkpoint(
        namespace,
        podName,
        container,
        url.searchParams.getAll('timeout'),
      );
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ items: [location] }));
    } catch (e) {
      if (e instanceof CheckpointRequestError) return plain(res, e.code, e.message);
      plain(res, 500, `checkpointing of ${namespace}/${podName}/${container} failed (${goError(e)})`);
    }
  }

  private async checkpoint(namespace: string, podName: string, container: string, timeouts: string[]) {
    const pod = this.deps
      .getPods()
      .find((p) => p.metadata?.namespace === namespace && p.metadata?.name === podName);
    if (!pod) throw new CheckpointRequestError(404, 'pod does not exist');
    const spec = pod.spec;
    const named = [
      ...(spec?.containers ?? []),
      ...(spec?.initContainers ?? []),
      ...(spec?.ephemeralContainers ?? []),
    ];
    if (!named.some((c) => c.name === container))
      throw new CheckpointRequestError(404, `container ${container} does not exist`);
    // The last timeout given wins; the runtime request timeout applies without one.
    let timeout: bigint | undefined;
    const last = timeouts.at(-1);
    if (last !== undefined) {
      if (!/^[+-]?\d+$/.test(last))
        throw new CheckpointRequestError(404, 'cannot parse value of timeout parameter');
      timeout = BigInt(last);
    }
    const running = (await this.deps.runtime.getPods(false)).find((p) =>
      pod.metadata?.uid ? p.uid === pod.metadata.uid : p.name === podName && p.namespace === namespace,
    );
    const found = running?.containers.find((c) => c.name === container);
    if (!found) throw new Error(`container ${container} not found`);
    await mkdir(this.deps.checkpointsDir, { recursive: true, mode: 0o700 });
    const stamp = (this.deps.now ?? (() => new Date()))()
      .toISOString()
      .replace(/\.\d+Z$/, 'Z');
    const location = join(
      this.deps.checkpointsDir,
      `checkpoint-${podName}_${namespace}-${container}-${stamp}.tar`,
    );
    await this.deps.cri.checkpointContainer(
      { containerId: found.id.id, location, ...(timeout !== undefined ? { timeout } : {}) },
      timeout !== undefined && timeout > 0n ? { timeoutMs: Number(timeout) * 1000 } : {},
    );
    return location;
  }
}

/** A CRI failure as a Go client prints it (status.Error), which is what the kubelet's message carries. */
function goError(e: unknown): string {
  if (!(e instanceof CriError)) return (e as Error).message;
  return `rpc error: code = ${GO_CODE_NAMES[e.code] ?? e.codeName} desc = ${e.details}`;
}

const GO_CODE_NAMES: Partial<Record<GrpcStatus, string>> = {
  [GrpcStatus.CANCELLED]: 'Canceled',
  [GrpcStatus.UNKNOWN]: 'Unknown',
  [GrpcStatus.INVALID_ARGUMENT]: 'InvalidArgument',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [GrpcStatus.NOT_FOUND]: 'NotFound',
  [GrpcStatus.ALREADY_EXISTS]: 'AlreadyExists',
  [GrpcStatus.PERMISSION_DENIED]: 'PermissionDenied',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'ResourceExhausted',
  [GrpcStatus.FAILED_PRECONDITION]: 'FailedPrecondition',
  [GrpcStatus.ABORTED]: 'Aborted',
  [GrpcStatus.OUT_OF_RANGE]: 'OutOfRange',
  [GrpcStatus.UNIMPLEMENTED]: 'Unimplemented',
  [GrpcStatus.INTERNAL]: 'Internal',
  [GrpcStatus.UNAVAILABLE]: 'Unavailable',
  [GrpcStatus.DATA_LOSS]: 'DataLoss',
  [GrpcStatus.UNAUTHENTICATED]: 'Unauthenticated',
};

function plain(res: ServerResponse, code: number, body: string): void {
  res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8' }).end(body);
}
