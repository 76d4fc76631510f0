#!/usr/bin/env node
// The dockershim's tests, the real-engine suite (test/*.int.test.ts) among them, run inside a
// kind-style node container next to the node's dockerd, as the shim runs in a node: same pid,
// mount and network namespaces, so exec kills, port-forward dialers, CNI and bind mounts are what
// production sees. The host engine only runs the node. KH_NODE_RELEASE (bookworm | trixie | forky, default trixie) chooses
// the Debian release, and with it the Docker version under test.
//   node scripts/test-in-node.mjs [vitest args, e.g. test/lifecycle.int.test.ts]
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  criToolsDir,
  ensureImages,
  NODE_BINARY_IN_NODE,
  NodeContainer,
  nodeImageName,
  nodeReleaseFromEnv,
} from '@kh/testkit';

let release;
try {
  release = nodeReleaseFromEnv();
} catch (err) {
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
}
// The repository at the same path inside the node, so that vitest, its cache and every path a
// test prints are the host's.
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const progress = (line) => process.stderr.write(`${line}\n`);

const image = nodeImageName(release);
const refs = await ensureImages([image, 'pause', 'busybox', 'httpd'], { progress });
const tools = criToolsDir();
const node = await new NodeContainer(refs[image])
  .withRuntime('docker')
  .withHostNode()
  .withBindMounts([
    { source: REPO, target: REPO, mode: 'rw' },
    ...(existsSync(tools) ? [{ source: tools, target: tools, mode: 'ro' }] : []),
  ])
  // A host device or two for security.int's privileged pods, which must get every device of the
  // node (a kind node, privileged, has them all; ours gets these).
  .withDevices(['/dev/fuse', '/dev/loop-control'].filter((d) => existsSync(d)))
  .withImages(refs.pause, refs.busybox, refs.httpd)
  .withProgress(progress)
  .start();
let code = 1;
try {
  const version = (await node.execOk(['docker', 'version', '--format', '{{.Server.Version}}'])).trim();
  progress(`dockershim real-engine suite: Docker ${version} in node ${node.name} (Debian ${release})`);
  const env = {
    // The node's dockerd, for the shim under test and for the tests' own checks.
    DOCKER_HOST: node.runtimeEndpointInNode,
    KH_TEST_IMAGES: JSON.stringify({ pause: refs.pause, busybox: refs.busybox, httpd: refs.httpd }),
    KH_IN_NODE: release,
    KH_CRI_TOOLS_DIR: tools,
    // fuzz.int's case count (README), when the caller chose one.
    ...(process.env.KH_FUZZ_RUNS ? { KH_FUZZ_RUNS: process.env.KH_FUZZ_RUNS } : {}),
    TESTCONTAINERS_RYUK_DISABLED: 'true',
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: '/root',
  };
  const argv = [
    'docker',
    'exec',
    '-w',
    PACKAGE,
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    node.id,
    NODE_BINARY_IN_NODE,
    `${REPO}/node_modules/vitest/vitest.mjs`,
    'run',
    '--reporter=default',
    '--reporter=json',
    '--outputFile.json=.reports/vitest.json',
    ...process.argv.slice(2),
  ];
  code = await new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
} finally {
  await node.stop();
}
process.exit(code);
