/** Keeps the last `max` lines of a process's output, for log excerpts. */
export class LineTail {
  private readonly lines: string[] = [];
  private partial = '';

  constructor(private readonly max = 2_000) {}

  push(chunk: Buffer | string): void {
    const text = this.partial + chunk.toString();
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    for (const p of parts) this.add(p);
  }

  tail(n: number): string[] {
    const all = this.partial ? [...this.lines, this.partial] : this.lines;
    return all.slice(-n);
  }

  private add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.max) this.lines.splice(0, this.lines.length - this.max);
  }
}
