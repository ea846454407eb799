/** Shared bits for benchmarks: a throwaway embedded PostgreSQL, migrated, and percentiles. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../src/db/embedded.js";
import { migrate } from "../src/db/migrate.js";

export async function benchDatabase(): Promise<EmbeddedPostgres & { cleanup(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-bench-"));
  const pg = await startEmbeddedPostgres({
    dataDir: path.join(dir, "data"),
    settings: {
      fsync: "off",
      synchronous_commit: "off",
      full_page_writes: "off",
      shared_buffers: "256MB",
    },
  });
  await migrate(pg.url);
  return {
    ...pg,
    async cleanup() {
      await pg.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}
