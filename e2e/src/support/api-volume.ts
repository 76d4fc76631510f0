// Upstream's configMap and secret volume files come in near-twin pairs (configmap_volume.go and
// projected_configmap.go, secrets_volume.go and projected_secret.go): the same cases, with the
// object reached through its own volume type or through a projected volume's source. A case
// builder takes one of these and stays the same for both.
import type { V1KeyToPath, V1Volume } from '@kubernetes/client-node';

/** setPodNonRootUser's uid (nonRootTestUserID). */
export const NON_ROOT_UID = 1000;

export interface ApiVolumeOptions {
  items?: V1KeyToPath[];
  defaultMode?: number;
  optional?: boolean;
}

/** A pod volume named `name` holding the object `ref`. */
export type ApiVolume = (name: string, ref: string, opts?: ApiVolumeOptions) => V1Volume;

export const configMapVolume: ApiVolume = (name, ref, opts = {}) => ({
  name,
  configMap: { name: ref, ...opts },
});

/** A projected volume with the config map as its one source; defaultMode is the projection's. */
export const projectedConfigMapVolume: ApiVolume = (name, ref, { defaultMode, ...source } = {}) => ({
  name,
  projected: {
    ...(defaultMode !== undefined ? { defaultMode } : {}),
    sources: [{ configMap: { name: ref, ...source } }],
  },
});
