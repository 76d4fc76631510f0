import type { ParseArgsConfig } from 'node:util';
import type { ConformanceOptions } from '../framework/framework.js';

// The `cri-conformance` command's flags, in one place for both directions: the CLI parses them, and
// a process that runs the suite elsewhere (in a node container) writes them.

export const SUITE_CLI_OPTIONS = {
  endpoint: { type: 'string', multiple: true },
  'image-prefix': { type: 'string', default: '' },
  'busybox-image': { type: 'string' },
  'httpd-image': { type: 'string' },
  registry: { type: 'string' },
  'registry-image': { type: 'string', default: 'kh/busybox:conformance' },
  'registry-auth': { type: 'string' },
  'log-dir': { type: 'string' },
  'log-dir-local': { type: 'string' },
  'host-port-address': { type: 'string', default: '127.0.0.1' },
  'host-port-ip': { type: 'string', default: '' },
  'cgroup-parent': { type: 'string', default: '' },
  'streaming-unreachable': { type: 'string' },
  focus: { type: 'string' },
  junit: { type: 'string' },
  json: { type: 'string' },
  timeout: { type: 'string', default: '120' },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];

/**
 * What a run elsewhere is given: ConformanceOptions without the run id (the command makes its own)
 * and with the log directory optional (the command then makes one of its own in its TMPDIR).
 */
export type SuiteCliOptions = Omit<ConformanceOptions, 'runId' | 'logDir'> &
  Partial<Pick<ConformanceOptions, 'logDir'>>;

/** The command's flags for these options: what the command parses back into them. */
export function suiteCliArgs(o: SuiteCliOptions): string[] {
  const flag = (name: keyof typeof SUITE_CLI_OPTIONS, value: string | undefined) =>
    value === undefined ? [] : [`--${name}=${value}`];
  const { registry } = o;
  return [
    ...flag('endpoint', o.endpoint),
    ...flag('busybox-image', o.images.busybox),
    ...flag('httpd-image', o.images.httpd),
    ...flag('registry', registry?.address),
    ...flag('registry-image', registry?.image),
    ...flag('registry-auth', registry?.auth && `${registry.auth.username}:${registry.auth.password}`),
    ...flag('log-dir', o.logDir?.runtime),
    ...flag('log-dir-local', o.logDir?.local),
    ...flag('host-port-address', o.hostPortAddress),
    ...flag('host-port-ip', o.hostPortIp),
    ...flag('cgroup-parent', o.cgroupParent),
    ...flag('streaming-unreachable', o.streamingUnreachable),
    ...flag('focus', o.focus?.source),
    ...flag('timeout', String(o.callTimeoutMs / 1000)),
  ];
}
