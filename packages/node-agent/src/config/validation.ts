// Whole-configuration validation: every field against the schema, then the rules that tie
// fields together. Returns all problems; the caller decides to fail.

import { ErrorList, type FieldError } from '@kh/apimachinery';
import { CREDENTIAL_VERIFICATION_POLICIES } from '@kh/runtime-manager';
import { USER_NS_UNIT_LENGTH } from '../userns/userns_manager.js';
import { parseDuration } from '../util/duration.js';
import { featureEnabled } from './feature_gates.js';
import {
  checkField,
  ENFORCE_KUBE_RESERVED,
  ENFORCE_NONE,
  ENFORCE_SYSTEM_RESERVED,
  isDisabledThreshold,
  KUBELET_CONFIG_SCHEMA,
  NODE_ALLOCATABLE_ENFORCEMENT_KEYS,
} from './schema.js';
import { KUBELET_CONFIG_API_VERSION, KUBELET_CONFIG_KIND, type KubeletConfiguration } from './types.js';

export function validateKubeletConfiguration(cfg: KubeletConfiguration): FieldError[] {
  const errs = new ErrorList();
  if (cfg.apiVersion !== KUBELET_CONFIG_API_VERSION)
    errs.notSupported('apiVersion', cfg.apiVersion, [KUBELET_CONFIG_API_VERSION]);
  if (cfg.kind !== KUBELET_CONFIG_KIND) errs.notSupported('kind', cfg.kind, [KUBELET_CONFIG_KIND]);
  const doc = cfg as unknown as Record<string, unknown>;
  for (const [key, spec] of Object.entries(KUBELET_CONFIG_SCHEMA)) {
    if (key === 'apiVersion' || key === 'kind' || spec.kind === 'ignored') continue;
    checkField(doc[key], spec, key, errs);
  }

  if (cfg.imageGCLowThresholdPercent >= cfg.imageGCHighThresholdPercent) {
    errs.invalid(
      'imageGCLowThresholdPercent',
      cfg.imageGCLowThresholdPercent,
      `must be less than imageGCHighThresholdPercent (${cfg.imageGCHighThresholdPercent})`,
    );
  }
  const maxAge = safeDuration(cfg.imageMaximumGCAge);
  const minAge = safeDuration(cfg.imageMinimumGCAge);
  if (maxAge !== undefined && minAge !== undefined && maxAge !== 0 && maxAge <= minAge) {
    errs.invalid(
      'imageMaximumGCAge',
      cfg.imageMaximumGCAge,
      `must be greater than imageMinimumGCAge (${cfg.imageMinimumGCAge})`,
    );
  }
  const monitor = safeDuration(cfg.containerLogMonitorInterval);
  if (monitor !== undefined && monitor > 0 && monitor < 3_000)
    errs.invalid(
      'containerLogMonitorInterval',
      cfg.containerLogMonitorInterval,
      'must be a positive time duration greater than or equal to 3s',
    );
  // A soft threshold without a grace period (or the reverse) can never act as configured. The
  // kubelet refuses to start on the first (ParseThresholdConfig); a threshold switched off needs none.
  for (const [signal, value] of Object.entries(cfg.evictionSoft ?? {})) {
    if (typeof value === 'string' && isDisabledThreshold(value)) continue;
    if (!(signal in (cfg.evictionSoftGracePeriod ?? {}))) {
      errs.required(
        `evictionSoftGracePeriod[${signal}]`,
        `grace period must be specified for the soft eviction threshold ${signal}`,
      );
    }
  }
  for (const signal of Object.keys(cfg.evictionSoftGracePeriod ?? {})) {
    if (!(signal in (cfg.evictionSoft ?? {}))) {
      errs.invalid(
        `evictionSoftGracePeriod[${signal}]`,
        cfg.evictionSoftGracePeriod[signal],
        'has no matching evictionSoft threshold',
      );
    }
  }
  if ((cfg.tlsCertFile === '') !== (cfg.tlsPrivateKeyFile === '')) {
    const missing = cfg.tlsCertFile === '' ? 'tlsCertFile' : 'tlsPrivateKeyFile';
    errs.required(missing, 'tlsCertFile and tlsPrivateKeyFile must be set together');
  }
  if (cfg.maxParallelImagePulls !== null && cfg.maxParallelImagePulls > 1 && cfg.serializeImagePulls) {
    errs.invalid(
      'maxParallelImagePulls',
      cfg.maxParallelImagePulls,
      'must be 1 or unset when serializeImagePulls is true',
    );
  }
  validateEnforceNodeAllocatable(cfg, errs);
  validateUserNamespaces(cfg, errs);
  validateImagePullCredentials(cfg, errs);
  validateShutdownGracePeriods(cfg, errs);
  return errs.errors;
}

/** The kubelet's rules for graceful node shutdown: whole seconds, the gates, one way to configure. */
function validateShutdownGracePeriods(cfg: KubeletConfiguration, errs: ErrorList) {
  const total = safeDuration(cfg.shutdownGracePeriod);
  const critical = safeDuration(cfg.shutdownGracePeriodCriticalPods);
  if (total === undefined || critical === undefined) return;
  const byPriority = Array.isArray(cfg.shutdownGracePeriodByPodPriority)
    ? cfg.shutdownGracePeriodByPodPriority
    : [];
  if (featureEnabled(cfg, 'GracefulNodeShutdown')) {
    if (critical > total)
      errs.invalid(
        'shutdownGracePeriodCriticalPods',
        cfg.shutdownGracePeriodCriticalPods,
        `must be <= shutdownGracePeriod ${cfg.shutdownGracePeriod}`,
      );
    for (const [field, ms] of [
      ['shutdownGracePeriod', total],
      ['shutdownGracePeriodCriticalPods', critical],
    ] as const)
      if (ms > 0 && ms < 1_000) errs.invalid(field, cfg[field], 'must be either zero or otherwise >= 1 sec');
  } else if (total > 0 || critical > 0) {
    errs.forbidden(
      'shutdownGracePeriod',
      'specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown',
    );
  }
  if (byPriority.length === 0) return;
  if (!featureEnabled(cfg, 'GracefulNodeShutdownBasedOnPodPriority'))
    errs.forbidden(
      'shutdownGracePeriodByPodPriority',
      'Specifying shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority',
    );
  else if (total > 0 || critical > 0)
    errs.forbidden(
      'shutdownGracePeriodByPodPriority',
      'Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
    );
}

/** The kubelet's rules: both fields need KubeletEnsureSecretPulledImages; the allowlist needs its policy. */
function validateImagePullCredentials(cfg: KubeletConfiguration, errs: ErrorList) {
  const policy = cfg.imagePullCredentialsVerificationPolicy;
  const allowlist = cfg.preloadedImagesVerificationAllowlist;
  if (typeof policy !== 'string' || !Array.isArray(allowlist)) return;
  if (!featureEnabled(cfg, 'KubeletEnsureSecretPulledImages')) {
    for (const [field, set] of [
      ['imagePullCredentialsVerificationPolicy', policy !== ''],
      ['preloadedImagesVerificationAllowlist', allowlist.length > 0],
    ] as const) {
      if (set) errs.forbidden(field, 'requires feature gate KubeletEnsureSecretPulledImages');
    }
    return;
  }
  if (policy !== '' && !(CREDENTIAL_VERIFICATION_POLICIES as readonly string[]).includes(policy)) {
    errs.notSupported('imagePullCredentialsVerificationPolicy', policy, CREDENTIAL_VERIFICATION_POLICIES);
  } else if (allowlist.length > 0 && policy !== 'NeverVerifyAllowlistedImages') {
    errs.invalid(
      'preloadedImagesVerificationAllowlist',
      allowlist,
      'can only be set when imagePullCredentialsVerificationPolicy is "NeverVerifyAllowlistedImages"',
    );
  }
}

/** userNamespaces.idsPerPod: whole 65536-ID units that fit in the 32-bit ID space (the kubelet's Linux rules). */
function validateUserNamespaces(cfg: KubeletConfiguration, errs: ErrorList) {
  const ids = cfg.userNamespaces?.idsPerPod;
  if (typeof ids !== 'number' || !Number.isInteger(ids)) return;
  const field = 'userNamespaces.idsPerPod';
  if (ids < USER_NS_UNIT_LENGTH) errs.invalid(field, ids, `must not be less than ${USER_NS_UNIT_LENGTH}`);
  else if (ids % USER_NS_UNIT_LENGTH !== 0)
    errs.invalid(field, ids, `must be a multiple of ${USER_NS_UNIT_LENGTH}`);
  else if (ids > 0xffffffff) errs.invalid(field, ids, `must not be more than ${0xffffffff}`);
}

/** The kubelet's rules: known keys only, `none` alone, and a cgroup for each reserved key. */
function validateEnforceNodeAllocatable(cfg: KubeletConfiguration, errs: ErrorList) {
  const keys = cfg.enforceNodeAllocatable;
  if (!Array.isArray(keys)) return;
  for (const [i, key] of keys.entries()) {
    if (typeof key !== 'string') continue;
    if (!(NODE_ALLOCATABLE_ENFORCEMENT_KEYS as readonly string[]).includes(key)) {
      errs.notSupported(`enforceNodeAllocatable[${i}]`, key, NODE_ALLOCATABLE_ENFORCEMENT_KEYS);
    } else if (key === ENFORCE_NONE && keys.length > 1) {
      errs.invalid(
        'enforceNodeAllocatable',
        keys,
        `may not contain additional enforcements when "${ENFORCE_NONE}" is specified`,
      );
    } else if (key === ENFORCE_SYSTEM_RESERVED || key === ENFORCE_KUBE_RESERVED) {
      const field = key === ENFORCE_SYSTEM_RESERVED ? 'systemReservedCgroup' : 'kubeReservedCgroup';
      if (cfg[field] === '')
        errs.required(field, `must be specified when "${key}" is contained in enforceNodeAllocatable`);
    }
  }
}

function safeDuration(text: string): number | undefined {
  try {
    return parseDuration(text);
  } catch {
    return undefined;
  }
}
