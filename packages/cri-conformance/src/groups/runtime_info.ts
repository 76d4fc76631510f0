import { expectEqual, expectTrue } from '../framework/assert.js';
import { defineGroup } from '../framework/framework.js';

export const runtimeInfo = defineGroup('runtime info', {
  'Version names the runtime and its versions': async ({ client }) => {
    const v = await client.version({ version: '0.1.0' });
    expectTrue(v.runtimeName !== '', 'runtime_name is empty');
    expectTrue(v.runtimeVersion !== '', 'runtime_version is empty');
    expectTrue(v.runtimeApiVersion !== '', 'runtime_api_version is empty');
    expectEqual(v.version, '0.1.0', 'version (kubelet API version)');
  },

  'Status reports RuntimeReady and NetworkReady': async ({ client }) => {
    const s = await client.status({});
    const conditions = Object.fromEntries((s.status?.conditions ?? []).map((c) => [c.type, c.status]));
    expectEqual(conditions.RuntimeReady, true, 'RuntimeReady');
    expectEqual(conditions.NetworkReady, true, 'NetworkReady');
  },
});
