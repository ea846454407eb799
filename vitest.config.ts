import { defineConfig } from "vitest/config";
import SlowestFirst from "./test/sequencer.js";

/**
 * Three tiers (`npm run test:unit`, `test:integration`, `test:e2e`); `npm test` runs all of them.
 * - unit: pure code and small real pieces (files, child processes); no database, no build, no
 *   agent CLI, so it runs in seconds.
 * - integration: real Postgres (one embedded server for the run, a database per test file), real
 *   git, the real CLIs against fake model APIs; no build.
 * - e2e: the built app as a real process, the GitHub stand-in, the sandbox, the browser, and the
 *   checks of the repository's own files (which look at the build too); the global setup builds
 *   `dist/` first.
 */
export default defineConfig({
  test: {
    pool: "forks",
    // Three files at once on the 2-core machine CI runs on (vitest's default there is one: the
    // cores less one). Three keep both cores busy (the real CLIs are most of the CPU); four made
    // a clean-clone run slower (docs/development.md). VITEST_MAX_WORKERS overrides it. Every
    // test must pass so (none races a timer).
    maxWorkers: 3,
    // The slowest files start first (test/sequencer.ts).
    sequence: { sequencer: SlowestFirst },
    testTimeout: 30_000,
    hookTimeout: 90_000,
    // Every test file gets its own database, so files run in parallel safely.
    fileParallelism: true,
    reporters: ["default"],
    projects: [
      {
        extends: true,
        // Worker threads start faster than forks: 27.7 s against 30.7 s for the tier here,
        // measured side by side on an idle 2-core machine (2082 tests).
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], pool: "threads" },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: [
            "test/e2e/**/*.test.ts",
            "test/hardening/**/*.test.ts",
            "test/browser/**/*.test.ts",
            "test/repo/**/*.test.ts",
          ],
          globalSetup: ["test/global-setup.ts"],
        },
      },
    ],
  },
});
