// ContainerRestartRules (KEP-5307, alpha in 1.34): a container may carry its own restartPolicy and
// restartPolicyRules that decide, from its exit code, whether it runs again, overriding the pod's
// restartPolicy. The kubelet's podutil.ContainerShouldRestart and its probe and init-container uses.
import type { V1Container, V1ContainerRestartRule, V1PodSpec } from '@kubernetes/client-node';

/** The first rule whose exit codes match (In lists it, NotIn does not), if any. */
function matchedRule(container: V1Container, exitCode: number): V1ContainerRestartRule | undefined {
  return (container.restartPolicyRules ?? []).find((rule) => {
    const codes = rule.exitCodes;
    if (!codes) return false;
    const listed = (codes.values ?? []).includes(exitCode);
    if (codes.operator === 'In') return listed;
    if (codes.operator === 'NotIn') return !listed;
    return false;
  });
}

const byPolicy = (policy: string | undefined, exitCode: number): boolean => {
  if (policy === 'Always') return true;
  if (policy === 'OnFailure') return exitCode !== 0;
  return false;
};

/**
 * Whether a container that exited with `exitCode` runs again: its first matching rule, else its
 * own restartPolicy, else the pod's (rules only apply to a container that sets a policy).
 */
export function containerShouldRestart(
  container: V1Container,
  spec: V1PodSpec | undefined,
  exitCode: number,
): boolean {
  if (container.restartPolicy !== undefined && container.restartPolicy !== null) {
    const rule = matchedRule(container, exitCode);
    if (rule) return rule.action === 'Restart';
    return byPolicy(container.restartPolicy, exitCode);
  }
  return byPolicy(spec?.restartPolicy ?? 'Always', exitCode);
}

/**
 * Whether a container killed while running (a failed probe) or an init container that failed runs
 * again: no exit code to match rules against, so only a container-level policy overrides the pod's.
 */
export function restartsWithoutExitCode(container: V1Container, podRestarts: boolean): boolean {
  if (container.restartPolicy === undefined || container.restartPolicy === null) return podRestarts;
  return container.restartPolicy !== 'Never';
}
