import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 90_000,
    // Every test file gets its own database, so files run in parallel safely.
    fileParallelism: true,
    reporters: ["default"],
  },
});
