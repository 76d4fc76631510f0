// The node lister against the fake apiserver: a label set through the API reaches admission.
import { realClock } from '@kh/apimachinery';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../src/api/node_api.js';
import { NodeLister } from '../src/nodestatus/node_lister.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';

const NODE = 'lister-node';
let apiserver: TestApiServer;
let core: CoreV1Api;

beforeAll(async () => {
  apiserver = await startTestApiServer();
  core = loadKubeConfig(apiserver.kubeconfig).makeApiClient(CoreV1Api);
  await core.createNode({ body: { metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } } });
});
afterAll(() => apiserver?.stop());

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(check()).toBe(true);
}

describe('NodeLister', () => {
  it('follows the API Node: labels added and removed through the API, and its deletion', async () => {
    const lister = new NodeLister({
      kubeConfig: loadKubeConfig(apiserver.kubeconfig),
      nodeName: NODE,
      clock: realClock,
    });
    const abort = new AbortController();
    const running = lister.run(abort.signal);
    await until(() => lister.get()?.metadata?.name === NODE);
    const label = async (key: string, value?: string) => {
      const node = await core.readNode({ name: NODE });
      const labels = { ...node.metadata?.labels };
      if (value === undefined) delete labels[key];
      else labels[key] = value;
      await core.replaceNode({ name: NODE, body: { ...node, metadata: { ...node.metadata, labels } } });
    };
    await label('team', 'a');
    await until(() => lister.get()?.metadata?.labels?.team === 'a');
    await label('team');
    await until(() => lister.get()?.metadata?.labels?.team === undefined);
    await core.deleteNode({ name: NODE });
    await until(() => lister.get() === undefined);
    abort.abort();
    await running;
  });
});
