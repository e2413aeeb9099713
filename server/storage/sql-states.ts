/**
 * The SQLSTATE `ingest_flush_assumes(false)` raises (migration 015): what an ingest flush decided
 * on has changed. The migration writes it out, so that it never changes with the application.
 */
export const ASSUMPTION_CHANGED = 'IF001';
