import { expect, test } from 'vitest';
test('runs on node 22', () => {
  expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(22);
});
