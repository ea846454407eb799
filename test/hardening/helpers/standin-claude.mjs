#!/usr/bin/env node
// A stand-in for the Claude CLI for drills that need many turns quickly (the soak, the Postgres
// restart) or a CLI that misbehaves on purpose (hangs before starting, crashes). It answers
// --version and --help like Claude Code 2.1.197, keeps one session id across --resume, and
// prints stream-json lines of the same shape. The runner passes only allowlisted variables to
// the CLI, so it is configured through CLAUDE_CODE_STANDIN_* names (that prefix passes):
//   CLAUDE_CODE_STANDIN_MODE      answer (default) | hang-before-init | crash | slow-answer
//   CLAUDE_CODE_STANDIN_DELAY_MS  "min-max": a random pause between init and the answer
//   CLAUDE_CODE_STANDIN_LOG       a file that gets one JSON line per run (to count runs per task)
import { Buffer } from "node:buffer";
import { randomUUID, createHash } from "node:crypto";
import fs from "node:fs";
import process from "node:process";
import { setInterval } from "node:timers";
import { setTimeout as sleep } from "node:timers/promises";

const args = process.argv.slice(2);
if (args.includes("--version")) {
  process.stdout.write("2.1.197 (Claude Code)\n");
  process.exit(0);
}
if (args.includes("--help")) {
  process.stdout.write(
    "Usage: claude [options] [command] [prompt]\n\nOptions:\n  -p, --print  Print response and exit\n  -r, --resume [value]  Resume a conversation\n  --model <model>  Model for the current session\n",
  );
  process.exit(0);
}

const env = process.env;
const mode = env.CLAUDE_CODE_STANDIN_MODE ?? "answer";
const valueOf = (flag) => {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
};
const resume = valueOf("--resume");
const sessionId = resume ?? randomUUID();
const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const forever = () => new Promise(() => setInterval(() => {}, 60_000));

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const prompt = Buffer.concat(chunks).toString("utf8");

if (env.CLAUDE_CODE_STANDIN_LOG) {
  fs.appendFileSync(
    env.CLAUDE_CODE_STANDIN_LOG,
    `${JSON.stringify({
      // Its pid in its own namespace when sandboxed: a label, not a host pid.
      pid: process.pid,
      mode,
      at: Date.now(),
      cwd: process.cwd(),
      resume: resume ?? null,
      sessionId,
      promptSha: createHash("sha256").update(prompt).digest("hex").slice(0, 16),
      // The comment URLs this turn answers: they name the task's request(s).
      requests: [...prompt.matchAll(/<request author="[^"]*" url="([^"]+)"/g)].map((m) => m[1]),
    })}\n`,
  );
}

if (mode === "hang-before-init") {
  // Alive, reading nothing, printing nothing: a wedged binary.
  await forever();
}

out({
  type: "system",
  subtype: "init",
  cwd: process.cwd(),
  session_id: sessionId,
  tools: ["Bash", "Read"],
  model: valueOf("--model") ?? "claude-sonnet-4-5",
  permissionMode: valueOf("--permission-mode") ?? "default",
  apiKeySource: "ANTHROPIC_API_KEY",
  claude_code_version: "2.1.197",
});

if (mode === "crash") {
  process.stderr.write("panic: stand-in CLI crashed on purpose (simulated segfault)\n");
  process.kill(process.pid, "SIGSEGV");
  await forever();
}

const [min, max] = (env.CLAUDE_CODE_STANDIN_DELAY_MS ?? "0-0").split("-").map(Number);
const delay = (min ?? 0) + Math.random() * Math.max(0, (max ?? min ?? 0) - (min ?? 0));
if (delay > 0) await sleep(delay);

const text = `stand-in answer (${resume ? "resumed" : "fresh"}) to ${prompt.length} bytes`;
out({
  type: "assistant",
  message: {
    id: `msg_standin_${process.pid}`,
    model: "claude-sonnet-4-5",
    role: "assistant",
    content: [{ type: "text", text }],
    usage: {
      input_tokens: 20,
      output_tokens: 8,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
  },
  parent_tool_use_id: null,
  session_id: sessionId,
});
out({
  type: "result",
  subtype: "success",
  is_error: false,
  num_turns: 1,
  duration_ms: Math.round(delay),
  result: text,
  session_id: sessionId,
  total_cost_usd: 0.0001,
  usage: {
    input_tokens: 20,
    output_tokens: 8,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  },
  terminal_reason: "completed",
});
