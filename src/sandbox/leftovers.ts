/**
 * The run directories an earlier process left (#28): after a crash or a SIGKILL its sandboxes
 * may still be exiting, and writing into their run directories (a HOME, the egress socket)
 * through their binds, while the new process starts. Removing such a directory in place races
 * them (rmdir: ENOTEMPTY; a child gone between readdir and unlink: ENOENT), and start-up must
 * never fail over leftovers. So start-up only renames each one aside into `trash/` (one atomic
 * rename on the same file system; a process working in it follows the inode and writes on into
 * the trash), and the trash is removed in the background, with retries, its failures logged.
 * Whatever is still there is tried again at the next start.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";

export interface SweepRetry {
  /** Tries per directory before it is left for the next start. */
  attempts: number;
  /** Wait before the second try; doubled before each next one. */
  delayMs: number;
}

export const SWEEP_RETRY: SweepRetry = { attempts: 6, delayMs: 250 };

/**
 * Moves every entry of `runsDir` into `trashDir` (renamed, never removed here). Never throws:
 * an entry that cannot be moved is logged and left where it is (run directories are named at
 * random, so a new run never collides with it).
 */
export async function setAsideLeftovers(
  runsDir: string,
  trashDir: string,
  log: Logger,
): Promise<number> {
  let names: string[];
  try {
    names = await fs.readdir(runsDir);
  } catch (err) {
    log.warn(
      { dir: runsDir, err: String(err) },
      "could not list an earlier process's sandbox runs",
    );
    return 0;
  }
  if (names.length === 0) return 0;
  let moved = 0;
  try {
    await fs.mkdir(trashDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    log.warn({ dir: trashDir, err: String(err) }, "could not make the sandbox's trash directory");
    return 0;
  }
  for (const name of names) {
    const to = path.join(trashDir, `${name}.${randomBytes(4).toString("hex")}`);
    try {
      await fs.rename(path.join(runsDir, name), to);
      moved++;
    } catch (err) {
      // Gone meanwhile: nothing to do.
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      log.warn(
        { dir: path.join(runsDir, name), err: String(err) },
        "could not set aside an earlier process's sandbox run directory; it stays",
      );
    }
  }
  return moved;
}

/**
 * Removes everything in `trashDir`, then the directory itself, retrying what writers still fill.
 * Never rejects; what it could not remove is logged and left for the next start.
 */
export async function emptyTrash(
  trashDir: string,
  log: Logger,
  retry: SweepRetry = SWEEP_RETRY,
  remove: (dir: string) => Promise<void> = (dir) => fs.rm(dir, { recursive: true, force: true }),
): Promise<void> {
  const names = await fs.readdir(trashDir).catch(() => [] as string[]);
  let left = 0;
  await Promise.all(
    names.map(async (name) => {
      const dir = path.join(trashDir, name);
      for (let attempt = 1; ; attempt++) {
        try {
          await remove(dir);
          return;
        } catch (err) {
          if (attempt >= retry.attempts) {
            left++;
            log.warn(
              { dir, attempts: attempt, err: String(err) },
              "could not remove an earlier process's sandbox run directory (a process may still write there); the next start tries again",
            );
            return;
          }
        }
        // Unref'd: a process on its way out does not wait for the trash.
        await new Promise((r) => setTimeout(r, retry.delayMs * 2 ** (attempt - 1)).unref());
      }
    }),
  );
  if (left === 0) await fs.rmdir(trashDir).catch(() => {});
}
