import { NODE_RELEASES } from '@kh/testkit';
import { expect, it } from 'vitest';
import { COLUMN_RELEASES, RELEASE_RUNTIMES, versionMatches } from '../../src/backends/releases.js';

it('matches a CRI runtime version to the line a column names', () => {
  expect(versionMatches('1.7', '1.7.24~ds1')).toBe(true);
  expect(versionMatches('2.1', 'v2.1.9')).toBe(true);
  expect(versionMatches('26', '26.1.5+dfsg1')).toBe(true);
  expect(versionMatches('20.10', '20.10.24+dfsg1')).toBe(true);
  expect(versionMatches('2.1', '2.2.0')).toBe(false);
  expect(versionMatches('1.7', '1.70.1')).toBe(false);
  expect(versionMatches('26', '261.0')).toBe(false);
});

it('gives every node release a column', () => {
  expect([...COLUMN_RELEASES].sort()).toEqual([...NODE_RELEASES].sort());
  for (const r of NODE_RELEASES) expect(RELEASE_RUNTIMES[r].containerd).toMatch(/^\d+\.\d+$/);
});
