import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type ContainerStatusResponse, type CriServer, serveCri } from '@kh/cri-api';
import { criToolsDir, DEFAULT_CRI_TOOLS_VERSION } from '@kh/testkit';

// The gRPC floor of ContainerStatus: what any CRI server written on @kh/cri-api costs a Go client
// for one verbose ContainerStatus, with nothing behind it. A Go program (grpc_floor/main.go, through
// critest's own CRI client) times the call against containerd, the shim and a no-op server that
// answers the shim's own response from memory, interleaved, 2 at once, in the same run.

const execFileAsync = promisify(execFile);

/** The Go program's directory, bench/grpc_floor, from this module's bench/dist/bench/. */
const SOURCE_DIR = fileURLToPath(new URL('../../grpc_floor/', import.meta.url));
const REPO_ROOT = resolve(SOURCE_DIR, '../../../..');

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
 * The Go client's binary, built once per (cri-tools tarball, Go version, source) with the host's Go
 * and cri-tools v1.26's vendored modules, offline, as scripts/cri-tools.sh builds critest; cached
 * beside crictl and critest, outside the tree.
 */
export async function grpcFloorClient(progress: (line: string) => void): Promise<string> {
  const tarball =
    process.env.KH_CRI_TOOLS_SRC ||
    join(REPO_ROOT, `../shared/tools/cri-tools-${DEFAULT_CRI_TOOLS_VERSION}.tar.gz`);
  const source = await readFile(join(SOURCE_DIR, 'main.go'));
  const { stdout: goVersion } = await execFileAsync('go', ['version']).catch((err: unknown) => {
    throw new Error(`the gRPC floor's client needs Go (apt-get install golang-go): ${String(err)}`);
  });
  const key = createHash('sha256')
    .update(await readFile(tarball))
    .update(goVersion)
    .update(source)
    .digest('hex')
    .slice(0, 12);
  const cacheDir = join(dirname(criToolsDir()), 'go-programs', `grpc-floor-${key}`);
  const binary = join(cacheDir, 'grpc-floor');
  if (
    await access(binary).then(
      () => true,
      () => false,
    )
  )
    return binary;
  progress(`bench: building the gRPC floor's Go client with ${goVersion.trim()} (1-4 min on 2 cores)`);
  const work = await mkdtemp(join(tmpdir(), 'kh-grpc-floor-build-'));
  try {
    await mkdir(cacheDir, { recursive: true });
    // The program joins the extracted cri-tools module, so its vendor directory resolves the imports.
    const build = `tar -C "$1" -xzf "$2" && cd "$1"/cri-tools-* && mkdir cmd/kh-grpc-floor &&
cp "$3"/main.go cmd/kh-grpc-floor/ && go build -ldflags=-s -o "$4" ./cmd/kh-grpc-floor`;
    await execFileAsync('bash', ['-ec', build, 'build', work, tarball, SOURCE_DIR, `${binary}.new`], {
      env: {
        ...process.env,
        GOFLAGS: '-mod=vendor -trimpath',
        GOPROXY: 'off',
        GOTOOLCHAIN: 'local',
        CGO_ENABLED: '0',
        GOCACHE: join(work, 'gocache'),
        GOPATH: join(work, 'gopath'),
      },
      maxBuffer: 16 * 1024 * 1024,
    });
    await rename(`${binary}.new`, binary);
    return binary;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
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
