/**
 * Where Gemini CLI keeps a session (docs/gemini-cli-facts.md, "Where things live"):
 * `$HOME/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of the id>.jsonl`,
 * `<project>` being the working directory's base name (`workspace` in the sandbox). The CLI
 * finds a session to resume by that name's shape and the `sessionId` on the file's first line,
 * and needs nothing else of its HOME (no `projects.json`). This module finds the file (following
 * no link: a sandbox wrote the directory) and reads what Tether needs from it.
 */
import fs from "node:fs/promises";
import { createReadStream } from "node:fs";
import path from "node:path";
import readline from "node:readline";

/** A session id as Gemini CLI makes them (a UUID); nothing else names a file or reaches argv. */
export const GEMINI_SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A session file's name for a session, as the CLI writes it. */
export function isSessionFileName(name: string, sessionId: string): boolean {
  return (
    /^session-[0-9T-]+-[0-9a-f]{8}\.jsonl$/i.test(name) &&
    name.endsWith(`-${sessionId.slice(0, 8)}.jsonl`)
  );
}

/** Where the CLI, working in `cwd`, looks for its sessions in `home`. */
export function chatsDir(home: string, cwd: string): string {
  return path.join(home, ".gemini", "tmp", path.basename(cwd), "chats");
}

/** The session's id as its file's first line says, or null. */
async function firstLineSessionId(file: string): Promise<string | null> {
  const lines = readline.createInterface({
    input: createReadStream(file, { encoding: "utf8", end: 64 * 1024 }),
    crlfDelay: Infinity,
  });
  try {
    for await (const line of lines) {
      const v = JSON.parse(line) as { sessionId?: unknown };
      return typeof v.sessionId === "string" ? v.sessionId : null;
    }
  } catch {
    return null;
  } finally {
    lines.close();
  }
  return null;
}

/** The session's file under `home/.gemini/tmp/<any project>/chats`, or null. No links. */
export async function findSessionFile(
  home: string,
  sessionId: string,
): Promise<{ file: string; name: string; size: number } | null> {
  if (!GEMINI_SESSION_ID.test(sessionId)) return null;
  const tmp = path.join(home, ".gemini", "tmp");
  for (const dir of [home, path.join(home, ".gemini"), tmp]) {
    const st = await fs.lstat(dir).catch(() => null);
    if (!st?.isDirectory()) return null;
  }
  for (const project of await fs.readdir(tmp, { withFileTypes: true }).catch(() => [])) {
    if (!project.isDirectory()) continue;
    const chats = path.join(tmp, project.name, "chats");
    const st = await fs.lstat(chats).catch(() => null);
    if (!st?.isDirectory()) continue;
    for (const e of await fs.readdir(chats, { withFileTypes: true }).catch(() => [])) {
      if (!e.isFile() || !isSessionFileName(e.name, sessionId)) continue;
      const file = path.join(chats, e.name);
      if ((await firstLineSessionId(file)) !== sessionId) continue;
      const fst = await fs.lstat(file).catch(() => null);
      if (fst?.isFile()) return { file, name: e.name, size: fst.size };
    }
  }
  return null;
}

export interface SessionFacts {
  /** Prompt tokens of the latest model answer: how full the context is. */
  lastInputTokens: number | null;
  /** Model answers recorded (each is one API call). */
  answers: number;
  /** Tool calls recorded. */
  toolCalls: number;
}

/** Reads a session file line by line; a record rewritten later (same id) counts once. */
export async function readSessionFile(file: string): Promise<SessionFacts> {
  const answers = new Map<string, { input: number | null; tools: number }>();
  let last: string | undefined;
  const lines = readline.createInterface({
    input: createReadStream(file, { encoding: "utf8" }),
    crlfDelay: Infinity,
  });
  for await (const line of lines) {
    if (!line.includes('"type":"gemini"')) continue;
    let v: { id?: unknown; type?: unknown; tokens?: { input?: unknown }; toolCalls?: unknown };
    try {
      v = JSON.parse(line) as typeof v;
    } catch {
      continue;
    }
    if (v.type !== "gemini" || typeof v.id !== "string") continue;
    answers.set(v.id, {
      input: typeof v.tokens?.input === "number" ? v.tokens.input : null,
      tools: Array.isArray(v.toolCalls) ? v.toolCalls.length : 0,
    });
    last = v.id;
  }
  let toolCalls = 0;
  for (const a of answers.values()) toolCalls += a.tools;
  return {
    lastInputTokens: last ? (answers.get(last)?.input ?? null) : null,
    answers: answers.size,
    toolCalls,
  };
}
