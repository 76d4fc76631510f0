// Node pressure as the rest of the agent reads it: node status reports the conditions. The
// eviction manager decides them.

export interface PressureSource {
  isUnderMemoryPressure(): boolean;
  isUnderDiskPressure(): boolean;
  isUnderPIDPressure(): boolean;
}

export const noPressure: PressureSource = {
  isUnderMemoryPressure: () => false,
  isUnderDiskPressure: () => false,
  isUnderPIDPressure: () => false,
};
