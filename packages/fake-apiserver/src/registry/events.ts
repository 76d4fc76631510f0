import type { KObject } from '../meta/object.js';
import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { eventColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

const eventFields = {
  ...metadataFields,
  'involvedObject.kind': (o: KObject) => o.involvedObject?.kind ?? '',
  'involvedObject.namespace': (o: KObject) => o.involvedObject?.namespace ?? '',
  'involvedObject.name': (o: KObject) => o.involvedObject?.name ?? '',
  'involvedObject.uid': (o: KObject) => o.involvedObject?.uid ?? '',
  'involvedObject.apiVersion': (o: KObject) => o.involvedObject?.apiVersion ?? '',
  'involvedObject.resourceVersion': (o: KObject) => o.involvedObject?.resourceVersion ?? '',
  'involvedObject.fieldPath': (o: KObject) => o.involvedObject?.fieldPath ?? '',
  reason: (o: KObject) => o.reason ?? '',
  reportingComponent: (o: KObject) => o.reportingComponent ?? '',
  source: (o: KObject) => o.source?.component ?? '',
  type: (o: KObject) => o.type ?? '',
};

/** core/v1 events. */
export const events: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'events',
  singular: 'event',
  kind: 'Event',
  namespaced: true,
  shortNames: ['ev'],
  typeName: 'io.k8s.api.core.v1.Event',
  storage: 'events',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: false,
  allowCreateOnUpdate: true,
  fields: eventFields,
  columns: eventColumns,
  validate(ev, errs) {
    validateObjectMeta(ev, errs, true);
    if (ev.involvedObject?.namespace && ev.involvedObject.namespace !== ev.metadata.namespace) {
      errs.invalid('involvedObject.namespace', ev.involvedObject.namespace, 'does not match event.namespace');
    }
  },
};

function drop<T extends KObject>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** events.k8s.io/v1: the same storage seen through the newer field names. */
export const eventsV1: ResourceDef = {
  ...events,
  group: 'events.k8s.io',
  typeName: 'io.k8s.api.events.v1.Event',
  shortNames: ['ev'],
  fields: {
    ...metadataFields,
    'regarding.kind': eventFields['involvedObject.kind'],
    'regarding.namespace': eventFields['involvedObject.namespace'],
    'regarding.name': eventFields['involvedObject.name'],
    'regarding.uid': eventFields['involvedObject.uid'],
    reason: eventFields.reason,
    reportingController: eventFields.reportingComponent,
    type: eventFields.type,
  },
  toView(e) {
    return drop({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: e.metadata,
      eventTime: e.eventTime ?? null,
      series: e.series,
      reportingController: e.reportingComponent,
      reportingInstance: e.reportingInstance,
      action: e.action,
      reason: e.reason,
      regarding: e.involvedObject,
      related: e.related,
      note: e.message,
      type: e.type,
      deprecatedSource: e.source,
      deprecatedFirstTimestamp: e.firstTimestamp,
      deprecatedLastTimestamp: e.lastTimestamp,
      deprecatedCount: e.count,
    });
  },
  fromView(e) {
    return drop({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: e.metadata,
      eventTime: e.eventTime,
      series: e.series,
      reportingComponent: e.reportingController,
      reportingInstance: e.reportingInstance,
      action: e.action,
      reason: e.reason,
      involvedObject: e.regarding ?? {},
      related: e.related,
      message: e.note,
      type: e.type,
      source: e.deprecatedSource,
      firstTimestamp: e.deprecatedFirstTimestamp,
      lastTimestamp: e.deprecatedLastTimestamp,
      count: e.deprecatedCount,
    });
  },
};
