// Field errors in the shape Kubernetes prints them ("spec.port: Invalid value: 70000: must be
// between 1 and 65535"), so a bad config names every problem at once instead of the first one.

export type FieldErrorType = 'Invalid value' | 'Required value' | 'Unsupported value' | 'Unknown field';

export interface FieldError {
  type: FieldErrorType;
  field: string;
  value?: unknown;
  detail: string;
}

export function formatFieldError(e: FieldError): string {
  if (e.type === 'Unknown field') return `${e.field}: unknown field${e.detail ? `: ${e.detail}` : ''}`;
  if (e.type === 'Required value') return `${e.field}: Required value${e.detail ? `: ${e.detail}` : ''}`;
  return `${e.field}: ${e.type}: ${JSON.stringify(e.value)}${e.detail ? `: ${e.detail}` : ''}`;
}

/** Thrown when start-up input is invalid; `errors` holds every problem found. */
export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly errors: FieldError[],
  ) {
    super(`invalid ${source}:\n${errors.map((e) => `  - ${formatFieldError(e)}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Collects errors while walking a document. */
export class FieldErrorList {
  readonly errors: FieldError[] = [];

  invalid(field: string, value: unknown, detail: string): void {
    this.errors.push({ type: 'Invalid value', field, value, detail });
  }

  required(field: string, detail = ''): void {
    this.errors.push({ type: 'Required value', field, detail });
  }

  unsupported(field: string, value: unknown, allowed: readonly string[]): void {
    this.errors.push({
      type: 'Unsupported value',
      field,
      value,
      detail: `supported values: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`,
    });
  }

  unknown(field: string): void {
    this.errors.push({ type: 'Unknown field', field, detail: '' });
  }
}
