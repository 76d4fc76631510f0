import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SUITE_CLI_OPTIONS, type SuiteCliOptions, suiteCliArgs } from '../src/index.js';

// The flags a process writes to run the suite elsewhere (runConformanceInNode) are the ones the
// command parses back into the same options.

const parse = (args: string[]) => parseArgs({ args, options: SUITE_CLI_OPTIONS, strict: true }).values;

describe('suiteCliArgs', () => {
  it('writes every option as the command parses it, values with spaces and colons intact', () => {
    const options: SuiteCliOptions = {
      endpoint: 'unix:///run/kh/dockershim.sock',
      images: { busybox: 'docker.io/kh/busybox:1', httpd: 'docker.io/kh/httpd:1' },
      registry: {
        address: 'private-registry:5000',
        image: 'kh/busybox:conformance',
        auth: { username: 'kh', password: 'p:w d' },
      },
      logDir: { runtime: '/run/kh/logs', local: '/tmp/kh-node-x/logs' },
      hostPortAddress: '172.18.0.2',
      hostPortIp: '',
      cgroupParent: '/docker/abc/kubepods',
      streamingUnreachable: "the node's loopback",
      focus: /^(image|logs) /,
      callTimeoutMs: 60_000,
    };
    expect(parse(suiteCliArgs(options))).toMatchObject({
      endpoint: ['unix:///run/kh/dockershim.sock'],
      'busybox-image': 'docker.io/kh/busybox:1',
      'httpd-image': 'docker.io/kh/httpd:1',
      registry: 'private-registry:5000',
      'registry-image': 'kh/busybox:conformance',
      'registry-auth': 'kh:p:w d',
      'log-dir': '/run/kh/logs',
      'log-dir-local': '/tmp/kh-node-x/logs',
      'host-port-address': '172.18.0.2',
      'host-port-ip': '',
      'cgroup-parent': '/docker/abc/kubepods',
      'streaming-unreachable': "the node's loopback",
      focus: '^(image|logs) ',
      timeout: '60',
    });
  });

  it('leaves out what is not given, so the command takes its defaults (its own log dir, no registry)', () => {
    const values = parse(
      suiteCliArgs({
        endpoint: 'unix:///a.sock',
        images: { busybox: 'b', httpd: 'h' },
        hostPortAddress: '',
        hostPortIp: '',
        cgroupParent: '',
        callTimeoutMs: 120_000,
      }),
    );
    for (const absent of [
      'registry',
      'registry-auth',
      'log-dir',
      'log-dir-local',
      'streaming-unreachable',
      'focus',
    ])
      expect(values).not.toHaveProperty(absent);
    expect(values['registry-image']).toBe(SUITE_CLI_OPTIONS['registry-image'].default);
  });
});
