import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import { MOUNTTEST_CONTENT, type MounttestFlags, mounttest } from '../support/mounttest.js';
import { podFor, sh, testContainerOutput } from '../support/pods.js';

// Upstream's host_path.go (test/e2e/common/storage) as named cases: the node's /tmp as a hostPath
// volume shows its sticky mode, a file one container writes the other reads, and through a
// sub-path the kubelet creates. Upstream's BeforeEach removes /tmp/test-file where the test runs,
// not on the node; here every file is written fresh by the case that reads it.
const FILE = 'test/e2e/common/storage/host_path.go';
const DESCRIBE = 'HostPath';
const TAGS = ['NodeConformance'];

const VOLUME_PATH = '/test-volume';
const VOLUME = 'test-volume';
/** Upstream's reader retries for 180 s. */
const RETRY_S = 180;

/**
 * testPodWithHostVol: two mounttest containers, test-container-1 and test-container-2, each with
 * the node's /tmp at /test-volume (container 1's through `subPath` when given); a container
 * without flags prints nothing and succeeds.
 */
function testPodWithHostVol(
  ctx: ScenarioContext,
  name: string,
  privileged: boolean,
  flags: [MounttestFlags, MounttestFlags],
  subPath?: string,
): V1Pod {
  const container = (i: 0 | 1) =>
    sh(ctx, `test-container-${i + 1}`, mounttest(flags[i]), {
      securityContext: { privileged },
      volumeMounts: [{ name: VOLUME, mountPath: VOLUME_PATH, ...(i === 0 && subPath ? { subPath } : {}) }],
    });
  return podFor(ctx, name, {
    restartPolicy: 'Never',
    containers: [container(0), container(1)],
    volumes: [{ name: VOLUME, hostPath: { path: '/tmp' } }],
  });
}

const content = (path: string) => `content of file "${path}": ${MOUNTTEST_CONTENT}`;

const CASES: ScenarioCase[] = [
  {
    file: FILE,
    name: `${DESCRIBE} should give a volume the correct mode [LinuxOnly]`,
    tags: TAGS,
    run: (ctx) =>
      testContainerOutput(
        ctx,
        testPodWithHostVol(ctx, 'pod-host-path-mode', false, [
          { fsType: VOLUME_PATH, fileMode: VOLUME_PATH },
          {},
        ]),
        'test-container-1',
        // Upstream's regexp: the directory has the sticky bit (and maybe setgid).
        [/mode of file "\/test-volume": dg?trwxrwx/],
      ),
  },
  {
    file: FILE,
    name: `${DESCRIBE} should support r/w`,
    tags: TAGS,
    run: (ctx) => {
      const file = `${VOLUME_PATH}/test-file`;
      return testContainerOutput(
        ctx,
        testPodWithHostVol(ctx, 'pod-host-path-rw', true, [
          { newFile0644: file, fileMode: file },
          { fileContentInLoop: file, retryTime: RETRY_S },
        ]),
        'test-container-2',
        [content(file)],
      );
    },
  },
  {
    file: FILE,
    name: `${DESCRIBE} should support subPath`,
    tags: TAGS,
    run: (ctx) => {
      // Container 1 writes test-file at its sub-path's root; container 2 reads it under the sub-path.
      const inWriter = `${VOLUME_PATH}/test-file`;
      const inReader = `${VOLUME_PATH}/sub-path/test-file`;
      return testContainerOutput(
        ctx,
        testPodWithHostVol(
          ctx,
          'pod-host-path-subpath',
          true,
          [
            { newFile0644: inWriter, fileMode: inWriter },
            { fileContentInLoop: inReader, retryTime: RETRY_S },
          ],
          'sub-path',
        ),
        'test-container-2',
        [content(inReader)],
      );
    },
  },
];

export const hostPath: CasesScenario = {
  name: 'host-path',
  estimateMs: 20_000,
  isolation: 'namespace',
  description:
    "host_path.go cases: the node's /tmp as a hostPath volume has the sticky bit, a file one container writes the other reads, also through a sub-path",
  needs: ['real-containers'],
  // Room past upstream's 5 min wait for each pod's output (PodStart).
  timeoutMs: 420_000,
  cases: CASES,
};
