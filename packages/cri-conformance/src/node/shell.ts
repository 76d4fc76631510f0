/** One argument for `sh -c`, quoted so the shell passes it through unchanged. */
export const shellQuote = (arg: string): string => `'${arg.replaceAll("'", `'\\''`)}'`;
