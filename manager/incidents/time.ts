/**
 * RFC 3339 date-times checked on the calendar. JavaScript's Date rolls an impossible date over
 * (2025-02-30 becomes March 2, T24:00 the next day); these checks refuse it instead, saying which
 * part is out of range, so a webhook or a tool never stores or asks for a time nobody sent.
 */

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** Days in a month (1-12) of a year, in the proleptic Gregorian calendar. */
export function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}

/**
 * What is impossible about the calendar parts of a date-time — "February 2025 has 28 days", "hour
 * 24 is not 00-23" — or undefined when they are a real date and time. Reads a leading
 * YYYY-MM-DD, then an optional [T ]hh:mm[:ss]; anything after (fraction, zone) is not its concern.
 * A second of 60 (a leap second) is allowed here; Date itself refuses it.
 */
export function calendarProblem(text: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12) return `month ${m[2]} is not 01-12`;
  const days = daysInMonth(y, mo);
  if (d < 1 || d > days) return `${MONTHS[mo - 1]} ${m[1]} has ${days} days, not ${d}`;
  if (m[4] !== undefined && Number(m[4]) > 23) return `hour ${m[4]} is not 00-23`;
  if (m[5] !== undefined && Number(m[5]) > 59) return `minute ${m[5]} is not 00-59`;
  if (m[6] !== undefined && Number(m[6]) > 60) return `second ${m[6]} is not 00-60`;
  return undefined;
}
