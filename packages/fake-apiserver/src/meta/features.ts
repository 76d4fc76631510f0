// kube-apiserver's --feature-gates for the gates this server acts on. Like kube-apiserver's
// DefaultFeatureGate it is process-wide: cli.ts sets it once from the flag.

export const API_FEATURE_GATE_DEFAULTS = {
  /** Alpha in 1.34 (KEP-5307): regular containers may set restartPolicy and restartPolicyRules. */
  ContainerRestartRules: false,
} as const;

export type ApiFeatureGate = keyof typeof API_FEATURE_GATE_DEFAULTS;
export type ApiFeatureGates = Record<ApiFeatureGate, boolean>;

let gates: ApiFeatureGates = { ...API_FEATURE_GATE_DEFAULTS };

/** "A=true,B=false" as kube-apiserver takes it; an unknown gate or value is an error. */
export function parseFeatureGates(flag: string): ApiFeatureGates {
  const out: ApiFeatureGates = { ...API_FEATURE_GATE_DEFAULTS };
  for (const pair of flag.split(',').filter((p) => p.trim() !== '')) {
    const [name = '', value] = pair.split('=').map((s) => s.trim());
    if (!(name in API_FEATURE_GATE_DEFAULTS))
      throw new Error(`--feature-gates: unrecognized feature gate: ${name}`);
    if (value !== 'true' && value !== 'false')
      throw new Error(`--feature-gates: invalid value of ${name}=${value}, err: must be true or false`);
    out[name as ApiFeatureGate] = value === 'true';
  }
  return out;
}

export function setFeatureGates(next: ApiFeatureGates): void {
  gates = { ...next };
}

export function featureGates(): ApiFeatureGates {
  return gates;
}
