import { describe, expect, it } from 'vitest';
import {
  InvalidImageNameError,
  normalizeImageRef,
  parseImageReference,
  registryHostOf,
  splitImageReference,
} from '../src/index.js';

const digest = `sha256:${'a'.repeat(64)}`;

describe('normalizeImageRef', () => {
  it.each([
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['kh/pause:1', 'docker.io/kh/pause:1'],
    ['docker.io/library/busybox:latest', 'docker.io/library/busybox:latest'],
    ['quay.io/coreos/etcd', 'quay.io/coreos/etcd:latest'],
    ['localhost:5000/x/y:2', 'localhost:5000/x/y:2'],
    ['localhost/pause', 'localhost/pause:latest'],
    // "localhost" alone is a Docker Hub repository, not a registry.
    ['localhost', 'docker.io/library/localhost:latest'],
    [`busybox@${digest}`, `docker.io/library/busybox@${digest}`],
    [`busybox:1@${digest}`, `docker.io/library/busybox:1@${digest}`],
    [`registry:5000/app@${digest}`, `registry:5000/app@${digest}`],
  ])('%s -> %s', (ref, want) => {
    expect(normalizeImageRef(ref)).toBe(want);
  });

  it('is idempotent', () => {
    for (const ref of ['busybox', 'kh/pause:1', `localhost:5000/x@${digest}`]) {
      expect(normalizeImageRef(normalizeImageRef(ref))).toBe(normalizeImageRef(ref));
    }
  });
});

describe('parseImageReference', () => {
  it('splits and normalises Docker Hub names', () => {
    expect(parseImageReference('busybox')).toEqual({ domain: 'docker.io', path: 'library/busybox' });
    expect(parseImageReference('index.docker.io/kh/pause:3')).toEqual({
      domain: 'docker.io',
      path: 'kh/pause',
      tag: '3',
    });
    expect(parseImageReference(`localhost:5000/a/b:c@${digest}`)).toEqual({
      domain: 'localhost:5000',
      path: 'a/b',
      tag: 'c',
      digest,
    });
    expect(parseImageReference('localhost/pause')).toEqual({ domain: 'localhost', path: 'pause' });
  });

  it.each([
    ['', /empty or padded/],
    [' busybox', /empty or padded/],
    ['BusyBox', /must be lowercase/],
    ['busy..box', /invalid path component "busy..box"/],
    ['busybox:-x', /invalid tag "-x"/],
    ['busybox@sha256:abc', /invalid digest "sha256:abc"/],
    ['-bad.host:5000/x', /invalid registry "-bad.host:5000"/],
  ])('rejects %j', (ref, msg) => {
    expect(() => parseImageReference(ref)).toThrow(InvalidImageNameError);
    expect(() => parseImageReference(ref)).toThrow(msg);
  });
});

describe('splitImageReference / registryHostOf', () => {
  it('keeps the spelling', () => {
    expect(splitImageReference('busybox')).toEqual({ repository: 'busybox' });
    expect(splitImageReference('localhost:5000/x:1')).toEqual({ repository: 'localhost:5000/x', tag: '1' });
    expect(splitImageReference(`x:1@${digest}`)).toEqual({ repository: 'x', tag: '1', digest });
  });

  it('names the registry host, docker.io by default', () => {
    expect(registryHostOf('busybox')).toBe('docker.io');
    expect(registryHostOf('kh/pause')).toBe('docker.io');
    expect(registryHostOf('localhost/pause')).toBe('localhost');
    expect(registryHostOf('registry.example:5000/a/b:1')).toBe('registry.example:5000');
  });
});
