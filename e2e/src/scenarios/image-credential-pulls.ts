import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import { limiter } from '../support/concurrent.js';
import { createPullSecret, imagePullTest } from '../support/image-pull.js';
import { eventsFor } from '../support/pods.js';

// Upstream's image_credential_pulls.go (KubeletEnsureSecretPulledImages on, the default
// NeverVerifyPreloadedImages policy): once a pod pulled the private image with a secret, a pod
// that presents no secret, or one that does not fit the registry, cannot use the image on the
// node; one with the same secret, or the same credentials in another secret, can. Upstream's
// BeforeEach starts a registry of its own per case, so its image is always one the kubelet pulls;
// here the run's private registry serves every scenario, so the cell first pulls the image with
// PullAlways, which gives it a pulled record whatever other cells left on the node.
const FILE = 'test/e2e/common/node/image_credential_pulls.go';
const DESCRIBE = 'Ensure Credential Pulled Images pulling images with credentials';
const TAGS = [
  'Feature:KubeletEnsureSecretPulledImages',
  'FeatureGate:KubeletEnsureSecretPulledImages',
  'Alpha',
  'Feature:OffByDefault',
  'Serial',
];
const GATE = { featureGates: { KubeletEnsureSecretPulledImages: true } };
/** Upstream's invalid secret: credentials for a registry that is not the image's. */
const INVALID_AUTHS = {
  'somerepo.com': { auth: Buffer.from('invaliduser:invalidpassword').toString('base64') },
};

type Limit = ReturnType<typeof limiter>;
type Strategy = 'IfNotPresent' | 'Never';
type Presented = 'none' | 'invalid' | 'same' | 'copy';

/** The event that says the pod used the image on the node through its record, not a pull. */
const ACCESSED = 'already present on machine and can be accessed by the pod';

/**
 * BeforeEach, then the case: the pod with the test secret (IfNotPresent) runs, then a pod with
 * `strategy` presenting `presented` either runs (a matching record) or waits on a pull reason.
 */
function credentialCase(strategy: Strategy, it: string, presented: Presented): ScenarioCase<Limit> {
  return {
    file: FILE,
    name: `${DESCRIBE} ${strategy} ${it}`,
    tags: TAGS,
    run: (ctx, limit) =>
      limit(async () => {
        const image = ctx.images.private;
        const prefix = `${strategy.toLowerCase()}-${presented}`;
        const testSecret = `${prefix}-secret`;
        await createPullSecret(ctx, testSecret);
        await imagePullTest(ctx, {
          podName: `${prefix}-orig`,
          image,
          policy: 'IfNotPresent',
          secretName: testSecret,
          pullFails: false,
        });
        let secretName: string | undefined;
        if (presented === 'same') secretName = testSecret;
        if (presented === 'copy' || presented === 'invalid') {
          secretName = `${prefix}-${presented}`;
          await createPullSecret(ctx, secretName, presented === 'invalid' ? INVALID_AUTHS : undefined);
        }
        const podName = `${prefix}-pod`;
        const canAccess = presented === 'same' || presented === 'copy';
        // Upstream's invalid-secret case uses IfNotPresent under both strategies.
        const policy = presented === 'invalid' ? 'IfNotPresent' : strategy;
        await imagePullTest(ctx, {
          podName,
          image,
          policy,
          ...(secretName ? { secretName } : {}),
          pullFails: !canAccess,
        });
        if (canAccess) {
          // Beyond upstream: the pod ran off the record, it did not pull the image again.
          await ctx.check.eventually(
            `pod ${podName}: image accessed through its pulled record`,
            () => eventsFor(ctx, podName),
            (events) => events.some((e) => e.reason === 'Pulled' && e.message.includes(ACCESSED)),
            {
              timeoutMs: 30_000,
              expected: `a Pulled event "${ACCESSED}"`,
              describe: (events) => events.map((e) => `${e.reason}: ${e.message}`),
            },
          );
        }
      }),
  };
}

const cases = (['IfNotPresent', 'Never'] as const).flatMap((strategy) => [
  credentialCase(strategy, 'pod without PullSecret cannot access previously pulled private image', 'none'),
  credentialCase(
    strategy,
    'pod with invalid PullSecret cannot access previously pulled private image',
    'invalid',
  ),
  credentialCase(strategy, 'pod with the same PullSecret can access previously pulled image', 'same'),
  credentialCase(
    strategy,
    'pod with the same credentials in a different secret can access previously pulled image',
    'copy',
  ),
]);

/** Pulls the private image with the secret under PullAlways, so the agent holds a record of it. */
async function pullWithRecord(ctx: ScenarioContext): Promise<void> {
  await createPullSecret(ctx, 'record-secret');
  await imagePullTest(ctx, {
    podName: 'record-pull',
    image: ctx.images.private,
    policy: 'Always',
    secretName: 'record-secret',
    pullFails: false,
  });
  ctx.check.ok('private image on the node', (await ctx.cri.imageStatus(ctx.images.private)) !== undefined);
}

export const imageCredentialPulls: CasesScenario<Limit> = {
  name: 'image-credential-pulls',
  description:
    'image_credential_pulls.go cases (KubeletEnsureSecretPulledImages on): after a pull with a secret, IfNotPresent and Never pods without a secret or with one for another registry cannot use the private image on the node; pods with the same secret, or the same credentials in another secret, can',
  // It restarts the agent with a feature gate on.
  isolation: 'node',
  needs: ['real-containers'],
  estimateMs: 60_000,
  // Room past one of upstream's 5 min image pull waits (ContainerStatusRetryTimeout) for the rest.
  timeoutMs: 600_000,
  async setup(ctx) {
    await ctx.reconfigureAgent(GATE);
    await pullWithRecord(ctx);
    return limiter(4);
  },
  async teardown(ctx) {
    await ctx.reconfigureAgent({});
  },
  cases,
};
