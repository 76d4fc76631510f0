import { InvalidArgumentError } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import {
  containerMetadataFrom,
  createdAtFrom,
  LabelKeys,
  labelFilters,
  makeDockerLabels,
  sandboxMetadataFrom,
  splitDockerLabels,
} from '../src/model/labels.js';
import {
  makeContainerName,
  makeSandboxName,
  parseContainerName,
  parseSandboxName,
} from '../src/model/naming.js';

const pod = { name: 'web', namespace: 'default', uid: 'u-1', attempt: 2 };

describe('naming', () => {
  it('builds dockershim-style names', () => {
    expect(makeSandboxName(pod)).toBe('k8s_POD_web_default_u-1_2');
    expect(makeContainerName(pod, { name: 'nginx', attempt: 3 })).toBe('k8s_nginx_web_default_u-1_3');
  });

  it('parses names back, with or without the leading slash Docker adds', () => {
    expect(parseSandboxName('/k8s_POD_web_default_u-1_2')).toEqual(pod);
    expect(parseContainerName('k8s_nginx_web_default_u-1_3')).toEqual({ name: 'nginx', attempt: 3 });
  });

  it('rejects names it did not make', () => {
    expect(() => parseSandboxName('/some_container')).toThrow(/not a kubernetes-managed name/);
    expect(() => parseContainerName('k8s_a_b_c_d_x')).toThrow(/bad attempt/);
  });
});

describe('labels', () => {
  const docker = makeDockerLabels({
    labels: { app: 'web', 'io.kubernetes.pod.name': 'web' },
    annotations: { 'kubernetes.io/config.seen': 'now' },
    standard: { 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.uid': 'u-1' },
    internal: { [LabelKeys.containerType]: 'podsandbox', [LabelKeys.metadata]: JSON.stringify(pod) },
  });

  it('stores annotations under a prefix and adds missing standard labels', () => {
    expect(docker['annotation.kubernetes.io/config.seen']).toBe('now');
    expect(docker['io.kubernetes.pod.uid']).toBe('u-1');
    expect(JSON.parse(docker[LabelKeys.labelKeys] ?? '')).toEqual(['app', 'io.kubernetes.pod.name']);
  });

  it('gives back exactly the labels and annotations the client set', () => {
    // Docker adds the image's own LABELs to the container's labels: they are not CRI labels.
    expect(splitDockerLabels({ ...docker, 'org.opencontainers.image.title': 'busybox' })).toEqual({
      labels: { app: 'web', 'io.kubernetes.pod.name': 'web' },
      annotations: { 'kubernetes.io/config.seen': 'now' },
    });
  });

  it('rejects client labels that would collide with the shim’s own', () => {
    const input = { annotations: {}, standard: {}, internal: {} };
    expect(() => makeDockerLabels({ ...input, labels: { [LabelKeys.sandboxId]: 'x' } })).toThrow(
      InvalidArgumentError,
    );
    expect(() => makeDockerLabels({ ...input, labels: { 'annotation.x': 'y' } })).toThrow(/reserved/);
  });

  it('rebuilds metadata from the label, falling back to the docker name', () => {
    expect(sandboxMetadataFrom(docker, '/ignored')).toEqual(pod);
    expect(sandboxMetadataFrom({}, '/k8s_POD_a_b_c_1')).toEqual({
      name: 'a',
      namespace: 'b',
      uid: 'c',
      attempt: 1,
    });
    expect(containerMetadataFrom({ [LabelKeys.metadata]: '{"name":"c","attempt":4}' }, '')).toEqual({
      name: 'c',
      attempt: 4,
    });
  });

  it('prefers the ns creation label over Docker’s coarse time', () => {
    expect(createdAtFrom({ [LabelKeys.createdAt]: '1795389300549748851' }, 5n)).toBe(1795389300549748851n);
    expect(createdAtFrom({}, 5n)).toBe(5n);
  });

  it('turns a label selector into Docker label filters', () => {
    expect(labelFilters('container', { app: 'web' })).toEqual([
      'io.kubernetes.docker.type=container',
      'app=web',
    ]);
  });
});
