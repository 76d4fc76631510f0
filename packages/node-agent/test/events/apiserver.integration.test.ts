// Correlated events against the real fake apiserver: repeats are PATCHes that kubectl sees as one
// Event with a count.

import { FakeClock } from '@kh/apimachinery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/api/node_api.js';
import { KubeletEventRecorder } from '../../src/events/recorder.js';
import { CorrelatingEventSink, KubeEventSink } from '../../src/events/sink.js';
import { startTestApiServer, type TestApiServer } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';

let apiserver: TestApiServer;
let kubeconfigPath: string;

beforeAll(async () => {
  apiserver = await startTestApiServer();
  kubeconfigPath = apiserver.kubeconfig;
});
afterAll(() => apiserver?.stop());

describe('correlated events on an API server', () => {
  it('posts one BackOff Event with count 3 and the latest lastTimestamp', async () => {
    const clock = new FakeClock(Date.now() - 60_000);
    const recorder = new KubeletEventRecorder(
      new CorrelatingEventSink(new KubeEventSink(loadKubeConfig(kubeconfigPath)), clock),
      { host: 'node-a', clock },
    );
    const pod = { metadata: { name: 'crashy', namespace: 'default', uid: 'uid-crashy' } };
    const start = clock.now();
    for (let i = 0; i < 3; i++) {
      recorder.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container app in pod crashy');
      await clock.advance(10_000);
    }
    recorder.event(pod, 'Normal', 'Pulled', 'Container image "busybox" already present on machine');
    await recorder.flush();

    const list = JSON.parse(
      await kubectl(
        kubeconfigPath,
        'get',
        'events',
        '-n',
        'default',
        '--field-selector',
        'involvedObject.name=crashy',
        '-o',
        'json',
      ),
    ) as { items: { reason: string; count: number; firstTimestamp: string; lastTimestamp: string }[] };
    const backoff = list.items.filter((e) => e.reason === 'BackOff');
    expect(backoff).toHaveLength(1);
    expect(backoff[0]?.count).toBe(3);
    // metav1.Time may be cut to seconds on the way.
    const near = (iso: string | undefined, ms: number) => Math.abs(Date.parse(iso ?? '') - ms) < 1000;
    expect(near(backoff[0]?.firstTimestamp, start)).toBe(true);
    expect(near(backoff[0]?.lastTimestamp, start + 20_000)).toBe(true);
    expect(list.items.filter((e) => e.reason === 'Pulled').map((e) => e.count)).toEqual([1]);
  });
});
