/**
 * Tether's scratch directories beside the workspaces (temporary clones, per-run masks): what a
 * process that died left there is removed once it is old enough that no live run can own it.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";

const STALE_TMP_MS = 6 * 60 * 60_000;

/** Removes what a process that died left in one of Tether's scratch directories. */
export async function sweepStale(tmpRoot: string, log: Logger): Promise<void> {
  for (const name of await fs.readdir(tmpRoot).catch(() => [] as string[])) {
    const p = path.join(tmpRoot, name);
    const st = await fs.lstat(p).catch(() => null);
    if (st && Date.now() - st.mtimeMs > STALE_TMP_MS) {
      await fs.rm(p, { recursive: true, force: true }).catch(() => undefined);
      log.info({ path: p }, "removed a stale temporary directory");
    }
  }
}
