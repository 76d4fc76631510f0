import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * What `import()` takes for a module named on the command line or in a config file: a path
 * (`./x.js`, `/abs/x.js`, relative to `base`) as a file URL, a package name as it is.
 */
export function moduleSpecifier(spec: string, base = process.cwd()): string {
  return spec.startsWith('.') || isAbsolute(spec) ? pathToFileURL(resolve(base, spec)).href : spec;
}
