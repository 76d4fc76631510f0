// The agent benchmark's options, read as bench/cli.ts reads them (testkit's benchArgs).
import { parseOptions, UsageError } from '@kh/testkit';
import { describe, expect, it } from 'vitest';
import { agentBenchArgs, OPTIONS, USAGE } from './args.js';

const parse = (...argv: string[]) => agentBenchArgs(parseOptions(argv, OPTIONS));

describe('agentBenchArgs', () => {
  it('has the defaults the README documents', () => {
    expect(parse()).toEqual({
      pods: 30,
      rounds: 3,
      densityPods: 10,
      rssPods: 110,
      settleSeconds: 30,
      label: 'run',
      agentNodeOptions: [],
      agentRuntimeOptions: {},
      agentConfig: {},
      agentEnv: {},
      heapSnapshot: '',
      nodeRelease: undefined,
    });
  });

  it('takes every documented form, values that start with a dash included', () => {
    expect(
      parse(
        ...['--pods', '10', '--rounds', '0', '--density-pods', '0', '--rss-pods=5', '--settle-seconds', '2'],
        ...['--label', 'after', '--agent-node-options', '--cpu-prof --cpu-prof-dir=/tmp/prof'],
        ...['--agent-runtime-options', '{"images":{"serializeImagePulls":false}}'],
        ...['--agent-config', '{"featureGates":{"EventedPLEG":true}}'],
        ...['--agent-env', 'MALLOC_ARENA_MAX=2 A=b=c', '--heap-snapshot', '/tmp/agent.heapsnapshot'],
        ...['--node-release', 'bookworm'],
      ),
    ).toEqual({
      pods: 10,
      rounds: 0,
      densityPods: 0,
      rssPods: 5,
      settleSeconds: 2,
      label: 'after',
      agentNodeOptions: ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'],
      agentRuntimeOptions: { images: { serializeImagePulls: false } },
      agentConfig: { featureGates: { EventedPLEG: true } },
      agentEnv: { MALLOC_ARENA_MAX: '2', A: 'b=c' },
      heapSnapshot: '/tmp/agent.heapsnapshot',
      nodeRelease: 'bookworm',
    });
    expect(parse('--agent-node-options', '--max-old-space-size=64').agentNodeOptions).toEqual([
      '--max-old-space-size=64',
    ]);
  });

  it('refuses a typo, naming the known options', () => {
    expect(() => parse('--pod', '10')).toThrow(/^unknown option --pod, known: --pods, --rounds, /);
  });

  it('refuses counts that are not whole numbers >= 0, naming the flag', () => {
    expect(() => parse('--pods', 'abc')).toThrow(
      new UsageError('--pods must be a whole number >= 0, not "abc"'),
    );
    expect(() => parse('--rss-pods', '-1')).toThrow(/^--rss-pods must be a whole number >= 0, not "-1"$/);
    expect(() => parse('--settle-seconds', '1.5')).toThrow(/^--settle-seconds must be a whole number/);
  });

  it('refuses JSON options that are not a JSON object, naming the flag', () => {
    expect(() => parse('--agent-config', '{featureGates:1}')).toThrow(
      /^--agent-config must be a JSON object: /,
    );
    expect(() => parse('--agent-runtime-options', '[1]')).toThrow(
      new UsageError('--agent-runtime-options must be a JSON object, not [1]'),
    );
    expect(() => parse('--agent-config', 'null')).toThrow(/^--agent-config must be a JSON object/);
  });

  it('refuses an unknown node release and an environment entry without a name', () => {
    expect(() => parse('--node-release', 'sid')).toThrow(
      /^--node-release must be one of .*bookworm.*, not "sid"$/,
    );
    expect(() => parse('--agent-env', 'MALLOC_ARENA_MAX')).toThrow(
      new UsageError('--agent-env takes NAME=value pairs, not "MALLOC_ARENA_MAX"'),
    );
    expect(() => parse('--agent-env', '=2')).toThrow(/^--agent-env takes NAME=value pairs/);
  });

  it('documents every option in the usage', () => {
    for (const name of Object.keys(OPTIONS)) expect(USAGE).toContain(`--${name} `);
  });
});
