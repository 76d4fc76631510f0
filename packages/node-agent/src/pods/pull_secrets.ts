// The image pull secrets a pod names, read from the API for each sync as the kubelet does. A
// secret that cannot be read is skipped with a warning: the pull then tries without it and,
// if the registry insists, fails with ErrImagePull, which is what the user sees.
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { PodApi } from '../api/pod_api.js';
import { type Logger, silentLogger } from '../util/log.js';

export async function podPullSecrets(
  api: Pick<PodApi, 'getSecret'>,
  pod: V1Pod,
  log: Logger = silentLogger,
): Promise<V1Secret[]> {
  const namespace = pod.metadata?.namespace ?? 'default';
  const secrets: V1Secret[] = [];
  for (const ref of pod.spec?.imagePullSecrets ?? []) {
    if (!ref.name) continue;
    try {
      const secret = await api.getSecret(namespace, ref.name);
      if (secret) secrets.push(secret);
      else
        log.info('Unable to retrieve pull secret, the image pull may not succeed', {
          pod: `${namespace}/${pod.metadata?.name}`,
          secret: ref.name,
          err: 'not found',
        });
    } catch (err) {
      log.info('Unable to retrieve pull secret, the image pull may not succeed', {
        pod: `${namespace}/${pod.metadata?.name}`,
        secret: ref.name,
        err,
      });
    }
  }
  return secrets;
}
