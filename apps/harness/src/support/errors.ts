// A thrown value's message, for reasons and warnings: anything may be thrown, not only Errors.
export const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));
