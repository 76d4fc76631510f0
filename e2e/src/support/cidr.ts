/** Whether an IPv4 address lies inside an IPv4 CIDR (the cluster is IPv4-only). */
export function inCidr(ip: string, cidr: string): boolean {
  const [base = '', bits = ''] = cidr.split('/');
  const num = (addr: string) => {
    const parts = addr.split('.').map(Number);
    if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return undefined;
    return parts.reduce((n, p) => n * 256 + p, 0);
  };
  const [a, b, prefix] = [num(ip), num(base), Number(bits)];
  if (a === undefined || b === undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > 32)
    return false;
  const block = 2 ** (32 - prefix);
  return Math.floor(a / block) === Math.floor(b / block);
}
