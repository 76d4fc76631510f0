// The filter form above the matrix: runtime, scenario, failures only, reset. It reports what the
// user chose and shows whatever state the page applied (also one restored from a link).
import type { ReportModel } from '../model.js';
import { byId, h } from './dom.js';
import type { ViewState } from './state.js';

export class FilterForm {
  private readonly runtime = byId<HTMLSelectElement>('filter-runtime');
  private readonly scenario = byId<HTMLSelectElement>('filter-scenario');
  private readonly failures = byId<HTMLInputElement>('filter-failures');

  /** `change` gets what the user set; the page merges it into its state. */
  constructor(model: ReportModel, change: (update: Partial<ViewState>) => void) {
    this.runtime.replaceChildren(
      h('option', { value: '' }, 'All runtimes'),
      ...model.runtimes.map((r) => h('option', { value: r.name }, r.name)),
    );
    this.scenario.replaceChildren(
      h('option', { value: '' }, 'All scenarios'),
      ...model.scenarios.map((sc) => h('option', { value: sc }, sc)),
    );
    this.runtime.addEventListener('change', () => change({ runtime: this.runtime.value || undefined }));
    this.scenario.addEventListener('change', () => change({ scenario: this.scenario.value || undefined }));
    this.failures.addEventListener('change', () => change({ failuresOnly: this.failures.checked }));
    byId('filter-reset').addEventListener('click', () =>
      change({ runtime: undefined, scenario: undefined, failuresOnly: false, cell: undefined }),
    );
  }

  show(state: ViewState): void {
    this.runtime.value = state.runtime ?? '';
    this.scenario.value = state.scenario ?? '';
    this.failures.checked = state.failuresOnly;
  }
}
