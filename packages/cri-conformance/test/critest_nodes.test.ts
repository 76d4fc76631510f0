import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { withRuntimeLog } from '../src/critest/nodes.js';
import { critestNodesMain } from '../src/critest/nodes-cli.js';
import {
  type CritestSite,
  cliInNode,
  conformanceCli,
  critestAt,
  dockershimCli,
  dockershimCommand,
  formatNodeRun,
  type NodeCritestRun,
} from '../src/index.js';

// The parts of `critest-nodes` that start nothing: the dockershim's argv in a node, the checkout it
// runs from, critest at a site of its own (here a fake critest writing a report), the header of
// the table, and the command's refusals before it starts any node.

describe('the dockershim in a node', () => {
  const node = {
    criEndpointInNode: 'unix:///run/kh/dockershim.sock',
    runtimeEndpointInNode: 'unix:///run/kh/docker.sock',
  };

  it('listens on the node CRI endpoint, drives the node dockerd, and gets the extra flags last', () => {
    expect(
      dockershimCommand(node, {
        cliInNode: '/opt/kh/packages/dockershim/dist/cli.js',
        pauseImage: 'kubelet-harness/pause:1',
        shimArgs: ['--network-plugin=docker'],
      }),
    ).toEqual([
      '/usr/local/bin/node',
      '/opt/kh/packages/dockershim/dist/cli.js',
      '--listen=unix:///run/kh/dockershim.sock',
      '--docker-endpoint=unix:///run/kh/docker.sock',
      '--pod-infra-container-image=kubelet-harness/pause:1',
      '--restrict-oom-score-adj',
      '--network-plugin=docker',
    ]);
  });

  it('runs from the checkout that holds the built dockershim and its dependencies', () => {
    const { root, cli } = dockershimCli();
    expect(cli.startsWith(`${root}/`)).toBe(true);
    expect(existsSync(cli)).toBe(true);
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces).toBeDefined();
    expect(existsSync(join(root, 'node_modules/@grpc/grpc-js'))).toBe(true);
  });
});

describe('our commands in a node', () => {
  it('run from one checkout, mounted at one place in every node', () => {
    const suite = conformanceCli();
    expect(suite.root).toBe(dockershimCli().root);
    expect(existsSync(suite.cli)).toBe(true);
    expect(cliInNode(suite)).toBe('/opt/kh/packages/cri-conformance/dist/cli.js');
    expect(cliInNode(dockershimCli())).toBe('/opt/kh/packages/dockershim/dist/cli.js');
  });
});

describe('critest at a site', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-critest-site-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const spec = (text: string, state: string, message?: string) => ({
    ContainerHierarchyTexts: ['[k8s.io] Streaming'],
    LeafNodeType: 'It',
    LeafNodeText: text,
    State: state,
    RunTime: 2_000_000,
    ...(message ? { Failure: { Message: message } } : {}),
  });

  it('dials the endpoint as critest sees it, with paths as critest sees them, and reads the report here', async () => {
    let argv: string[] = [];
    const site: CritestSite = {
      endpoint: 'unix:///run/kh/containerd.sock',
      dir: { local: dir, critest: '/run/kh/critest-x' },
      run: async (args) => {
        argv = args;
        await writeFile(
          join(dir, 'report.json'),
          JSON.stringify([
            {
              SuiteSucceeded: false,
              SpecialSuiteFailureReasons: null,
              SpecReports: [spec('attach', 'passed'), spec('exec', 'failed', 'rpc error: code = Unknown')],
            },
          ]),
        );
        return { code: 1, output: 'critest version: 1.33.0\n' };
      },
    };
    const progress = vi.fn();
    const result = await critestAt(
      site,
      { name: 'containerd', version: 'v1.7.24' },
      {
        images: {
          busybox: 'docker.io/kubelet-harness/busybox:1',
          httpd: 'docker.io/kubelet-harness/httpd:1',
        },
        progress,
      },
    );
    expect(argv.slice(0, 4)).toEqual([
      '--runtime-endpoint=unix:///run/kh/containerd.sock',
      '--image-endpoint=unix:///run/kh/containerd.sock',
      '--test-images-file=/run/kh/critest-x/images.yaml',
      '--ginkgo.json-report=/run/kh/critest-x/report.json',
    ]);
    expect(await readFile(join(dir, 'images.yaml'), 'utf8')).toContain(
      'defaultTestContainerImage: "docker.io/kubelet-harness/busybox:1"',
    );
    expect(result).toMatchObject({
      endpoint: 'unix:///run/kh/containerd.sock',
      runtime: { name: 'containerd', version: 'v1.7.24' },
      critestVersion: '1.33.0',
      totals: { passed: 1, failed: 1, skipped: 0 },
    });
    expect(progress).toHaveBeenLastCalledWith(
      expect.stringMatching(/^critest on containerd: 1 passed, 1 failed/),
    );
  });

  it('a critest that wrote no report fails with the end of its output', async () => {
    const empty = await mkdtemp(join(dir, 'no-report-'));
    const site: CritestSite = {
      endpoint: 'unix:///x.sock',
      dir: { local: empty, critest: '/x' },
      run: async () => ({ code: 2, output: 'flag provided but not defined: -ginkgo.json-report\n' }),
    };
    await expect(
      critestAt(site, { name: 'docker', version: '26.1.5' }, { images: { busybox: 'b', httpd: 'h' } }),
    ).rejects.toThrow(
      'critest wrote no report (exit 2):\nflag provided but not defined: -ginkgo.json-report',
    );
  });
});

describe("the runtime's log for troubled specs", () => {
  const id = 'd'.repeat(64);
  const other = 'e'.repeat(64);
  const specs = [
    { id: 'failed', status: 'failed' as const, durationMs: 1, objectIds: [id] },
    { id: 'flaky', status: 'passed' as const, durationMs: 1, attempts: 2, objectIds: [other] },
    { id: 'fine', status: 'passed' as const, durationMs: 1, objectIds: [id] },
  ];
  const log = `level=info msg="Container failed to exit within 1m0s of signal 15 - using the force" container=${id}\nlevel=info msg="stopped" container=${other}`;

  it("adds the node's log lines about a failed or flaky spec's objects, and reads the log only then", async () => {
    const node = { logs: vi.fn(async () => log) };
    const [failed, flaky, fine] = await withRuntimeLog(node, specs);
    expect(failed?.runtimeLog).toEqual([
      `level=info msg="Container failed to exit within 1m0s of signal 15 - using the force" container=${id}`,
    ]);
    expect(flaky?.runtimeLog).toEqual([`level=info msg="stopped" container=${other}`]);
    expect(fine).not.toHaveProperty('runtimeLog');
    const quiet = { logs: vi.fn(async () => log) };
    expect(await withRuntimeLog(quiet, [specs[2]!])).toEqual([specs[2]]);
    expect(quiet.logs).not.toHaveBeenCalled();
  });
});

describe('the run header', () => {
  it('names the release, the node image packages, the critest version and the shim flags', () => {
    const run = {
      release: 'forky',
      nodeImage: {
        ref: 'kubelet-harness/node-forky:abc',
        release: 'forky',
        packages: { containerd: '2.1.9~ds1-1' },
      },
      critest: '/var/cache/kubelet-harness/cri-tools-1.33.0/critest',
      shimArgs: ['--network-plugin=docker'],
      results: [{ critestVersion: '1.33.0' }, { critestVersion: '1.33.0' }],
    } as unknown as NodeCritestRun;
    expect(formatNodeRun(run)).toBe(
      'Debian forky node image kubelet-harness/node-forky:abc: containerd 2.1.9~ds1-1\n' +
        'critest 1.33.0 (/var/cache/kubelet-harness/cri-tools-1.33.0/critest); dockershim --network-plugin=docker',
    );
  });
});

describe('cri-conformance critest-nodes', () => {
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  afterAll(() => stderr.mockRestore());

  it.each([
    [['--release', 'buster'], /unknown --release buster/],
    [['--side', 'cri-o'], /unknown --side cri-o/],
    [['--timeout', '0'], /--timeout must be a positive number/],
    [['--flake-attempts', '0'], /--flake-attempts must be a whole number of at least 1/],
  ])('refuses %j before it starts anything (exit 2)', async (args, message) => {
    stderr.mockClear();
    expect(await critestNodesMain(args)).toBe(2);
    expect(String(stderr.mock.calls[0]?.[0])).toMatch(message);
  });
});
