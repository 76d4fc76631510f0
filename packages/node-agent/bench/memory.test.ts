// The bench's memory figure is upstream's (cAdvisor RSS = anonymous memory), not VmRSS.
import { describe, expect, it } from 'vitest';
import { densityMemory, parseProcStatus, processMemory } from './memory.js';

const status = (anonKiB: number, rssKiB: number, hwmKiB: number) =>
  `Name:\tnode\nVmHWM:\t  ${hwmKiB} kB\nVmRSS:\t  ${rssKiB} kB\nRssAnon:\t  ${anonKiB} kB\nRssFile:\t  ${rssKiB - anonKiB} kB\n`;

describe('parseProcStatus', () => {
  it('reads RssAnon apart from VmRSS, in bytes', () => {
    expect(parseProcStatus(status(6452, 43720, 50000))).toEqual({
      rssAnonBytes: 6452 * 1024,
      vmRssBytes: 43720 * 1024,
      vmHwmBytes: 50000 * 1024,
    });
  });

  it('refuses a status without RssAnon instead of reading zero', () => {
    expect(() => parseProcStatus('VmRSS:\t 1 kB\nVmHWM:\t 1 kB\n')).toThrow(/RssAnon/);
  });

  it('reads this process: anonymous memory is part of VmRSS', () => {
    const m = processMemory(process.pid);
    expect(m.rssAnonBytes).toBeGreaterThan(0);
    expect(m.rssAnonBytes).toBeLessThan(m.vmRssBytes);
    expect(m.vmRssBytes).toBeLessThanOrEqual(m.vmHwmBytes);
  });
});

describe('densityMemory', () => {
  const mibKiB = 1024;
  it("takes upstream's figure at all-started and the settled one from the last sample", () => {
    const d = densityMemory(10, parseProcStatus(status(50 * mibKiB, 90 * mibKiB, 95 * mibKiB)), [
      parseProcStatus(status(48 * mibKiB, 88 * mibKiB, 97 * mibKiB)),
      parseProcStatus(status(40 * mibKiB, 80 * mibKiB, 97 * mibKiB)),
    ]);
    expect(d).toEqual({
      pods: 10,
      rssAnonMib: 50,
      settledRssAnonMib: 40,
      vmRssMib: 90,
      settledVmRssMib: 80,
      peakVmRssMib: 97,
      settleSeconds: 2,
      settleSamplesMib: [48, 40],
    });
  });

  it('without settling, the settled figures are the all-started ones', () => {
    const d = densityMemory(10, parseProcStatus(status(50 * mibKiB, 90 * mibKiB, 95 * mibKiB)), []);
    expect(d.settledRssAnonMib).toBe(50);
    expect(d.peakVmRssMib).toBe(95);
  });
});
