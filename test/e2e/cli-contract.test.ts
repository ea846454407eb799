/**
 * The agent-CLI contract (#31): every registered CLI (src/cli-registry.ts) has a row
 * (test/helpers/cli-contract-rows.ts) and a one-line test file, test/e2e/cli-contract-<cli>.test.ts,
 * that runs the one suite (test/helpers/cli-contract-suite.ts) for it. A new CLI is a new row and
 * that line, never a copy of the scenarios.
 */
import fs from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { AGENT_CLIS } from "../../src/cli-registry.js";
import { CONTRACT_ROWS } from "../helpers/cli-contract-rows.js";

it("has a row for every registered CLI, and only those", () => {
  expect(CONTRACT_ROWS.map((r) => r.cli).sort()).toEqual(AGENT_CLIS.map((c) => c.name).sort());
  for (const row of CONTRACT_ROWS) {
    // The row's control files are among those its registry entry says the masks cover.
    const entry = AGENT_CLIS.find((c) => c.name === row.cli)!;
    for (const f of row.controlFiles) expect(entry.controlFiles).toContain(f.split("/")[0]);
  }
});

it("runs every row from a file of its own", () => {
  for (const row of CONTRACT_ROWS) {
    const file = path.join(import.meta.dirname, `cli-contract-${row.cli}.test.ts`);
    expect(fs.readFileSync(file, "utf8")).toContain(`contractSuite("${row.cli}")`);
  }
});
