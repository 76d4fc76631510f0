/**
 * The upstream Go crictl v1.26 (grpc-go 1.49, the kubelet's dialer) against serveCri through the
 * fake runtime: a client nobody here wrote. It sends the unix socket path as `:authority`, which
 * Node's HTTP/2 layer refuses unless serveCri rewrites it. Needs `bash scripts/cri-tools.sh`.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { criTools, criToolsDir } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeRuntime } from '../src/fake/fake_runtime.js';
import { ContainerState, PodSandboxState } from '../src/index.js';
import type { ConnectionPath } from '../src/server/h2_opening.js';
import { H2_COMPRESSION_ERROR } from '../src/server/h2_rewriter.js';
import { type CriServer, serveCri } from '../src/server/serve.js';
import { frame, hp, PREFACE, RawClient, request, T } from './h2_helpers.js';
import { tempDir } from './helpers.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let crictlBin: string;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let fake: FakeRuntime;
const IMAGE = 'kubelet-harness/busybox:1';

/** crictl against one endpoint for both services; resolves with its exit code, never rejects. */
function crictl(endpoint: string, ...args: string[]): Promise<Run> {
  const argv = ['--runtime-endpoint', endpoint, '--image-endpoint', endpoint, '--timeout', '10s', ...args];
  return new Promise((resolve) => {
    // These flags win over what a /etc/crictl.yaml on the machine may say.
    execFile(crictlBin, argv, (err, stdout, stderr) => {
      resolve({ code: err ? ((err.code as number | undefined) ?? -1) : 0, stdout, stderr });
    });
  });
}

/** crictl that must succeed; its stdout. */
async function ok(endpoint: string, ...args: string[]): Promise<string> {
  const r = await crictl(endpoint, ...args);
  if (r.code !== 0) throw new Error(`crictl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

beforeAll(async () => {
  // Missing binaries fail every test with criTools()'s set-up message; nothing is skipped.
  crictlBin = (await criTools()).crictl;
  tmp = await tempDir();
  fake = await FakeRuntime.start({ socketPath: tmp.sock() });
  fake.addImage(IMAGE, 4096);
});

afterAll(async () => {
  await fake?.stop();
  await tmp?.remove();
});

describe('crictl v1.26 against the fake runtime over a unix socket', () => {
  it('reads the version and the runtime status', async () => {
    expect(await ok(fake.endpoint, 'version')).toMatch(
      /RuntimeName:\s+fake-cri\nRuntimeVersion:\s+\S+\nRuntimeApiVersion:\s+v1/,
    );
    const info = JSON.parse(await ok(fake.endpoint, 'info'));
    expect(info.status.conditions).toContainEqual(
      expect.objectContaining({ type: 'RuntimeReady', status: true }),
    );
  });

  it('runs a pod and a container through their whole lifecycle', async () => {
    const ep = fake.endpoint;
    const podConfig = path.join(tmp.dir, 'pod.json');
    const ctrConfig = path.join(tmp.dir, 'ctr.json');
    await writeFile(
      podConfig,
      JSON.stringify({
        metadata: { name: 'web', namespace: 'default', uid: 'uid-web', attempt: 0 },
        linux: {},
      }),
    );
    await writeFile(
      ctrConfig,
      JSON.stringify({
        metadata: { name: 'app' },
        image: { image: IMAGE },
        command: ['sleep', '3600'],
        linux: {},
      }),
    );

    const podId = (await ok(ep, 'runp', podConfig)).trim();
    expect(fake.sandboxes().map((s) => s.id)).toEqual([podId]);
    expect(await ok(ep, 'pods')).toMatch(new RegExp(`${podId.slice(0, 13)}.*Ready\\s+web\\s+default`));

    const ctrId = (await ok(ep, 'create', podId, ctrConfig, podConfig)).trim();
    expect(ctrId).toMatch(/^[0-9a-f]{64}$/);
    await ok(ep, 'start', ctrId);
    expect(await ok(ep, 'ps')).toMatch(new RegExp(`${ctrId.slice(0, 13)}.*Running\\s+app`));

    const inspect = JSON.parse(await ok(ep, 'inspect', ctrId));
    expect(inspect.status).toMatchObject({
      id: ctrId,
      state: 'CONTAINER_RUNNING',
      metadata: { name: 'app' },
    });
    const inspectp = JSON.parse(await ok(ep, 'inspectp', podId));
    expect(inspectp.status).toMatchObject({ id: podId, state: 'SANDBOX_READY', metadata: { name: 'web' } });

    await ok(ep, 'stop', ctrId);
    expect(fake.containers()).toEqual([
      expect.objectContaining({ id: ctrId, state: ContainerState.CONTAINER_EXITED }),
    ]);
    await ok(ep, 'rm', ctrId);
    expect(await ok(ep, 'ps', '-a', '-q')).toBe('');

    await ok(ep, 'stopp', podId);
    expect(fake.sandboxes()).toEqual([
      expect.objectContaining({ id: podId, state: PodSandboxState.SANDBOX_NOTREADY }),
    ]);
    await ok(ep, 'rmp', podId);
    expect(await ok(ep, 'pods', '-q')).toBe('');
    expect(fake.calls).toEqual(
      expect.arrayContaining([
        'RunPodSandbox',
        'CreateContainer',
        'StartContainer',
        'StopContainer',
        'RemovePodSandbox',
      ]),
    );
  });

  it('lists images and says clearly that a missing image cannot be pulled', async () => {
    expect(await ok(fake.endpoint, 'images')).toMatch(/docker\.io\/kubelet-harness\/busybox\s+1\s/);
    const pull = await crictl(fake.endpoint, 'pull', 'kubelet-harness/missing:1');
    expect(pull.code).toBe(1);
    expect(pull.stderr).toContain(
      'code = NotFound desc = failed to resolve reference \\"docker.io/kubelet-harness/missing:1\\"',
    );
    expect(pull.stderr).not.toContain('RST_STREAM');
  });
});

describe('how upstream clients reach serveCri', () => {
  it('v1.33 (cri-client names "localhost") natively, v1.26 (the socket path) through the rewriter', async () => {
    const paths: ConnectionPath[] = [];
    const sock = tmp.sock('paths.sock');
    const server = await serveCri(
      {
        name: 'paths',
        runtime: {
          version: () => ({
            version: '0.1.0',
            runtimeName: 'paths',
            runtimeVersion: '1',
            runtimeApiVersion: 'v1',
          }),
        },
      },
      { socketPath: sock, onConnection: (p) => paths.push(p) },
    );
    try {
      const v133 = (await criTools(criToolsDir('1.33.0'))).crictl;
      const run = promisify(execFile);
      const { stdout } = await run(v133, [
        '--runtime-endpoint',
        `unix://${sock}`,
        '--timeout',
        '10s',
        'version',
      ]);
      expect(stdout).toMatch(/RuntimeName:\s+paths/);
      expect(paths).toEqual(['native']);
      expect(await ok(`unix://${sock}`, 'version')).toMatch(/RuntimeName:\s+paths/);
      expect(paths).toEqual(['native', 'rewritten']);
    } finally {
      await server.close();
    }
  });
});

describe('crictl v1.26 against other listeners', () => {
  it('answers over a long socket path in a nested directory', async () => {
    // sun_path holds 107 bytes: fill it, through several directory levels.
    let dir = path.join(tmp.dir, 'run', 'kubelet-harness', 'nested');
    while (dir.length < 107 - 'cri.sock'.length - 1 - 10) dir = path.join(dir, 'deeper');
    const sock = path.join(dir, 'x'.repeat(107 - dir.length - 1 - '.sock'.length) + '.sock');
    expect(sock.length).toBe(107);
    await mkdir(dir, { recursive: true });
    const deep = await FakeRuntime.start({ socketPath: sock });
    try {
      expect(await ok(deep.endpoint, 'version')).toMatch(/RuntimeName:\s+fake-cri/);
    } finally {
      await deep.stop();
    }
  });

  it('closes a connection with a malformed header block with a GOAWAY, reports it, and serves on', async () => {
    const errors: Error[] = [];
    const sock = tmp.sock('strict.sock');
    const server: CriServer = await serveCri(
      {
        name: 'strict',
        runtime: {
          version: () => ({
            version: '0.1.0',
            runtimeName: 'strict',
            runtimeVersion: '1',
            runtimeApiVersion: 'v1',
          }),
        },
      },
      { socketPath: sock, onConnectionError: (e) => errors.push(e) },
    );
    try {
      const bad = new RawClient(sock);
      bad.socket.write(Buffer.concat([PREFACE, frame(T.SETTINGS, 0, 0), request(1, hp.indexed(99))]));
      const goaway = await bad.next((f) => f.type === T.GOAWAY);
      expect(goaway.payload.readUInt32BE(4)).toBe(H2_COMPRESSION_ERROR);
      expect(goaway.payload.subarray(8).toString()).toMatch(
        /stream 1: HPACK: index 99 is outside the tables/,
      );
      await bad.closed;
      expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/index 99/)]);
      expect(await ok(`unix://${sock}`, 'version')).toMatch(/RuntimeName:\s+strict/);
    } finally {
      await server.close();
    }
  });
});
