/**
 * The order files start in: the slowest first, so that the three workers (vitest.config.ts) do
 * not wait at the end on a long file that started last. vitest's own order runs projects by name
 * and, without a cache of earlier durations (a clean clone, as CI is), larger files first, which
 * put the one-line contract files (test/e2e/cli-contract-<cli>.test.ts, minutes each) at the end
 * of their tier: in a clean-clone run the opencode contract started at 374 s of 873 and set the
 * e2e tier's end. Files named here start first, in this order (their seconds in that run, a
 * loaded 2-core machine); the rest keep vitest's order after them. A list, not a measurement:
 * the cache does better where it exists, and this only has to get the long ones going early.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node";

const SLOWEST_FIRST = [
  "test/e2e/cli-contract-opencode.test.ts", // 199 s
  "test/e2e/cli-contract-gemini.test.ts", // 120 s
  "test/integration/opencode-adapter.test.ts", // 103 s
  "test/hardening/many-runners.test.ts", // 94 s
  "test/e2e/cli-contract-claude.test.ts",
  "test/e2e/cli-contract-codex.test.ts",
  "test/e2e/spend-limits.test.ts", // 69 s
  "test/integration/opencode-session-db.test.ts", // 69 s
  "test/e2e/opencode.test.ts", // 69 s
  "test/e2e/session-controls.test.ts", // 53 s
  "test/integration/gemini-run-task.test.ts", // 52 s
  "test/e2e/runner.test.ts", // 48 s
  "test/hardening/soak.test.ts", // 44 s
  "test/hardening/webhook-burst.test.ts", // 43 s
  "test/integration/gemini-adapter.test.ts", // 41 s
  "test/hardening/cli-failures.test.ts", // 39 s
];

export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOWEST_FIRST.findIndex((p) => f.moduleId.endsWith(p));
      return i < 0 ? SLOWEST_FIRST.length : i;
    };
    // Array.prototype.sort is stable: files not named keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
