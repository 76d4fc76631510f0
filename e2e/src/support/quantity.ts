/** Kubernetes quantities as bytes or plain numbers (enough for memory and counts). */
export function parseQuantity(q: string): number {
  const m = /^([0-9.]+)([A-Za-z]*)$/.exec(q.trim());
  if (!m) return Number.NaN;
  const units: Record<string, number> = {
    '': 1,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
    m: 1e-3,
  };
  const mult = units[m[2]!];
  return mult === undefined ? Number.NaN : Number(m[1]) * mult;
}
