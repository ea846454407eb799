/**
 * The clock arithmetic of schedules (README "Talking to Tether", `schedules:`): when a five-field
 * cron expression next fires, in UTC or an IANA time zone, and the shortest gap between two of
 * its ticks (checked against TETHER_SCHEDULE_MIN_MINUTES). Pure: `now` is a parameter.
 *
 * Parsing is cron-parser's (a maintained library, time zones through luxon): cron has corners
 * (day-of-month OR day-of-week, `L`, `#`, ranges with steps, DST gaps) that a hand-written parser
 * gets wrong. It also takes six fields (seconds first) and four; a schedule's unit is the minute,
 * so anything but five fields is refused here before it reaches the library.
 */
import { CronExpressionParser } from "cron-parser";

export type CronCheck = { ok: true } | { ok: false; message: string };

/** Is `zone` an IANA time zone this Node knows (`UTC`, `Europe/Paris`)? */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Is `expr` a five-field cron expression? The message names what is wrong. */
export function checkCron(expr: string, timezone = "UTC"): CronCheck {
  const fields = expr.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5)
    return {
      ok: false,
      message: `must have five fields (minute hour day-of-month month day-of-week), like "0 9 * * 1"; it has ${fields.length}`,
    };
  try {
    CronExpressionParser.parse(fields.join(" "), { tz: timezone, strict: false });
    return { ok: true };
  } catch (err) {
    return { ok: false, message: `is not a cron expression: ${(err as Error).message}` };
  }
}

/** The first tick of `expr` strictly after `after`. Throws on an expression checkCron refuses. */
export function nextTick(expr: string, timezone: string, after: Date): Date {
  const it = CronExpressionParser.parse(expr.trim(), { tz: timezone, currentDate: after });
  return it.next().toDate();
}

/**
 * The shortest gap, in minutes, between consecutive ticks in the eight days after `from` (at most
 * `samples` ticks): enough to see every pattern within a day (`0,5 9 * * *`) and a week. Bounded
 * in both: each tick costs the library a time-zone conversion.
 */
export function shortestGapMinutes(
  expr: string,
  timezone: string,
  from: Date,
  samples = 300,
): number {
  const it = CronExpressionParser.parse(expr.trim(), { tz: timezone, currentDate: from });
  const horizon = from.getTime() + 8 * 86_400_000;
  let prev = it.next().toDate().getTime();
  let min = Infinity;
  for (let i = 0; i < samples && prev < horizon; i++) {
    if (!it.hasNext()) break;
    const t = it.next().toDate().getTime();
    min = Math.min(min, (t - prev) / 60_000);
    prev = t;
  }
  return min;
}
