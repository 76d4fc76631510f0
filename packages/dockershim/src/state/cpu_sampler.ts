/**
 * usage_nano_cores is a rate: the shim remembers the previous cumulative CPU sample per container and
 * derives the rate from two samples, as cadvisor and containerd do. The first sample has no rate.
 */
export class CpuSampler {
  private readonly last = new Map<string, { at: bigint; usage: bigint }>();

  nanoCores(id: string, at: bigint, usage: bigint): bigint | undefined {
    const prev = this.last.get(id);
    this.last.set(id, { at, usage });
    if (!prev || at <= prev.at || usage < prev.usage) return undefined;
    return ((usage - prev.usage) * 1_000_000_000n) / (at - prev.at);
  }

  forget(id: string): void {
    this.last.delete(id);
  }
}
