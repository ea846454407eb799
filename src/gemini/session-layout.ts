/**
 * Where Gemini CLI keeps a session, for the session store (postgres-transcripts.ts, which keeps
 * Claude's transcripts and Codex's rollouts the same way): one file,
 * `$HOME/.gemini/tmp/<base name of the working directory>/chats/session-<time>-<id prefix>.jsonl`,
 * which alone resumes the session from an otherwise empty HOME, found by the shape of its name
 * and the session id on its first line (docs/gemini-cli-facts.md, "Where things live"). So every
 * turn gets a fresh HOME holding only that file, under the name the CLI gave it; the rest of
 * `~/.gemini` (settings, policies, `projects.json`, history) is never kept: Tether writes its own
 * settings before each run, and an agent that changed them cannot reach the next turn with it.
 */
import path from "node:path";
import {
  chatsDir,
  findSessionFile,
  GEMINI_SESSION_ID,
  isSessionFileName,
} from "./session-files.js";
import type { TranscriptLayout } from "../agent-cli/session-layout.js";

export const geminiLayout: TranscriptLayout = {
  find: (home, sessionId) => findSessionFile(home, sessionId),
  place(home, cwd, sessionId, name) {
    // The name comes from Postgres: only a session file name of this session, and no path.
    if (
      !GEMINI_SESSION_ID.test(sessionId) ||
      !name ||
      name.includes("/") ||
      !isSessionFileName(name, sessionId)
    )
      throw new Error(`not a session file of session ${sessionId}: ${JSON.stringify(name)}`);
    return path.join(chatsDir(home, cwd), name);
  },
  keepsName: true,
  // Gemini sessions were never kept on a runner's disk before the shared store.
  legacy: () => Promise.resolve(null),
};
