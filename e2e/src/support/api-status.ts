// What the API answered a call it refused, as upstream's apierrors.IsForbidden / IsNotFound read it.

/** Status `code` and `reason` of a refused API call (client-node's ApiException carries the Status). */
export async function refusal(
  call: Promise<unknown>,
): Promise<{ code?: number; reason?: string; message?: string }> {
  try {
    await call;
    return {};
  } catch (e) {
    const { code, body } = e as { code?: number; body?: unknown };
    const status =
      typeof body === 'string' ? (JSON.parse(body) as { reason?: string; message?: string }) : {};
    return { code, reason: status.reason, message: status.message };
  }
}
