/**
 * A connection the server cuts while Tether's code holds it (between two statements of a
 * transaction, as a Postgres restart does) must fail that code's next statement, not crash the
 * process. Run in a child process, since an uncaught 'error' event ends the process it happens in.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();
const script = path.resolve(import.meta.dirname, "helpers/cut-checked-out-client.ts");

describe("a pool client cut off by the server", () => {
  it("fails its next statement and leaves the process and the pool working", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", script, db.url], {
      cwd: path.resolve(import.meta.dirname, "../.."),
      encoding: "utf8",
      timeout: 20_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const result = JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, unknown>;
    expect(result).toMatchObject({ survived: true, fresh: 1 });
    expect(String(result.next)).toMatch(/^failed: /);
  });
});
