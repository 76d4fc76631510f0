import { describe, expect, it } from 'vitest';
import { generateEvents } from '../../src/pleg/generic.js';

describe('PLEG event generation', () => {
  const types = (o: Parameters<typeof generateEvents>[2], n: Parameters<typeof generateEvents>[3]) =>
    generateEvents('uid', 'c1', o, n).map((e) => e.type);
  it.each([
    ['non-existent', 'running', ['ContainerStarted']],
    ['running', 'exited', ['ContainerDied']],
    ['exited', 'non-existent', ['ContainerRemoved']],
    ['running', 'non-existent', ['ContainerDied', 'ContainerRemoved']],
    ['non-existent', 'unknown', ['ContainerChanged']],
    ['exited', 'running', ['ContainerStarted']],
    ['running', 'running', []],
  ] as const)('%s -> %s', (o, n, want) => {
    expect(types(o, n)).toEqual(want);
  });
  it('names the pod and container', () => {
    expect(generateEvents('uid', 'c1', 'running', 'exited')).toEqual([
      { podUid: 'uid', type: 'ContainerDied', data: 'c1' },
    ]);
  });
});
