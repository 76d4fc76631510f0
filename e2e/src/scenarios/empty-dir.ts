import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1EmptyDirVolumeSource, V1Pod } from '@kubernetes/client-node';
import { limiter } from '../support/concurrent.js';
import { MOUNTTEST_CONTENT, type MounttestFlags, mounttest } from '../support/mounttest.js';
import {
  createPod,
  execShellInContainer,
  INFINITE_SLEEP,
  podFor,
  sh,
  testContainerOutput,
  waitForRunning,
} from '../support/pods.js';

// Upstream's empty_dir.go (test/e2e/common/storage) as named cases, each with its own pod and
// upstream's expectations: the volume's mode and fs type, files created with a mode as root and
// as uid 1001 on the node's disk and on tmpfs (medium Memory), fsGroup ownership, a sub-path of
// an fsGroup volume, a volume shared by two containers, and a tmpfs sized to its sizeLimit.
const FILE = 'test/e2e/common/storage/empty_dir.go';
const DESCRIBE = 'EmptyDir volumes';
const FS_GROUP = `${DESCRIBE} when FSGroup is specified [LinuxOnly]`;

const NODE_CONFORMANCE = ['NodeConformance'];
const CONFORMANCE = ['NodeConformance', 'Conformance'];

/** Upstream's names, paths and non-root user. */
const VOLUME_PATH = '/test-volume';
const TEST_FILE = `${VOLUME_PATH}/test-file`;
const CONTAINER = 'test-container';
const VOLUME = 'test-volume';
const NON_ROOT_UID = 1001;

type Medium = 'tmpfs' | 'default';
type Limit = <T>(task: () => Promise<T>) => Promise<T>;
type Case = ScenarioCase<Limit>;

const source = (medium: Medium): V1EmptyDirVolumeSource => (medium === 'tmpfs' ? { medium: 'Memory' } : {});

/**
 * testPodWithVolume: one mounttest container with the emptyDir at /test-volume, run as `uid`
 * unless it is 0 (the image's root), SELinux level s0 (nothing here enforces SELinux).
 */
function testPodWithVolume(
  ctx: ScenarioContext,
  name: string,
  uid: number,
  medium: Medium,
  flags: MounttestFlags,
  opts: { fsGroup?: number; subPath?: string } = {},
): V1Pod {
  return podFor(ctx, name, {
    restartPolicy: 'Never',
    securityContext: {
      seLinuxOptions: { level: 's0' },
      ...(uid !== 0 ? { runAsUser: uid } : {}),
      ...(opts.fsGroup !== undefined ? { fsGroup: opts.fsGroup } : {}),
    },
    containers: [
      sh(ctx, CONTAINER, mounttest(flags), {
        volumeMounts: [
          { name: VOLUME, mountPath: VOLUME_PATH, ...(opts.subPath ? { subPath: opts.subPath } : {}) },
        ],
      }),
    ],
    volumes: [{ name: VOLUME, emptyDir: source(medium) }],
  });
}

/** Upstream adds the mount type line only for tmpfs: the default medium is whatever the node's disk is. */
const withFsType = (medium: Medium, lines: string[]) =>
  medium === 'tmpfs' ? [...lines, `mount type of "${VOLUME_PATH}": tmpfs`] : lines;

const perms = (path: string, mode: string) => `perms of file "${path}": ${mode}`;
const content = `content of file "${TEST_FILE}": ${MOUNTTEST_CONTENT}`;
const who = (uid: number) => (uid === 0 ? 'root' : 'non-root');

/** One pod, its output checked, under the cell's limit on pods at once. */
const outputCase = (
  name: string,
  tags: readonly string[],
  pod: (ctx: ScenarioContext) => V1Pod,
  lines: string[],
): Case => ({
  file: FILE,
  name,
  tags,
  run: (ctx, limit) => limit(() => testContainerOutput(ctx, pod(ctx), CONTAINER, lines)),
});

/** doTestVolumeMode: the volume's root is rwxrwxrwx (and tmpfs on medium Memory). */
const volumeModeCase = (medium: Medium): Case =>
  outputCase(
    `${DESCRIBE} volume on ${medium === 'tmpfs' ? 'tmpfs' : 'default medium'} should have the correct mode [LinuxOnly]`,
    CONFORMANCE,
    (ctx) =>
      testPodWithVolume(ctx, `emptydir-mode-${medium}`, 0, medium, {
        fsType: VOLUME_PATH,
        filePerm: VOLUME_PATH,
      }),
    withFsType(medium, [perms(VOLUME_PATH, '-rwxrwxrwx')]),
  );

const NEW_FILE_FLAG = { '0644': 'newFile0644', '0666': 'newFile0666', '0777': 'newFile0777' } as const;
const NEW_FILE_PERMS = { '0644': '-rw-r--r--', '0666': '-rw-rw-rw-', '0777': '-rwxrwxrwx' } as const;

/** doTest0644, doTest0666, doTest0777: a new file with that mode, read back. */
const newFileCase = (uid: number, mode: keyof typeof NEW_FILE_FLAG, medium: Medium): Case =>
  outputCase(
    `${DESCRIBE} should support (${who(uid)},${mode},${medium}) [LinuxOnly]`,
    CONFORMANCE,
    (ctx) =>
      testPodWithVolume(ctx, `emptydir-${who(uid)}-${mode}-${medium}`, uid, medium, {
        fsType: VOLUME_PATH,
        [NEW_FILE_FLAG[mode]]: TEST_FILE,
        filePerm: TEST_FILE,
      }),
    withFsType(medium, [perms(TEST_FILE, NEW_FILE_PERMS[mode]), content]),
  );

/** doTestSetgidFSGroup: a new 0660 file belongs to the fsGroup (the volume's root is setgid). */
const setgidCase = (uid: number): Case =>
  outputCase(
    `${FS_GROUP} new files should be created with FSGroup ownership when container is ${who(uid)}`,
    NODE_CONFORMANCE,
    (ctx) =>
      testPodWithVolume(
        ctx,
        `emptydir-fsgroup-setgid-${who(uid)}`,
        uid,
        'tmpfs',
        { fsType: VOLUME_PATH, newFile0660: TEST_FILE, filePerm: TEST_FILE, fileOwner: TEST_FILE },
        { fsGroup: 123 },
      ),
    withFsType('tmpfs', [perms(TEST_FILE, '-rw-rw----'), content, `owner GID of "${TEST_FILE}": 123`]),
  );

const CASES: Case[] = [
  setgidCase(0),
  setgidCase(NON_ROOT_UID),
  // doTestSubPathFSGroup: the kubelet creates the missing sub-path with the volume root's mode:
  // tmpfs's sticky 1777 plus the fsGroup's setgid, owned by root and the fsGroup.
  outputCase(
    `${FS_GROUP} nonexistent volume subPath should have the correct mode and owner using FSGroup`,
    NODE_CONFORMANCE,
    (ctx) =>
      testPodWithVolume(
        ctx,
        'emptydir-fsgroup-subpath',
        NON_ROOT_UID,
        'tmpfs',
        { fsType: VOLUME_PATH, filePerm: VOLUME_PATH, fileOwner: VOLUME_PATH, fileMode: VOLUME_PATH },
        { fsGroup: 123, subPath: 'test-sub' },
      ),
    withFsType('tmpfs', [
      perms(VOLUME_PATH, '-rwxrwxrwx'),
      `owner UID of "${VOLUME_PATH}": 0`,
      `owner GID of "${VOLUME_PATH}": 123`,
      `mode of file "${VOLUME_PATH}": dgtrwxrwxrwx`,
    ]),
  ),
  // doTest0644FSGroup
  outputCase(
    `${FS_GROUP} files with FSGroup ownership should support (root,0644,tmpfs)`,
    NODE_CONFORMANCE,
    (ctx) =>
      testPodWithVolume(
        ctx,
        'emptydir-fsgroup-0644',
        0,
        'tmpfs',
        { fsType: VOLUME_PATH, newFile0644: TEST_FILE, filePerm: TEST_FILE },
        { fsGroup: 123 },
      ),
    withFsType('tmpfs', [perms(TEST_FILE, '-rw-r--r--'), content]),
  ),
  // doTestVolumeModeFSGroup, on both media
  ...(['default', 'tmpfs'] as const).map((medium) =>
    outputCase(
      `${FS_GROUP} volume on ${medium === 'tmpfs' ? 'tmpfs' : 'default medium'} should have the correct mode using FSGroup`,
      NODE_CONFORMANCE,
      (ctx) =>
        testPodWithVolume(
          ctx,
          `emptydir-fsgroup-mode-${medium}`,
          0,
          medium,
          { fsType: VOLUME_PATH, filePerm: VOLUME_PATH },
          { fsGroup: 1001 },
        ),
      withFsType(medium, [perms(VOLUME_PATH, '-rwxrwxrwx')]),
    ),
  ),
  ...(['tmpfs', 'default'] as const).flatMap((medium) => [
    volumeModeCase(medium),
    ...[0, NON_ROOT_UID].flatMap((uid) =>
      (['0644', '0666', '0777'] as const).map((mode) => newFileCase(uid, mode, medium)),
    ),
  ]),
  {
    file: FILE,
    name: `${DESCRIBE} pod should support shared volumes between containers`,
    tags: ['Conformance'],
    run: (ctx, limit) => limit(() => sharedVolumes(ctx)),
  },
  {
    file: FILE,
    name: `${DESCRIBE} pod should support memory backed volumes of specified size`,
    tags: NODE_CONFORMANCE,
    run: (ctx, limit) => limit(() => memoryBackedSize(ctx)),
  },
];

const MAIN = 'busybox-main-container';
const MAIN_MOUNT = '/usr/share/volumeshare';

/** The sub container writes into the shared emptyDir; the main one reads it at its own mount path. */
async function sharedVolumes(ctx: ScenarioContext) {
  const name = 'pod-sharedvolume';
  const message = 'Hello from the busy-box sub-container';
  await createPod(
    ctx,
    podFor(ctx, name, {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 0,
      volumes: [{ name: 'shared-data', emptyDir: {} }],
      containers: [
        sh(ctx, MAIN, INFINITE_SLEEP, { volumeMounts: [{ name: 'shared-data', mountPath: MAIN_MOUNT }] }),
        sh(ctx, 'busybox-sub-container', `echo ${message} > /pod-data/shareddata.txt`, {
          volumeMounts: [{ name: 'shared-data', mountPath: '/pod-data' }],
        }),
      ],
    }),
  );
  await waitForRunning(ctx, name);
  const got = await execShellInContainer(ctx, name, MAIN, `cat ${MAIN_MOUNT}/shareddata.txt`);
  ctx.check.equal(`pod ${name}: the main container reads what the sub container wrote`, got, message);
}

/** A medium Memory emptyDir with sizeLimit 10Mi is a tmpfs of 10240 1K-blocks. */
async function memoryBackedSize(ctx: ScenarioContext) {
  const name = 'pod-size-memory-volume';
  await createPod(
    ctx,
    podFor(ctx, name, {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 0,
      volumes: [{ name: 'shared-data', emptyDir: { medium: 'Memory', sizeLimit: '10Mi' } }],
      containers: [
        sh(ctx, MAIN, INFINITE_SLEEP, { volumeMounts: [{ name: 'shared-data', mountPath: MAIN_MOUNT }] }),
      ],
    }),
  );
  await waitForRunning(ctx, name);
  const got = await execShellInContainer(ctx, name, MAIN, `df | grep ${MAIN_MOUNT} | awk '{print $2}'`);
  ctx.check.equal(`pod ${name}: df shows the volume's size in 1K blocks`, got, '10240');
}

/** Pods of the cell at once: 24 busybox pods all together crowd a 2-core host. */
const PODS_AT_ONCE = 8;

export const emptyDir: CasesScenario<Limit> = {
  name: 'empty-dir',
  estimateMs: 60_000,
  isolation: 'namespace',
  description:
    "empty_dir.go cases: emptyDir modes, new files' modes and content as root and uid 1001 on the default medium and tmpfs, fsGroup ownership and a sub-path's mode, a volume shared by two containers, a tmpfs sized by sizeLimit",
  needs: ['real-containers'],
  // Room for upstream's 5 min pod waits (PodStart) with the cases queued PODS_AT_ONCE at a time.
  timeoutMs: 600_000,
  setup: async () => limiter(PODS_AT_ONCE),
  cases: CASES,
};
