import { ContainerState, MountPropagation, NamespaceMode, PodSandboxState, Signal } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import {
  apiAtLeast,
  containerPidMode,
  dockerTimeToNanos,
  exitReason,
  imageUser,
  nowNanos,
  propagationFromDocker,
  sandboxNamespaceOptions,
  signalFromDocker,
  signalName,
  splitImageRef,
  toContainerState,
  toDockerBind,
  toSandboxState,
} from '../src/core/convert.js';

describe('timestamps', () => {
  it('keeps all nine fractional digits as int64 ns', () => {
    expect(dockerTimeToNanos('2026-11-22T23:15:00.551690878Z')).toBe(1795389300551690878n);
    expect(dockerTimeToNanos('2026-11-22T23:15:00.5Z')).toBe(1795389300500000000n);
    expect(dockerTimeToNanos('2026-11-22T23:15:00Z')).toBe(1795389300000000000n);
    expect(dockerTimeToNanos('2026-11-23T00:15:00.000000001+01:00')).toBe(1795389300000000001n);
  });

  it('maps Docker’s zero time and empty values to 0', () => {
    expect(dockerTimeToNanos('0001-01-01T00:00:00Z')).toBe(0n);
    expect(dockerTimeToNanos('')).toBe(0n);
  });

  it('rejects garbage instead of inventing a time', () => {
    expect(() => dockerTimeToNanos('yesterday')).toThrow(/unparseable/);
  });

  it('nowNanos strictly increases', () => {
    const a = nowNanos();
    const b = nowNanos();
    expect(b > a).toBe(true);
  });
});

describe('states and reasons', () => {
  it('maps Docker statuses', () => {
    expect(toContainerState('created')).toBe(ContainerState.CONTAINER_CREATED);
    expect(toContainerState('running')).toBe(ContainerState.CONTAINER_RUNNING);
    expect(toContainerState('paused')).toBe(ContainerState.CONTAINER_RUNNING);
    expect(toContainerState('exited')).toBe(ContainerState.CONTAINER_EXITED);
    expect(toContainerState('dead')).toBe(ContainerState.CONTAINER_EXITED);
    expect(toContainerState('removing')).toBe(ContainerState.CONTAINER_UNKNOWN);
    expect(toSandboxState('running')).toBe(PodSandboxState.SANDBOX_READY);
    expect(toSandboxState('exited')).toBe(PodSandboxState.SANDBOX_NOTREADY);
  });

  it('gives kubelet’s terminated reasons', () => {
    expect(exitReason({ ExitCode: 0 })).toBe('Completed');
    expect(exitReason({ ExitCode: 1 })).toBe('Error');
    expect(exitReason({ ExitCode: 137, OOMKilled: true })).toBe('OOMKilled');
  });
});

describe('signals', () => {
  it('converts both ways', () => {
    expect(signalName(Signal.SIGNAL_SIGTERM)).toBe('SIGTERM');
    expect(signalName(Signal.SIGNAL_SIGRTMINPLUS3)).toBe('SIGRTMIN+3');
    expect(signalName(Signal.SIGNAL_SIGRTMAXMINUS2)).toBe('SIGRTMAX-2');
    expect(signalName(Signal.SIGNAL_RUNTIME_DEFAULT)).toBeUndefined();
    expect(signalFromDocker('SIGUSR1')).toBe(Signal.SIGNAL_SIGUSR1);
    expect(signalFromDocker('quit')).toBe(Signal.SIGNAL_SIGQUIT);
    expect(signalFromDocker('SIGRTMIN+3')).toBe(Signal.SIGNAL_SIGRTMINPLUS3);
    expect(signalFromDocker('')).toBe(Signal.SIGNAL_RUNTIME_DEFAULT);
  });
});

describe('mounts and namespaces', () => {
  const base = {
    selinuxRelabel: false,
    uidMappings: [],
    gidMappings: [],
    recursiveReadOnly: false,
    image: undefined,
    imageSubPath: '',
    mountOptions: [],
  };
  it('builds bind strings with read-only and propagation', () => {
    expect(
      toDockerBind({
        ...base,
        hostPath: '/h',
        containerPath: '/c',
        readonly: true,
        propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
      }),
    ).toBe('/h:/c:ro,rslave');
    expect(
      toDockerBind({
        ...base,
        hostPath: '/h',
        containerPath: '/c',
        readonly: false,
        propagation: MountPropagation.PROPAGATION_BIDIRECTIONAL,
      }),
    ).toBe('/h:/c:rw,rshared');
    expect(apiAtLeast('1.44', '1.44')).toBe(true);
    expect(apiAtLeast('1.100', '1.44')).toBe(true);
    expect(apiAtLeast('1.41', '1.44')).toBe(false);
    expect(apiAtLeast('2.0', '1.44')).toBe(true);
    expect(propagationFromDocker('rslave')).toBe(MountPropagation.PROPAGATION_HOST_TO_CONTAINER);
    expect(propagationFromDocker('')).toBe(MountPropagation.PROPAGATION_PRIVATE);
  });

  it('rebuilds sandbox namespace options from HostConfig', () => {
    expect(sandboxNamespaceOptions({ NetworkMode: 'host', PidMode: 'host', IpcMode: 'host' })).toMatchObject({
      network: NamespaceMode.NODE,
      pid: NamespaceMode.NODE,
      ipc: NamespaceMode.NODE,
    });
    expect(sandboxNamespaceOptions({ NetworkMode: 'bridge', IpcMode: 'shareable' })).toMatchObject({
      network: NamespaceMode.POD,
      pid: NamespaceMode.CONTAINER,
      ipc: NamespaceMode.POD,
    });
  });

  it('chooses the PID namespace a container joins', () => {
    expect(containerPidMode(NamespaceMode.POD, 'sb', '')).toBe('container:sb');
    expect(containerPidMode(NamespaceMode.NODE, 'sb', '')).toBe('host');
    expect(containerPidMode(NamespaceMode.TARGET, 'sb', 'tgt')).toBe('container:tgt');
    expect(containerPidMode(NamespaceMode.CONTAINER, 'sb', '')).toBe('');
  });
});

describe('images', () => {
  it('splits references for the pull API', () => {
    expect(splitImageRef('busybox')).toEqual({ repository: 'busybox', tag: 'latest' });
    expect(splitImageRef('registry:5000/a/b:1.0')).toEqual({ repository: 'registry:5000/a/b', tag: '1.0' });
    expect(splitImageRef('registry:5000/a@sha256:abc')).toEqual({
      repository: 'registry:5000/a',
      tag: 'sha256:abc',
    });
    expect(splitImageRef('localhost:5000/a')).toEqual({ repository: 'localhost:5000/a', tag: 'latest' });
    // With both, the digest wins: the Engine pulls by digest and ignores the tag.
    expect(splitImageRef('a:1@sha256:abc')).toEqual({ repository: 'a', tag: 'sha256:abc' });
  });

  it('reads the image user as uid or name', () => {
    expect(imageUser('')).toEqual({ uid: 0n, username: '' });
    expect(imageUser('1000:1000')).toEqual({ uid: 1000n, username: '' });
    expect(imageUser('nobody')).toEqual({ uid: undefined, username: 'nobody' });
  });
});
