/** UTC calendar days as `YYYY-MM-DD` — pure functions. */

/** The day `days` after `day` (before it when negative). */
export function addDays(day: string, days: number): string {
  const date = new Date(`${day}T00:00:00.000Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
}
