// Kubernetes resource quantities ("100Mi", "500m", "1.5G", "2e3"), with the semantics of
// k8s.io/apimachinery's resource.Quantity: exact fixed-point values (never a float inside),
// precision down to nano-units, the suffix family remembered for printing, canonical text.

/** How a quantity prints: binary suffixes (Ki..Ei), decimal suffixes (n..E) or an exponent (e3). */
export type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

/**
 * A quantity text or wire value that cannot be read. The message names the input; `reason` is the
 * message without it, for callers (field errors) that already show the value.
 */
export class QuantityError extends Error {
  override name = 'QuantityError';
  constructor(
    readonly input: unknown,
    readonly reason: string,
  ) {
    super(`invalid quantity ${describe(input)}: ${reason}`);
  }
}

function describe(input: unknown): string {
  return typeof input === 'string' ? JSON.stringify(input) : String(input);
}

/** Values are held as bigint multiples of 10^-9, the finest precision Kubernetes keeps. */
const NANO = 1_000_000_000n;

const BINARY_SHIFT: Record<string, bigint> = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };
const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const DECIMAL_SUFFIX = new Map(Object.entries(DECIMAL_EXPONENT).map(([s, e]) => [e, s]));

/** Kubernetes silently caps binary-suffixed values at the int64 maximum; so do we. */
const MAX_BINARY = ((1n << 63n) - 1n) * NANO;
/** Beyond this an exponent would only build enormous integers: no resource is 10^1000 of anything. */
const MAX_EXPONENT = 1000;

const SUFFIX_HELP = 'one of n u m k M G T P E Ki Mi Gi Ti Pi Ei, or e/E followed by an integer';
const NUMBER = /^([+-]?)(\d+\.?\d*|\.\d+)(.*)$/s;
const EXPONENT = /^[eE]([+-]?\d+)$/;

/** a / b rounded away from zero, as Kubernetes rounds when it drops precision. */
function divAwayFromZero(a: bigint, b: bigint): bigint {
  const q = a / b;
  if (a % b === 0n) return q;
  return a < 0n ? q - 1n : q + 1n;
}

function toBigInt(value: number | bigint, what: string): bigint {
  if (typeof value === 'bigint') return value;
  if (!Number.isSafeInteger(value)) throw new QuantityError(value, `${what} must be a safe integer`);
  return BigInt(value);
}

/** An immutable Kubernetes resource quantity. */
export class Quantity {
  private constructor(
    /** The value times 10^9. */
    private readonly nano: bigint,
    readonly format: QuantityFormat,
  ) {}

  /**
   * Reads the quantity grammar: an optionally signed decimal number ("1", "1.5", "1.", ".5")
   * followed by a binary suffix, a decimal suffix or a decimal exponent. Precision finer than
   * 1n is rounded away from zero ("0.1n" is 1n). Throws a QuantityError naming the input.
   * Unlike Kubernetes, a suffix with no digits before it ("Mi") is an error, not zero.
   */
  static parse(text: string): Quantity {
    if (typeof text !== 'string') throw new QuantityError(text, `expected a string, got ${typeof text}`);
    if (text === '') throw new QuantityError(text, 'empty string');
    const m = NUMBER.exec(text);
    if (!m) throw new QuantityError(text, 'expected a number such as 1, 1.5 or .5, then a suffix');
    const [, sign, number, suffix] = m as unknown as [string, string, string, string];
    const [whole = '', fraction = ''] = number.split('.');
    // digits * 10^exp10 * multiplier is the magnitude as written.
    const digits = BigInt(`${whole}${fraction}` || '0');
    let exp10 = -fraction.length;
    let multiplier = 1n;
    let format: QuantityFormat;
    const shift = BINARY_SHIFT[suffix];
    const decimal = DECIMAL_EXPONENT[suffix];
    const exponent = EXPONENT.exec(suffix);
    if (shift !== undefined) {
      multiplier = 1n << shift;
      format = 'BinarySI';
    } else if (decimal !== undefined) {
      exp10 += decimal;
      format = 'DecimalSI';
    } else if (exponent) {
      const e = Number(exponent[1]);
      if (Math.abs(e) > MAX_EXPONENT)
        throw new QuantityError(text, `exponent ${e} is outside ±${MAX_EXPONENT}`);
      exp10 += e;
      format = 'DecimalExponent';
    } else {
      throw new QuantityError(text, `unable to parse quantity's suffix "${suffix}" (want ${SUFFIX_HELP})`);
    }
    const scale = exp10 + 9;
    let nano =
      scale >= 0
        ? digits * multiplier * 10n ** BigInt(scale)
        : divAwayFromZero(digits * multiplier, 10n ** BigInt(-scale));
    if (format === 'BinarySI') {
      if (nano > MAX_BINARY) nano = MAX_BINARY;
      // A fraction of a byte has no binary spelling; Kubernetes switches such values to decimal.
      else if (nano > 0n && nano < NANO) format = 'DecimalSI';
    }
    return new Quantity(sign === '-' ? -nano : nano, format);
  }

  /**
   * Reads a quantity as it arrives in a JSON or YAML object: a string (surrounding white space
   * ignored, as the apiserver's decoder does) or a plain number such as 2 or 0.5.
   */
  static fromJSON(value: unknown): Quantity {
    if (typeof value === 'string') return Quantity.parse(value.trim());
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new QuantityError(value, 'not a finite number');
      return Quantity.parse(String(value));
    }
    throw new QuantityError(
      value,
      `expected a string or a number, got ${value === null ? 'null' : typeof value}`,
    );
  }

  /** fromJSON, or undefined for anything that is not a valid quantity. */
  static tryFromJSON(value: unknown): Quantity | undefined {
    try {
      return Quantity.fromJSON(value);
    } catch (err) {
      if (err instanceof QuantityError) return undefined;
      throw err;
    }
  }

  /** A whole number of base units (Kubernetes' NewQuantity). */
  static fromValue(value: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(toBigInt(value, 'value') * NANO, format);
  }

  /** A number of thousandths of the base unit (Kubernetes' NewMilliQuantity). */
  static fromMilli(milli: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(toBigInt(milli, 'milli value') * 1_000_000n, format);
  }

  /** The value in base units, rounded away from zero (Kubernetes' Value). */
  value(): bigint {
    return divAwayFromZero(this.nano, NANO);
  }

  /** The value in thousandths, rounded away from zero (Kubernetes' MilliValue). */
  milliValue(): bigint {
    return divAwayFromZero(this.nano, 1_000_000n);
  }

  /** A float for scoring and display only: it may lose precision. */
  asApproximateFloat64(): number {
    return Number(this.nano / NANO) + Number(this.nano % NANO) / 1e9;
  }

  /** The sum; a zero left side takes the right side's format, as in Kubernetes. */
  add(other: Quantity): Quantity {
    return new Quantity(this.nano + other.nano, this.nano === 0n ? other.format : this.format);
  }

  /** The difference; a zero left side takes the right side's format, as in Kubernetes. */
  sub(other: Quantity): Quantity {
    return new Quantity(this.nano - other.nano, this.nano === 0n ? other.format : this.format);
  }

  /** -1, 0 or 1 as this is less than, equal to or greater than other. */
  cmp(other: Quantity): -1 | 0 | 1 {
    return this.nano < other.nano ? -1 : this.nano > other.nano ? 1 : 0;
  }

  /** -1, 0 or 1 by the sign of the value. */
  sign(): -1 | 0 | 1 {
    return this.nano < 0n ? -1 : this.nano > 0n ? 1 : 0;
  }

  isZero(): boolean {
    return this.nano === 0n;
  }

  /**
   * The canonical text the apiserver would serialise: no fractional digits, no lost precision,
   * the largest suffix of the quantity's format that allows that.
   */
  toString(): string {
    if (this.nano === 0n) return '0';
    const sign = this.nano < 0n ? '-' : '';
    const abs = this.nano < 0n ? -this.nano : this.nano;
    // Small or fractional binary values print in decimal so that nothing is rounded.
    if (this.format === 'BinarySI' && abs >= 1024n * NANO && abs % NANO === 0n) {
      let mantissa = abs / NANO;
      let power = 0;
      while (power < BINARY_SUFFIXES.length - 1 && mantissa % 1024n === 0n) {
        mantissa /= 1024n;
        power++;
      }
      return `${sign}${mantissa}${BINARY_SUFFIXES[power]}`;
    }
    let mantissa = abs;
    let exponent = -9;
    while (mantissa % 10n === 0n) {
      mantissa /= 10n;
      exponent++;
    }
    // Suffixes step by 10^3: move leftover powers of ten back into the mantissa.
    const extra = ((exponent % 3) + 3) % 3;
    mantissa *= 10n ** BigInt(extra);
    exponent -= extra;
    const suffix = this.format === 'DecimalExponent' ? undefined : DECIMAL_SUFFIX.get(exponent);
    // DecimalSI stops at E (10^18); larger values fall back to an exponent rather than lose it.
    const tail = suffix ?? (exponent === 0 ? '' : `e${exponent}`);
    return `${sign}${mantissa}${tail}`;
  }

  toJSON(): string {
    return this.toString();
  }
}
