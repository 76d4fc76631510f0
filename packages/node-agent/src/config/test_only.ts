// Periods the kubelet hard-codes, which a test may shorten. They are hidden flags (as pflag's
// MarkHidden): parsed, but absent from --help and from KubeletConfiguration, so that no user tunes
// them by accident. The harness imports these names to pass them.

/** The test-only settings, each a Go duration. */
export interface TestOnlySettings {
  /** How often image GC runs: the kubelet's fixed ImageGCPeriod, 5m. */
  imageGCPeriod?: string;
}

export const IMAGE_GC_PERIOD_FLAG = 'image-gc-period';

/** The flags that carry `settings` to the agent. */
export function testOnlyFlags(settings: TestOnlySettings): string[] {
  return settings.imageGCPeriod ? [`--${IMAGE_GC_PERIOD_FLAG}=${settings.imageGCPeriod}`] : [];
}
