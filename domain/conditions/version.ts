/**
 * A version as a string that compares by code units in version order: `v` and `+build` dropped,
 * parts split at `.` and `-`, a `~` part after a three-part version (so a release sorts after its
 * pre-releases: "~" is above every other printable ASCII character), digit runs left-padded to
 * five characters with spaces (so "  9" < " 10").
 */
export function paddedVersion(input: unknown): string {
  const text = typeof input === 'number' ? String(input) : typeof input === 'string' && input !== '' ? input : '0';
  const parts = text.replace(/^v|\+.*$/g, '').split(/[-.]/);
  if (parts.length === 3) parts.push('~');
  return parts.map((part) => (/^[0-9]+$/.test(part) ? part.padStart(5, ' ') : part)).join('-');
}
