// --image-service-endpoint: the kubelet may talk to an image service that listens apart from the
// runtime service. The agent then holds two CRI clients; image calls (pulls, lists, removals,
// ImageFsInfo) use the second one.
import { CriClient, type CriClientOptions } from '@kh/cri-api';

/**
 * A client for the image service when it has its own endpoint, or undefined when the runtime's
 * endpoint serves images too (the flag unset or naming the same endpoint). A dead endpoint fails
 * like the runtime's does at start-up, naming the endpoint.
 */
export async function connectImageService(
  endpoints: { containerRuntimeEndpoint: string; imageServiceEndpoint: string },
  options: CriClientOptions,
): Promise<CriClient | undefined> {
  const { containerRuntimeEndpoint, imageServiceEndpoint } = endpoints;
  if (!imageServiceEndpoint || imageServiceEndpoint === containerRuntimeEndpoint) return undefined;
  const client = await CriClient.connect(imageServiceEndpoint, options).catch((e: Error) => {
    throw new Error(`validate CRI image endpoint ${imageServiceEndpoint}: ${e.message}`);
  });
  // Like the kubelet, check the image API answers before relying on it.
  try {
    await client.imageFsInfo({});
  } catch (e) {
    client.close();
    throw new Error(`validate CRI image endpoint ${imageServiceEndpoint}: ${(e as Error).message}`);
  }
  return client;
}
