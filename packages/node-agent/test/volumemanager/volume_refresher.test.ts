import { FakeClock, flushMicrotasks } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/util/log.js';
import { VOLUME_REFRESH_PERIOD_MS, VolumeRefresher } from '../../src/volumemanager/volume_refresher.js';

const pod = (name: string): V1Pod => ({ metadata: { name, namespace: 'ns', uid: name } });

describe('VolumeRefresher', () => {
  it('refreshes the active pods every period and logs updates and failures without stopping', async () => {
    const clock = new FakeClock(0);
    const lines: string[] = [];
    const log: Logger = {
      info: (m, f) => lines.push(`I ${m} ${JSON.stringify(f)}`),
      error: (m, f) => lines.push(`E ${m} ${JSON.stringify(f)}`),
      v: () => {},
    };
    const seen: string[] = [];
    const volumes = {
      refresh: async (p: V1Pod) => {
        seen.push(p.metadata!.name!);
        if (p.metadata!.name === 'bad') throw new Error('boom');
        if (p.metadata!.name === 'cfg')
          return { updated: ['www'], errors: [new Error('secret "s" not found')] };
        return { updated: [], errors: [] };
      },
    };
    let active = [pod('cfg'), pod('bad'), pod('plain')];
    const r = new VolumeRefresher({ volumes, activePods: () => active, clock, log });
    const ac = new AbortController();
    const running = r.run(ac.signal);
    await flushMicrotasks();
    expect(seen).toEqual(['cfg', 'bad', 'plain']);
    expect(lines).toEqual([
      'I Volumes updated {"pod":"ns/cfg","volumes":["www"]}',
      'E Volume refresh failed {"pod":"ns/cfg","err":"secret \\"s\\" not found"}',
      'E Volume refresh failed {"pod":"ns/bad","err":"boom"}',
    ]);
    active = [pod('plain')];
    clock.step(VOLUME_REFRESH_PERIOD_MS - 1);
    await flushMicrotasks();
    expect(seen).toHaveLength(3);
    clock.step(1);
    await flushMicrotasks();
    expect(seen).toEqual(['cfg', 'bad', 'plain', 'plain']);
    ac.abort();
    await running;
  });
});
