import type { KObject } from '../meta/object.js';
import { ageColumn, nameColumn } from '../registry/printers.js';
import type { ResourceDef, TableColumn } from '../registry/resource.js';

const DEFAULT_COLUMNS: TableColumn[] = [nameColumn, ageColumn];

function rowObject(obj: KObject, include: string): KObject | undefined {
  if (include === 'None') return undefined;
  if (include === 'Object') return obj;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}

/** Builds a meta.k8s.io Table of `items` with the resource's printer columns. */
export function toTable(
  def: ResourceDef,
  items: KObject[],
  listMeta: KObject,
  opts: { apiVersion: string; includeObject: string; now: number },
): KObject {
  const columns = def.columns ?? DEFAULT_COLUMNS;
  return {
    kind: 'Table',
    apiVersion: opts.apiVersion,
    metadata: listMeta,
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description,
      priority: c.priority ?? 0,
    })),
    rows: items.map((o) => {
      const row: KObject = { cells: columns.map((c) => c.cell(o, opts.now)) };
      const object = rowObject(o, opts.includeObject);
      if (object !== undefined) row.object = object;
      return row;
    }),
  };
}
