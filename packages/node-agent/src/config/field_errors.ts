// ConfigError: how the agent refuses bad start-up input (config file, flags, thresholds).
import { type FieldError, formatFieldError } from '@kh/apimachinery';

/** Thrown when start-up input is invalid; `errors` holds every problem found, one per line. */
export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly errors: FieldError[],
  ) {
    super(`invalid ${source}:\n${errors.map((e) => `  - ${formatFieldError(e)}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}
