import { AuthConfig, NotFoundError, UnauthenticatedError, UnknownCriError } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { pullError, toDockerAuth } from '../src/core/image.js';

describe('registry auth for pulls', () => {
  it('passes user and password, with the registry of the image as server', () => {
    expect(
      toDockerAuth(AuthConfig.fromPartial({ username: 'u', password: 'p' }), 'registry:5000/a/b:1'),
    ).toEqual({
      serveraddress: 'registry:5000',
      username: 'u',
      password: 'p',
    });
  });

  it('decodes the base64 "auth" form', () => {
    const auth = Buffer.from('kh:s3:cret').toString('base64');
    expect(
      toDockerAuth(AuthConfig.fromPartial({ auth, serverAddress: 'http://r:5000' }), 'r:5000/x'),
    ).toEqual({
      serveraddress: 'http://r:5000',
      username: 'kh',
      password: 's3:cret',
    });
  });

  it('forwards identity and registry tokens', () => {
    expect(
      toDockerAuth(AuthConfig.fromPartial({ identityToken: 'id', registryToken: 'rt' }), 'busybox'),
    ).toEqual({ serveraddress: 'docker.io', identitytoken: 'id', registrytoken: 'rt' });
  });
});

describe('pull errors', () => {
  it('maps the Engine’s messages to gRPC codes', () => {
    expect(pullError('r/a:1', 'manifest for r/a:1 not found: manifest unknown')).toBeInstanceOf(
      NotFoundError,
    );
    expect(pullError('r/a:1', 'Head "http://r/v2/a/manifests/1": no basic auth credentials')).toBeInstanceOf(
      UnauthenticatedError,
    );
    expect(pullError('r/a:1', 'unauthorized: authentication required')).toBeInstanceOf(UnauthenticatedError);
    const other = pullError('r/a:1', 'connection refused');
    expect(other).toBeInstanceOf(UnknownCriError);
    expect(other.message).toBe('pull image "r/a:1": connection refused');
  });
});
