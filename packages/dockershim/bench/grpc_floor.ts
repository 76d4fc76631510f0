import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type ContainerStatusResponse, type CriServer, serveCri } from '@kh/cri-api';
import { goProgramAt } from '@kh/testkit';

// The gRPC floor of ContainerStatus: what any CRI server written on @kh/cri-api costs a Go client
// for one verbose ContainerStatus, with nothing behind it. A Go program (grpc_floor/main.go, through
// critest's own CRI client) times the call against containerd, the shim and a no-op server that
// answers the shim's own response from memory, interleaved, 2 at once, in the same run.

const execFileAsync = promisify(execFile);

/** The Go program's directory, bench/grpc_floor, from this module's bench/dist/bench/. */
const SOURCE_DIR = fileURLToPath(new URL('../../grpc_floor/', import.meta.url));

/** How the Go client calls: the measured calls per target, in flight at once, and a worker's pause. */
export interface GrpcFloorParams {
  calls: number;
  parallel: number;
  gapMs: number;
}

/** One target's figures from the Go client, in ms. */
export interface GrpcFloorTarget {
  n: number;
  p50: number;
  p99: number;
  responseBytes: number;
  samples: number[];
}

/**
 * The Go client's binary, built by testkit as the images' Go programs are (go-trixie, offline,
 * against cri-tools v1.33's vendored modules, cached by content).
 */
export function grpcFloorClient(progress: (line: string) => void): Promise<string> {
  return goProgramAt(SOURCE_DIR, 'grpc-floor', progress);
}

/**
 * The floor server: serveCri, as the shim serves, with a ContainerStatus handler that answers
 * `response` (the shim's own answer for a critest-like container) from memory, and the Version
 * critest's client asks when it connects.
 */
export function serveNoopStatus(response: ContainerStatusResponse, socketPath: string): Promise<CriServer> {
  const name = 'grpc-floor';
  return serveCri(
    {
      name,
      runtime: {
        version: () => ({
          version: '0.1.0',
          runtimeName: name,
          runtimeVersion: '0',
          runtimeApiVersion: 'v1',
        }),
        containerStatus: () => response,
      },
    },
    { socketPath },
  );
}

/** Runs the Go client once over `targets` (name -> endpoint and container id), interleaved. */
export async function runGrpcFloor(
  client: string,
  targets: Record<string, { endpoint: string; containerId: string }>,
  params: GrpcFloorParams,
): Promise<Record<string, GrpcFloorTarget>> {
  const { stdout } = await execFileAsync(
    client,
    [
      `-calls=${params.calls}`,
      `-parallel=${params.parallel}`,
      `-gap=${params.gapMs}ms`,
      ...Object.entries(targets).map(([name, t]) => `${name}=${t.endpoint}#${t.containerId}`),
    ],
    { maxBuffer: 16 * 1024 * 1024, timeout: 10 * 60_000 },
  );
  return JSON.parse(stdout) as Record<string, GrpcFloorTarget>;
}
