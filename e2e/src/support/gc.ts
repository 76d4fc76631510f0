// garbage_collector_test.go's bounds (test/e2e_node), for the scenarios that mirror it.

/** setupDuration (10 min): upstream's wait for every container to reach its restart count. */
export const GC_SETUP_MS = 10 * 60_000;
/** garbageCollectDuration (3 min): upstream's waits for dead copies, and a deleted pod's, to go. */
export const GC_COLLECT_MS = 3 * 60_000;
