// Kubernetes resource quantities ("100Mi", "500m", "1.5G", "2e3") with exact arithmetic.
// Values are kept as bigint milli-units so that CPU millicores and byte counts both stay exact;
// anything finer than a milli-unit rounds up, as Kubernetes' MilliValue does.

export type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

/** Decimal SI suffixes as powers of ten. */
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

const SHAPE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$/;

export class Quantity {
  private constructor(
    /** Value in thousandths of the base unit. */
    readonly milli: bigint,
    readonly format: QuantityFormat,
  ) {}

  static parse(text: string): Quantity {
    if (typeof text !== 'string' || text.trim() === '')
      throw new Error('quantity must be a non-empty string');
    const m = SHAPE.exec(text);
    if (!m)
      throw new Error(
        `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
      );
    const [, sign, digits, suffix] = m as unknown as [string, string, string, string];
    const [intPart = '', fracPart = ''] = digits.split('.');
    // mantissa * 10^-fracDigits is the number as written.
    let mantissa = BigInt((intPart || '0') + fracPart);
    let exp10 = -fracPart.length;
    let mult = 1n;
    let format: QuantityFormat;
    if (suffix in BINARY) {
      mult = BINARY[suffix] as bigint;
      format = 'BinarySI';
    } else if (suffix in DECIMAL) {
      exp10 += DECIMAL[suffix] as number;
      format = 'DecimalSI';
    } else if (/^[eE][+-]?\d+$/.test(suffix)) {
      exp10 += Number(suffix.slice(1));
      format = 'DecimalExponent';
    } else {
      throw new Error(`unable to parse quantity's suffix "${suffix}"`);
    }
    if (sign === '-') mantissa = -mantissa;
    // Scale to milli-units: value * 1000 = mantissa * mult * 10^(exp10 + 3).
    const shift = exp10 + 3;
    let milli: bigint;
    if (shift >= 0) {
      milli = mantissa * mult * 10n ** BigInt(shift);
    } else {
      const div = 10n ** BigInt(-shift);
      const num = mantissa * mult;
      milli = num / div;
      if (num % div !== 0n && num > 0n) milli += 1n; // round up, away from zero for positives
    }
    return new Quantity(milli, format);
  }

  static fromMilli(milli: bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(milli, format);
  }

  static fromValue(value: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(BigInt(value) * 1000n, format);
  }

  /** The value in base units, rounded up (Kubernetes' Quantity.Value). */
  value(): bigint {
    const q = this.milli / 1000n;
    return this.milli % 1000n > 0n ? q + 1n : q;
  }

  milliValue(): bigint {
    return this.milli;
  }

  add(o: Quantity): Quantity {
    return new Quantity(this.milli + o.milli, this.format);
  }

  sub(o: Quantity): Quantity {
    return new Quantity(this.milli - o.milli, this.format);
  }

  cmp(o: Quantity): number {
    return this.milli < o.milli ? -1 : this.milli > o.milli ? 1 : 0;
  }

  isZero(): boolean {
    return this.milli === 0n;
  }

  /** Canonical text in this quantity's format, as the API server would serialise it. */
  toString(): string {
    const neg = this.milli < 0n;
    const abs = neg ? -this.milli : this.milli;
    const s = neg ? '-' : '';
    if (abs === 0n) return '0';
    if (this.format === 'BinarySI' && abs % 1000n === 0n) {
      const bytes = abs / 1000n;
      // Below 1Ki Kubernetes switches to decimal suffixes; above, a plain integer when no
      // binary suffix divides it.
      if (bytes >= 1024n) {
        for (const suffix of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki']) {
          const unit = BINARY[suffix] as bigint;
          if (bytes % unit === 0n) return `${s}${bytes / unit}${suffix}`;
        }
        return `${s}${bytes}`;
      }
    }
    // DecimalSI (and the fallbacks): the largest suffix that keeps an integer mantissa.
    if (abs % 1000n !== 0n) return `${s}${abs}m`;
    let value = abs / 1000n;
    const suffixes = ['', 'k', 'M', 'G', 'T', 'P', 'E'];
    let i = 0;
    while (i < suffixes.length - 1 && value % 1000n === 0n) {
      value /= 1000n;
      i++;
    }
    if (this.format === 'DecimalExponent') return `${s}${value}${i === 0 ? '' : `e${i * 3}`}`;
    return `${s}${value}${suffixes[i]}`;
  }

  toJSON(): string {
    return this.toString();
  }
}

/** A value that is either an absolute quantity or a percentage of capacity ("10%"), as eviction thresholds are. */
export type QuantityOrPercent = { quantity: Quantity } | { percentage: number };

export function parseQuantityOrPercent(text: string): QuantityOrPercent {
  if (typeof text === 'string' && text.endsWith('%')) {
    const body = text.slice(0, -1);
    if (!/^\d+(\.\d+)?$/.test(body)) throw new Error(`invalid percentage "${text}"`);
    const pct = Number(body);
    if (pct <= 0 || pct > 100) throw new Error(`percentage must be greater than 0% and at most 100%`);
    return { percentage: pct / 100 };
  }
  return { quantity: Quantity.parse(text) };
}
