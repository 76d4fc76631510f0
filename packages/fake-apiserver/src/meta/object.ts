/** Objects are kept as plain JSON, exactly as they are served. */
// biome-ignore lint/suspicious/noExplicitAny: Kubernetes objects are schemaless JSON at this layer.
export type KObject = Record<string, any>;

/** Clock used by controllers and timestamps; tests inject their own. */
export type { Clock } from '@kh/apimachinery';

/** RFC 3339 with second precision, as metav1.Time serialises. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
