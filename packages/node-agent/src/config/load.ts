// Loading order, as the kubelet does it: defaults, then the --config file, then flags.
import { readFile } from 'node:fs/promises';
import { ErrorList, type FieldError } from '@kh/apimachinery';
import { parseDocument } from 'yaml';
import { ConfigError } from './field_errors.js';
import { type ResolvedKubeletConfig, resolveKubeletConfiguration } from './resolve.js';
import { decodeObject, KUBELET_CONFIG_SCHEMA } from './schema.js';
import { defaultKubeletConfiguration, type KubeletConfiguration } from './types.js';
import { validateKubeletConfiguration } from './validation.js';

export type PartialKubeletConfiguration = Partial<
  Omit<KubeletConfiguration, 'authentication' | 'authorization'>
> & {
  authentication?: DeepPartial<KubeletConfiguration['authentication']>;
  authorization?: DeepPartial<KubeletConfiguration['authorization']>;
};
type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

/** Decodes a KubeletConfiguration YAML/JSON document, reporting syntax errors and unknown or mistyped fields. */
export function decodeKubeletConfiguration(text: string): {
  config: PartialKubeletConfiguration;
  errors: FieldError[];
} {
  const errs = new ErrorList();
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    for (const e of doc.errors) {
      const pos = e.linePos?.[0];
      errs.invalid(
        pos ? `<line ${pos.line}, column ${pos.col}>` : '<document>',
        null,
        e.message.split(/ at line \d+|\n/)[0] ?? e.message,
      );
    }
    return { config: {}, errors: errs.errors };
  }
  const raw: unknown = doc.toJS();
  if (raw === null || raw === undefined) {
    errs.required('apiVersion', 'the config file is empty');
    return { config: {}, errors: errs.errors };
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    errs.invalid('<document>', raw, 'must be a KubeletConfiguration object');
    return { config: {}, errors: errs.errors };
  }
  const config = decodeObject(raw as Record<string, unknown>, KUBELET_CONFIG_SCHEMA, '', errs);
  if (config.apiVersion === undefined) errs.required('apiVersion');
  if (config.kind === undefined) errs.required('kind');
  return { config: config as PartialKubeletConfiguration, errors: errs.errors };
}

/** Layers partial configurations over the defaults; later layers win. Nested objects merge, maps and lists replace. */
export function mergeKubeletConfiguration(...layers: PartialKubeletConfiguration[]): KubeletConfiguration {
  const out = defaultKubeletConfiguration();
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer)) {
      if (value === undefined) continue;
      const target = out as unknown as Record<string, unknown>;
      if (key === 'authentication' || key === 'authorization') target[key] = deepMerge(target[key], value);
      else target[key] = value;
    }
  }
  return out;
}

function deepMerge(base: unknown, over: unknown): unknown {
  if (typeof base !== 'object' || base === null || typeof over !== 'object' || over === null) return over;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) if (v !== undefined) out[k] = deepMerge(out[k], v);
  return out;
}

export interface LoadedConfig {
  config: KubeletConfiguration;
  resolved: ResolvedKubeletConfig;
}

/**
 * Builds the effective configuration from an optional file and flag overrides; throws a
 * ConfigError listing every problem (file syntax, unknown fields, invalid values).
 */
export async function loadKubeletConfiguration(
  configFile: string | undefined,
  flagOverrides: PartialKubeletConfiguration = {},
): Promise<LoadedConfig> {
  let fromFile: PartialKubeletConfiguration = {};
  const errors: FieldError[] = [];
  if (configFile) {
    let text: string;
    try {
      text = await readFile(configFile, 'utf8');
    } catch (e) {
      throw new ConfigError(`config file ${configFile}`, [
        { type: 'FieldValueInvalid', field: '--config', value: configFile, detail: (e as Error).message },
      ]);
    }
    const decoded = decodeKubeletConfiguration(text);
    errors.push(...decoded.errors);
    fromFile = decoded.config;
  }
  // Mistyped fields were dropped while decoding, so validating the merge adds only new problems.
  const config = mergeKubeletConfiguration(fromFile, flagOverrides);
  errors.push(...validateKubeletConfiguration(config));
  if (errors.length > 0)
    throw new ConfigError(configFile ? `configuration (${configFile} and flags)` : 'configuration', errors);
  return { config, resolved: resolveKubeletConfiguration(config) };
}
