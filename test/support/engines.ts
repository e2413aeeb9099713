import { inject } from 'vitest';

/** The engines this run covers: SQLite always, PostgreSQL when it answers (always in CI). */
export const engines = inject('engines');
