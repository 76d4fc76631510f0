import { containerdRuntime } from '@kh/testkit';
import { expect, it } from 'vitest';
import { containerdBackends } from '../../src/backends/containerd.js';
import { dockerBackends } from '../../src/backends/docker.js';
import { endpointBackend } from '../../src/backends/endpoint.js';
import { fakeBackend } from '../../src/backends/fake.js';
import { kindBackend } from '../../src/backends/kind.js';

it('gives every kind backend logind, since each of its nodes runs the system bus and elogind, and no other backend', () => {
  const own = kindBackend({
    name: 'mine',
    description: 'a runtime of its own',
    capabilities: ['real-containers'],
    runtime: containerdRuntime(),
  });
  expect([...own.capabilities].sort()).toEqual(['logind', 'real-containers']);
  for (const b of [...containerdBackends, ...dockerBackends]) expect(b.capabilities.has('logind')).toBe(true);
  expect(fakeBackend.capabilities.has('logind')).toBe(false);
  expect(endpointBackend('unix:///run/mine.sock').capabilities.has('logind')).toBe(false);
});
