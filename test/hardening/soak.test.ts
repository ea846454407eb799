/**
 * The soak drill (scripts/soak.ts) at CI size: requests across issues with random /cancel
 * comments and one runner killed and restarted, then every check the drill makes. The full
 * soak is `npx tsx scripts/soak.ts --turns 500 --issues 50`.
 */
import { describe, expect, it } from "vitest";
import { formatReport, runSoak } from "../../scripts/soak.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();

describe("soak (CI size)", () => {
  it(
    "every task terminal and answered once, no orphans, memory flat",
    { timeout: 240_000 },
    async () => {
      const report = await runSoak({
        pool: db.pool,
        databaseUrl: db.url,
        turns: Number(process.env.TETHER_SOAK_TURNS ?? 80),
        issues: Number(process.env.TETHER_SOAK_ISSUES ?? 8),
        cancelRate: 0.1,
      });
      console.log(formatReport(report));
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      // The drill did what it says: cancels landed and a runner was killed with work in hand.
      expect(report.cancels).toBeGreaterThan(0);
      expect(report.tasksByStatus.succeeded).toBeGreaterThan(0);
    },
  );
});
