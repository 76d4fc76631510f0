// What the agent's V8 heap holds, from a .heapsnapshot (the format v8.writeHeapSnapshot writes):
// self size by node type, and the largest groups of one type and name (constructor for objects,
// function name for closures and code, the first characters of a string). It answers where the
// heap goes without opening DevTools: source text, bytecode, client-node's objects, our pods.

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

const kib = (bytes: number) => Math.round(bytes / 1024);

export function summarizeHeapSnapshot(text: string, top = 25) {
  const { snapshot, nodes, strings } = JSON.parse(text) as HeapSnapshot;
  const fields = snapshot.meta.node_fields;
  const types = snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const byType = new Map<string, number>();
  const byName = new Map<string, { bytes: number; count: number }>();
  let total = 0;
  for (let i = 0; i < nodes.length; i += fields.length) {
    const type = types[nodes[i + typeAt] ?? 0] ?? '?';
    const size = nodes[i + sizeAt] ?? 0;
    const name = (strings[nodes[i + nameAt] ?? 0] ?? '').slice(0, 60).replace(/\s+/g, ' ');
    total += size;
    byType.set(type, (byType.get(type) ?? 0) + size);
    const key = `${type}: ${name}`;
    const group = byName.get(key) ?? { bytes: 0, count: 0 };
    group.bytes += size;
    group.count++;
    byName.set(key, group);
  }
  return {
    note: 'self sizes (KiB) from the agent’s heap snapshot: per node type, and the largest groups by type and name',
    totalKiB: kib(total),
    byTypeKiB: Object.fromEntries([...byType].sort((a, b) => b[1] - a[1]).map(([t, b]) => [t, kib(b)])),
    largest: [...byName]
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .slice(0, top)
      .map(([name, g]) => ({ name, kib: kib(g.bytes), count: g.count })),
  };
}
