export type * from './backends/types.js';
export { createChecks } from './framework/checks.js';
export {
  AssertionFailure,
  type Checks,
  type CriItem,
  type CriView,
  type Scenario,
  type ScenarioContext,
} from './framework/scenario.js';
export { toJUnit } from './results/junit.js';
export * from './results/model.js';
export { countOutcomes, formatMatrix } from './results/table.js';
export { writeResults } from './results/writer.js';
