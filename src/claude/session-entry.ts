/**
 * Where a resumed run's turn entered its session: the message the first line it appended to the
 * transcript hangs from (`parentUuid`). Seen with 2.1.332: a resumed run appends to the session
 * file (bookkeeping lines without a uuid first, then the prompt's `user` line), and that line's
 * `parentUuid` is the last message of the conversation as it stood; `--resume-session-at` with it
 * gives the session as it was just before the run (docs/claude-cli-facts.md). What a rewind
 * resumes at (core/resume-decision.ts planRewind).
 */
import { constants } from "node:fs";
import fs from "node:fs/promises";
import { ENTRY } from "../agent-cli/runtime-adapter.js";

/** How much of the appended part is read looking for the first message: the prompt is bounded. */
const MAX_READ = 8 * 1024 * 1024;

/**
 * The `parentUuid` of the first line after byte `offset` of `file` that carries a `uuid`;
 * undefined when there is none (nothing appended, a fresh chain, an unreadable line).
 */
export async function readEntry(file: string, offset: number): Promise<string | undefined> {
  // The sandbox wrote the file: a link is not followed, and only a regular file is read.
  const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const st = await handle.stat();
    if (!st.isFile()) return undefined;
    const { size } = st;
    const length = Math.min(Math.max(0, size - offset), MAX_READ);
    if (length === 0) return undefined;
    const buf = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buf, 0, length, offset);
    for (const line of buf.subarray(0, bytesRead).toString("utf8").split("\n")) {
      if (!line.includes('"uuid"')) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        return undefined;
      }
      const m = parsed as { uuid?: unknown; parentUuid?: unknown };
      if (typeof m.uuid !== "string") continue;
      return typeof m.parentUuid === "string" && ENTRY.test(m.parentUuid)
        ? m.parentUuid
        : undefined;
    }
    return undefined;
  } finally {
    await handle.close();
  }
}
