import { describe, expect, it } from 'vitest';
import { fnv32a, hashContainer } from '../../src/kuberuntime/hash.js';
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  getPodSandboxInfoFromLabels,
  newContainerAnnotations,
  newContainerLabels,
  newPodLabels,
} from '../../src/kuberuntime/labels.js';
import { c, pod } from './helpers.js';

describe('container hash', () => {
  it('is FNV-1a 32', () => {
    // Reference values of the FNV-1a 32-bit function.
    expect(fnv32a('')).toBe(0x811c9dc5);
    expect(fnv32a('a')).toBe(0xe40c292c);
    expect(fnv32a('foobar')).toBe(0xbf9cf968);
  });
  it('changes with the image and name, not with other fields', () => {
    const base = hashContainer(c('a'));
    expect(hashContainer(c('a', { image: 'busybox:2' }))).not.toBe(base);
    expect(hashContainer(c('b'))).not.toBe(base);
    expect(hashContainer(c('a', { command: ['sh'], terminationMessagePath: '/x' }))).toBe(base);
  });
});

describe('labels and annotations', () => {
  const p = pod(
    { containers: [], restartPolicy: 'Always' },
    { labels: { app: 'web', 'io.kubernetes.pod.uid': 'spoof' }, deletionGracePeriodSeconds: 7 },
  );
  p.spec!.terminationGracePeriodSeconds = 45;
  const container = c('web', {
    ports: [{ containerPort: 80, name: 'http' }],
    lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo bye'] } } },
    terminationMessagePolicy: 'FallbackToLogsOnError',
  });

  it('sandbox labels keep pod labels but identity labels win', () => {
    const l = newPodLabels(p);
    expect(l).toMatchObject({ app: 'web', 'io.kubernetes.pod.uid': 'uid-1', 'io.kubernetes.pod.name': 'p' });
    expect(getPodSandboxInfoFromLabels(l)).toEqual({
      podName: 'p',
      podNamespace: 'ns',
      podUid: 'uid-1',
      labels: { app: 'web' },
    });
  });

  it('round-trips everything needed to stop or restart a container without its pod', () => {
    const labels = newContainerLabels(container, p);
    expect(labels).toEqual({
      'io.kubernetes.pod.name': 'p',
      'io.kubernetes.pod.namespace': 'ns',
      'io.kubernetes.pod.uid': 'uid-1',
      'io.kubernetes.container.name': 'web',
    });
    expect(getContainerInfoFromLabels(labels).containerName).toBe('web');
    const ann = newContainerAnnotations(container, p, 3);
    expect(ann['io.kubernetes.container.restartCount']).toBe('3');
    expect(ann['io.kubernetes.container.hash']).toBe(hashContainer(container));
    const info = getContainerInfoFromAnnotations(ann);
    expect(info).toEqual({
      hash: hashContainer(container),
      restartCount: 3,
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'FallbackToLogsOnError',
      podDeletionGracePeriodSeconds: 7,
      podTerminationGracePeriodSeconds: 45,
      preStopHandler: { exec: { command: ['sh', '-c', 'echo bye'] } },
      ports: [{ containerPort: 80, name: 'http' }],
    });
  });

  it('tolerates missing and damaged annotations', () => {
    const info = getContainerInfoFromAnnotations({
      'io.kubernetes.container.restartCount': 'x',
      'io.kubernetes.container.preStopHandler': '{bad',
    });
    expect(info.restartCount).toBe(0);
    expect(info.preStopHandler).toBeUndefined();
    expect(info.terminationMessagePolicy).toBe('File');
  });

  it('refuses a pod without uid', () => {
    expect(() => newPodLabels({ metadata: { name: 'x', namespace: 'y' } })).toThrow(/has no metadata.uid/);
  });
});
