import type Dockerode from 'dockerode';
import { describe, expect, it } from 'vitest';
import { RecordingDockerClient, replayRequest, runDockerFloor } from '../bench/docker_floor.js';
import type { ContainerCreateRequest } from '../src/docker/client.js';
import { ContainerType, LabelKeys } from '../src/model/labels.js';

// Docker's floor in the bench replays the shim's own create requests: what it asks of Docker must
// be what the shim asked, but for the name, the labels' keys and the sandbox it runs in.

const SHIM_SANDBOX = 'a'.repeat(64);
const FLOOR_SANDBOX = 'b'.repeat(64);

const containerRequest: ContainerCreateRequest = {
  name: 'k8s_app_pod_ns_uid_0',
  Image: 'busybox',
  Cmd: ['top'],
  Labels: { [LabelKeys.containerType]: ContainerType.container, [LabelKeys.sandboxId]: SHIM_SANDBOX },
  HostConfig: {
    NetworkMode: `container:${SHIM_SANDBOX}`,
    IpcMode: `container:${SHIM_SANDBOX}`,
    PidMode: `container:${SHIM_SANDBOX}`,
    SecurityOpt: ['no-new-privileges'],
    CgroupParent: '/kubepods/besteffort/poduid',
    LogConfig: { Type: 'json-file', Config: { 'max-size': '10m' } },
  },
};

describe("Docker's floor", () => {
  it("replays a shim request with the floor's name, labels and sandbox, and nothing else changed", () => {
    const replayed = replayRequest(containerRequest, 'floor_app_1', { 'kh.run': 'r1' }, FLOOR_SANDBOX);
    expect(replayed).toEqual({
      ...containerRequest,
      name: 'floor_app_1',
      Labels: {
        [`kh.floor/${LabelKeys.containerType}`]: ContainerType.container,
        [`kh.floor/${LabelKeys.sandboxId}`]: FLOOR_SANDBOX,
        'kh.run': 'r1',
      },
      HostConfig: {
        ...containerRequest.HostConfig,
        NetworkMode: `container:${FLOOR_SANDBOX}`,
        IpcMode: `container:${FLOOR_SANDBOX}`,
        PidMode: `container:${FLOOR_SANDBOX}`,
      },
    });
    // Without a sandbox to run in (the pause container's own request), only name and labels change.
    expect(JSON.stringify(replayRequest(containerRequest, 'p', {}))).toContain(`container:${SHIM_SANDBOX}`);
  });

  it("keeps the shim's last create of each kind as it went to the Engine", async () => {
    const sent: unknown[] = [];
    const api = {
      createContainer: async (request: unknown) => {
        sent.push(request);
        return { id: `id${sent.length}` };
      },
    } as unknown as Dockerode;
    const client = new RecordingDockerClient(api);
    const sandbox = { ...containerRequest, Labels: { [LabelKeys.containerType]: ContainerType.sandbox } };
    expect(await client.createContainer(sandbox)).toBe('id1');
    expect(await client.createContainer(containerRequest)).toBe('id2');
    expect(await client.createContainer({ ...containerRequest, Labels: {} })).toBe('id3');
    expect(client.creates).toEqual({
      [ContainerType.sandbox]: sandbox,
      [ContainerType.container]: containerRequest,
    });
    // A copy: what the shim does with its request afterwards does not change the replay.
    expect(client.creates[ContainerType.container]).not.toBe(containerRequest);
  });

  it('refuses to run before the shim made both kinds of create', async () => {
    await expect(
      runDockerFloor(
        {} as Dockerode,
        { [ContainerType.sandbox]: containerRequest },
        { count: 1, parallel: 1 },
        {},
      ),
    ).rejects.toThrow(/has not made both kinds/);
  });
});
