/** The calendar month (UTC) a quota counts in, e.g. `2026-11`. */
export function quotaMonth(at: string): string {
  return at.slice(0, 7);
}
