// kh.config.json's quarantine entries that name a case hold only if that case exists: quarantine
// matches a case by its declared name, so a renamed case would silently stop being held.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { scenarios } from '../src/index.js';

const config = JSON.parse(readFileSync(new URL('../../kh.config.json', import.meta.url), 'utf8')) as {
  quarantine: { cell: string; case?: string }[];
};

describe("kh.config.json's quarantined cases", () => {
  it('each name a case their scenario declares', () => {
    const entries = config.quarantine.filter((e) => e.case !== undefined);
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) {
      const scenario = scenarios.find((s) => s.name === e.cell.split('/')[1]);
      expect(
        scenario?.cases?.map((c) => c.name),
        e.cell,
      ).toContain(e.case);
    }
  });
});
