/**
 * Codex keeps a thread in one rollout file, `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local
 * time>-<thread id>.jsonl`, found by id wherever it sits under `sessions/` but only under a name
 * of that shape (docs/codex-cli-facts.md, "Where things live"). This module finds it (following
 * no link: a sandbox wrote the directory) and reads what Tether needs from it: the thread's
 * running token totals, the last request's size and the model's window, and how many tool
 * calls it holds.
 */
import fs from "node:fs/promises";
import { createReadStream } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { CodexUsage } from "./codex-stream.js";

/** A thread id as Codex makes them (a UUID); nothing else names a file. */
export const THREAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A rollout's file name for a thread, as Codex writes it. */
export function isRolloutName(name: string, threadId: string): boolean {
  return name.startsWith("rollout-") && name.endsWith(`-${threadId}.jsonl`);
}

/** The thread's rollout under `codexHome/sessions`, or null. Regular files only, no links. */
export async function findRollout(
  codexHome: string,
  threadId: string,
): Promise<{ file: string; name: string; size: number } | null> {
  if (!THREAD_ID.test(threadId)) return null;
  for (const dir of [codexHome, path.join(codexHome, "sessions")]) {
    const st = await fs.lstat(dir).catch(() => null);
    if (!st?.isDirectory()) return null;
  }
  const walk = async (dir: string, depth: number): Promise<string | null> => {
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (e.isFile() && isRolloutName(e.name, threadId)) return path.join(dir, e.name);
    }
    if (depth === 0) return null;
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const found = await walk(path.join(dir, e.name), depth - 1);
      if (found) return found;
    }
    return null;
  };
  const file = await walk(path.join(codexHome, "sessions"), 3);
  if (!file) return null;
  const st = await fs.lstat(file).catch(() => null);
  return st?.isFile() ? { file, name: path.basename(file), size: st.size } : null;
}

export interface RolloutFacts {
  /** The thread's running totals after its latest request (null: none recorded). */
  totals: CodexUsage | null;
  /** Input tokens of the latest request: how full the context is. */
  lastInputTokens: number | null;
  contextWindow: number | null;
  /** Requests that reported usage (`token_count` events with totals). */
  requests: number;
  /** Tool calls the model made (function, custom and local shell calls). */
  toolCalls: number;
}

const TOOL_CALLS = new Set(["function_call", "custom_tool_call", "local_shell_call"]);

/** Reads a rollout line by line (it may be large); lines it does not need are not parsed. */
export async function readRollout(file: string): Promise<RolloutFacts> {
  const facts: RolloutFacts = {
    totals: null,
    lastInputTokens: null,
    contextWindow: null,
    requests: 0,
    toolCalls: 0,
  };
  const lines = readline.createInterface({
    input: createReadStream(file, { encoding: "utf8" }),
    crlfDelay: Infinity,
  });
  for await (const line of lines) {
    const tokenCount = line.includes('"token_count"');
    if (!tokenCount && !line.includes('_call"')) continue;
    let v: { type?: unknown; payload?: Record<string, unknown> };
    try {
      v = JSON.parse(line) as typeof v;
    } catch {
      continue;
    }
    const p = v.payload;
    if (!p) continue;
    if (v.type === "response_item" && typeof p.type === "string" && TOOL_CALLS.has(p.type)) {
      facts.toolCalls++;
    } else if (v.type === "event_msg" && p.type === "token_count") {
      const info = p.info as Record<string, unknown> | null | undefined;
      const total = CodexUsage.safeParse(info?.total_token_usage);
      if (!info || !total.success) continue;
      facts.requests++;
      facts.totals = total.data;
      const last = CodexUsage.safeParse(info.last_token_usage);
      if (last.success) facts.lastInputTokens = last.data.input_tokens;
      if (typeof info.model_context_window === "number")
        facts.contextWindow = info.model_context_window;
    }
  }
  return facts;
}
