import { describe, expect, it } from 'vitest';
import { EndpointError, parseEndpoint } from '../src/client/endpoint.js';

describe('parseEndpoint', () => {
  it('accepts unix:// URIs with absolute paths', () => {
    expect(parseEndpoint('unix:///run/containerd/containerd.sock')).toEqual({
      kind: 'unix',
      path: '/run/containerd/containerd.sock',
      target: 'unix:///run/containerd/containerd.sock',
      uri: 'unix:///run/containerd/containerd.sock',
    });
  });

  it('treats a plain path as a unix socket and resolves relative paths', () => {
    expect(parseEndpoint('/var/run/cri-dockerd.sock')).toMatchObject({
      kind: 'unix',
      path: '/var/run/cri-dockerd.sock',
    });
    expect(parseEndpoint('rel/x.sock')).toMatchObject({ kind: 'unix', path: `${process.cwd()}/rel/x.sock` });
  });

  it('accepts tcp://host:port including IPv6 literals', () => {
    expect(parseEndpoint('tcp://127.0.0.1:1234')).toEqual({
      kind: 'tcp',
      host: '127.0.0.1',
      port: 1234,
      target: '127.0.0.1:1234',
      uri: 'tcp://127.0.0.1:1234',
    });
    expect(parseEndpoint('tcp://[::1]:50051')).toMatchObject({
      host: '[::1]',
      port: 50051,
      target: '[::1]:50051',
    });
    expect(parseEndpoint('tcp://localhost:0', { allowPortZero: true })).toMatchObject({ port: 0 });
  });

  it.each([
    ['', /empty/],
    ['npipe:////./pipe/containerd', /unsupported scheme "npipe"/],
    ['http://127.0.0.1:80', /unsupported scheme "http"/],
    ['unix://relative.sock', /absolute path/],
    ['tcp://127.0.0.1', /host:port/],
    ['tcp://127.0.0.1:99999', /out of range/],
    ['tcp://127.0.0.1:0', /out of range/],
  ])('rejects %j with a clear message', (ep, msg) => {
    expect(() => parseEndpoint(ep)).toThrow(EndpointError);
    expect(() => parseEndpoint(ep)).toThrow(msg);
  });
});
