#!/usr/bin/env node
// The stand-in for the Claude CLI binary: for what the real CLI (run against fake-anthropic.ts)
// cannot be made to do on demand, and for drills that need many turns quickly. It answers
// --version and --help like Claude Code 2.1.197, keeps the session id it is given with --resume
// (unless told otherwise), and prints stream-json lines of the real CLI's shape. See test/helpers/README.md for when to
// use it rather than the real CLI.
//
// The runner passes only allowlisted variables to the CLI, so every switch is a
// CLAUDE_CODE_STANDIN_* name (that prefix passes):
//   CLAUDE_CODE_STANDIN_MODE       what it does; default `answer`:
//     answer            an assistant message and a successful result (the drills' turn)
//     hang-before-init  reads its prompt, then stays alive printing nothing: a wedged binary
//     crash             init, then SIGSEGV
//     echo-args         the result's text is its argv as JSON
//     echo-env          the result's text is its environment as JSON
//     garbage           readable lines between every kind of unreadable one, then a result
//     burst             more output than a pipe holds, then a result and exit at once
//     no-result         init, a partial message, stderr, exit 3
//     ignore-term       init, then ignores SIGTERM and waits forever
//     grandchild        starts `sleep 300` in a session of its own, then waits forever
//     linger            answers, then does not exit
//     silent            init, then silence for CLAUDE_CODE_STANDIN_SILENT_MS, then a result
//     replay            prints the recorded stream CLAUDE_CODE_STANDIN_REPLAY (fake-claude-fixtures/)
//   CLAUDE_CODE_STANDIN_SESSION    the session id it reports, even on a resume (default: the
//                                  --resume one, else a random one)
//   CLAUDE_CODE_STANDIN_DELAY_MS   "min-max": a random pause between init and the answer
//   CLAUDE_CODE_STANDIN_LOG        a file that gets one JSON line per run (to count runs per task)
//   CLAUDE_CODE_STANDIN_TRANSCRIPT=1  answer: keep the session's transcript where the real CLI
//                                  does ($HOME/.claude/projects/<cwd>/<id>.jsonl), appending a
//                                  line per turn, and refuse a --resume whose file is not there
//                                  as the real CLI does (so a drill sees whether resumes work)
//   CLAUDE_CODE_STANDIN_HUGE       garbage: the length of one oversized line
//   CLAUDE_CODE_STANDIN_PIDFILE    grandchild: where to write the grandchild's pid
//   CLAUDE_CODE_STANDIN_STDERR, CLAUDE_CODE_STANDIN_THEN_HANG=1, CLAUDE_CODE_STANDIN_EXIT: replay's
//                                  stderr, hang after the stream, exit code
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
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
const sessionId = env.CLAUDE_CODE_STANDIN_SESSION ?? resume ?? randomUUID();
const out = (obj) =>
  process.stdout.write(`${typeof obj === "string" ? obj : JSON.stringify(obj)}\n`);
const forever = () => new Promise(() => setInterval(() => {}, 60_000));
const usage = (input, output) => ({
  input_tokens: input,
  output_tokens: output,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
});

const init = () =>
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

const assistant = (text, id = `msg_standin_${process.pid}`) =>
  out({
    type: "assistant",
    message: {
      id,
      model: "claude-sonnet-4-5",
      role: "assistant",
      content: [{ type: "text", text }],
      usage: usage(20, 8),
    },
    parent_tool_use_id: null,
    session_id: sessionId,
  });

const result = (text, durationMs = 1) =>
  out({
    type: "result",
    subtype: "success",
    is_error: false,
    num_turns: 1,
    duration_ms: durationMs,
    result: text,
    session_id: sessionId,
    total_cost_usd: 0.0001,
    usage: usage(20, 8),
    terminal_reason: "completed",
  });

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

// Wedged: alive, printing nothing.
if (mode === "hang-before-init") await forever();

// The real CLI's project directory: the cwd with every non-alphanumeric character made "-".
const transcriptFile = () =>
  `${env.HOME}/.claude/projects/${process.cwd().replace(/[^A-Za-z0-9]/g, "-")}/${sessionId}.jsonl`;
const keepsTranscript = env.CLAUDE_CODE_STANDIN_TRANSCRIPT === "1";
if (mode === "answer" && keepsTranscript && resume && !fs.existsSync(transcriptFile())) {
  const error = `No conversation found with session ID: ${resume}`;
  out({
    type: "result",
    subtype: "error_during_execution",
    is_error: true,
    num_turns: 0,
    duration_ms: 1,
    session_id: resume,
    errors: [error],
  });
  process.stderr.write(`${error}\n`);
  process.exit(1);
}

switch (mode) {
  case "answer": {
    init();
    const [min, max] = (env.CLAUDE_CODE_STANDIN_DELAY_MS ?? "0-0").split("-").map(Number);
    const delay = (min ?? 0) + Math.random() * Math.max(0, (max ?? min ?? 0) - (min ?? 0));
    if (delay > 0) await sleep(delay);
    const text = `stand-in answer (${resume ? "resumed" : "fresh"}) to ${Buffer.byteLength(prompt)} bytes`;
    if (keepsTranscript) {
      fs.mkdirSync(transcriptFile().replace(/\/[^/]+$/, ""), { recursive: true });
      fs.appendFileSync(
        transcriptFile(),
        `${JSON.stringify({ type: "user", sessionId, promptSha: createHash("sha256").update(prompt).digest("hex") })}\n` +
          `${JSON.stringify({ type: "assistant", sessionId, text })}\n`,
      );
    }
    assistant(text);
    result(text, Math.round(delay));
    break;
  }
  case "crash": {
    init();
    process.stderr.write("panic: stand-in CLI crashed on purpose (simulated segfault)\n");
    process.kill(process.pid, "SIGSEGV");
    await forever();
    break;
  }
  case "replay": {
    // A recorded stream (fake-claude-fixtures/), then an exit or a hang like the real run's.
    process.stdout.write(fs.readFileSync(env.CLAUDE_CODE_STANDIN_REPLAY ?? "", "utf8"));
    if (env.CLAUDE_CODE_STANDIN_STDERR) process.stderr.write(env.CLAUDE_CODE_STANDIN_STDERR);
    if (env.CLAUDE_CODE_STANDIN_THEN_HANG === "1") await forever();
    process.exitCode = Number(env.CLAUDE_CODE_STANDIN_EXIT ?? 0);
    break;
  }
  case "echo-args": {
    init();
    result(JSON.stringify(args));
    break;
  }
  case "echo-env": {
    init();
    result(JSON.stringify(env));
    break;
  }
  case "garbage": {
    // Readable lines between every kind of unreadable one; the run must still succeed.
    init();
    out("this is not json");
    out("[1,2,3]");
    out('{"no_type":true}');
    out('{"type":"assistant","message":"not an object"}');
    out({ type: "stream_event", event: { type: "content_block_delta" } });
    out({ type: "system", subtype: "hook_started", hook: "x" });
    out(
      `{"type":"user","message":{"content":"${"x".repeat(Number(env.CLAUDE_CODE_STANDIN_HUGE ?? 0))}"}}`,
    );
    out('{"type":"assistant","message":{"content":[{"type":"text","text":"half a li');
    assistant("still here", "m1");
    result("done despite garbage");
    break;
  }
  case "burst": {
    // More output than a pipe holds, then exit at once.
    init();
    for (let i = 0; i < 2000; i++) assistant(`line ${i} ${"x".repeat(400)}`, `m${i}`);
    result("after the burst");
    break;
  }
  case "no-result": {
    init();
    assistant("partial", "m1");
    process.stderr.write("something went wrong inside\n");
    process.exitCode = 3;
    break;
  }
  case "ignore-term": {
    process.on("SIGTERM", () => process.stderr.write("ignoring SIGTERM\n"));
    init();
    await forever();
    break;
  }
  case "grandchild": {
    // A command in a session of its own, like the real CLI's Bash tool starts them.
    const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    child.unref();
    if (env.CLAUDE_CODE_STANDIN_PIDFILE)
      fs.writeFileSync(env.CLAUDE_CODE_STANDIN_PIDFILE, String(child.pid));
    init();
    await forever();
    break;
  }
  case "linger": {
    // Answers, then does not exit.
    init();
    result("answered but lingering");
    await forever();
    break;
  }
  case "silent": {
    init();
    await sleep(Number(env.CLAUDE_CODE_STANDIN_SILENT_MS ?? 60_000));
    result("woke up");
    break;
  }
  default:
    process.stderr.write(`stand-in claude: unknown mode ${mode}\n`);
    process.exitCode = 2;
}
