/**
 * A process that races for data directory locks (test/integration/data-dir-lock.test.ts).
 * argv: <go-at epoch ms> <dir>…; prints one JSON line of outcomes, then holds what it won
 * until its stdin closes.
 */
import { acquireDataDirLock, DataDirInUseError } from "../../src/db/data-dir-lock.js";

const [goAt, ...dirs] = process.argv.slice(2);
await new Promise((r) => setTimeout(r, Math.max(0, Number(goAt) - Date.now())));
const outcomes = await Promise.all(
  dirs.map(async (dir) => {
    try {
      await acquireDataDirLock(dir);
      return { dir, outcome: "won" };
    } catch (err) {
      if (err instanceof DataDirInUseError) return { dir, outcome: "refused", by: err.owner.pid };
      return { dir, outcome: "error", error: String(err) };
    }
  }),
);
process.stdout.write(JSON.stringify(outcomes) + "\n");
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
