// ContainerRestartRules (alpha in 1.34): with the gate on a regular container may set its own
// restartPolicy and restartPolicyRules, validated as ValidatePodSpec does (422, one cause per
// problem); with it off kube-apiserver drops those fields from a new pod and only a sidecar's
// restartPolicy: Always is accepted.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { API_FEATURE_GATE_DEFAULTS, parseFeatureGates, setFeatureGates } from '../src/meta/features.js';
import { type Harness, pod, startHarness } from './helpers.js';

const PODS = '/api/v1/namespaces/default/pods';
const RULE = { action: 'Restart', exitCodes: { operator: 'In', values: [42] } };
const app = (extra: object) => ({
  restartPolicy: 'Never',
  containers: [{ name: 'c', image: 'busybox:1.36', command: ['sh', '-c', 'exit 42'], ...extra }],
});

describe('container restart rules validation', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
  });
  afterAll(async () => {
    await h?.stop();
  });
  afterEach(() => setFeatureGates(API_FEATURE_GATE_DEFAULTS));

  const causes = async (name: string, spec: object) => {
    const res = await h.api.post(PODS, pod(name, spec));
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Invalid', details: { kind: 'Pod', name } });
    return res.body.details.causes.map((c: { field: string; message: string }) => `${c.field}: ${c.message}`);
  };

  it('parses --feature-gates as kube-apiserver does', () => {
    expect(parseFeatureGates('ContainerRestartRules=true')).toEqual({ ContainerRestartRules: true });
    expect(parseFeatureGates('')).toEqual(API_FEATURE_GATE_DEFAULTS);
    expect(() => parseFeatureGates('Nope=true')).toThrow(/unrecognized feature gate: Nope/);
    expect(() => parseFeatureGates('ContainerRestartRules=yes')).toThrow(/must be true or false/);
  });

  it('with the gate on keeps a regular container policy and rules', async () => {
    setFeatureGates({ ContainerRestartRules: true });
    const res = await h.api.post(
      PODS,
      pod('rules-on', app({ restartPolicy: 'Never', restartPolicyRules: [RULE] })),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.spec.containers[0]).toMatchObject({ restartPolicy: 'Never', restartPolicyRules: [RULE] });
  });

  it('with the gate on rejects bad policies, actions, operators, duplicate codes and rules without a policy', async () => {
    setFeatureGates({ ContainerRestartRules: true });
    expect(
      await causes(
        'rules-bad',
        app({
          restartPolicy: 'Sometimes',
          restartPolicyRules: [
            { action: 'Stop', exitCodes: { operator: 'Between', values: [1, 1] } },
            { action: 'Restart' },
          ],
        }),
      ),
    ).toEqual([
      'spec.containers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
      'spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Stop": supported values: "Restart"',
      'spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Between": supported values: "In", "NotIn"',
      'spec.containers[0].restartPolicyRules[0].exitCodes.values[1]: Duplicate value: 1',
      'spec.containers[0].restartPolicyRules[1].exitCodes: Required value: must be specified',
    ]);
    expect(await causes('rules-no-policy', app({ restartPolicyRules: [RULE] }))).toEqual([
      'spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used',
    ]);
  });

  it('with the gate off drops a regular container policy and rules and keeps sidecars Always-only', async () => {
    const res = await h.api.post(
      PODS,
      pod('rules-off', app({ restartPolicy: 'Never', restartPolicyRules: [RULE] })),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.spec.containers[0].restartPolicy).toBeUndefined();
    expect(res.body.spec.containers[0].restartPolicyRules).toBeUndefined();
    const init = { name: 'i', image: 'busybox:1.36', restartPolicy: 'Never' };
    expect(await causes('init-never', { ...app({}), initContainers: [init] })).toEqual([
      'spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]);
  });
});
