/**
 * Writes the rate-limit headroom this process's responses reported (src/github/request-count.ts)
 * to Postgres (src/sql/rate-limits.ts), where every runner's claim reads it (#34). Only what
 * changed since the last write goes out, so a runner can flush before each claim for the cost of
 * one small statement, and nothing at all when no response came meanwhile.
 */
import type { Queryable } from "../sql/db.js";
import { saveHeadroom, type HeadroomRow } from "../sql/rate-limits.js";
import { requestTally, type RequestTally } from "./request-count.js";

export class HeadroomSync {
  /** What was last written per installation: `remaining|reset`. */
  private readonly written = new Map<string, string>();
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Queryable,
    private readonly tally: RequestTally = requestTally,
  ) {}

  /** Write what changed; flushes run one after another, each taking what is new by then. */
  flush(): Promise<void> {
    const next = this.chain.then(() => this.flushOnce());
    this.chain = next.catch(() => {});
    return next;
  }

  private async flushOnce(): Promise<void> {
    const rows: HeadroomRow[] = [];
    const marks: [string, string][] = [];
    for (const [installation, h] of this.tally.headroom) {
      const id = Number(installation);
      if (!Number.isSafeInteger(id) || id <= 0) continue; // "app": the app's own JWT limit
      const mark = `${h.remaining}|${h.resetAt}`;
      if (this.written.get(installation) === mark) continue;
      rows.push({ installationId: id, remaining: h.remaining, limit: h.limit, resetAt: h.resetAt });
      marks.push([installation, mark]);
    }
    if (rows.length === 0) return;
    await saveHeadroom(this.db, rows);
    for (const [installation, mark] of marks) this.written.set(installation, mark);
  }
}
