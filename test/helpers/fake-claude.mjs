#!/usr/bin/env node
// A stand-in for the Claude CLI, for the adapter behaviours the real one cannot be made to show
// on demand (ignoring SIGTERM, garbage output, a grandchild in its own session). It prints
// stream-json lines like Claude Code 2.1.197. FAKE_CLAUDE_SCENARIO picks what it does.
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import fs from "node:fs";
import process from "node:process";
import { setInterval } from "node:timers";
import { setTimeout as sleep } from "node:timers/promises";

const scenario = process.env.FAKE_CLAUDE_SCENARIO ?? "success";
const sessionId = process.env.FAKE_CLAUDE_SESSION ?? "11111111-2222-4333-8444-555555555555";
const out = (obj) =>
  process.stdout.write(`${typeof obj === "string" ? obj : JSON.stringify(obj)}\n`);

const init = () =>
  out({
    type: "system",
    subtype: "init",
    cwd: process.cwd(),
    session_id: sessionId,
    tools: ["Bash"],
    model: "fake-model",
    permissionMode: "default",
    claude_code_version: "0.0.1-fake",
  });

const result = (text, extra = {}) =>
  out({
    type: "result",
    subtype: "success",
    is_error: false,
    num_turns: 1,
    duration_ms: 5,
    result: text,
    session_id: sessionId,
    total_cost_usd: 0.001,
    usage: {
      input_tokens: 10,
      output_tokens: 2,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
    ...extra,
  });

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

const forever = () => new Promise(() => setInterval(() => {}, 60_000));

switch (scenario) {
  case "replay": {
    // Prints a recorded stream (fake-claude-fixtures/), then exits or hangs like the real run did.
    await readStdin();
    process.stdout.write(fs.readFileSync(process.env.FAKE_CLAUDE_REPLAY ?? "", "utf8"));
    if (process.env.FAKE_CLAUDE_STDERR) process.stderr.write(process.env.FAKE_CLAUDE_STDERR);
    if (process.env.FAKE_CLAUDE_THEN_HANG === "1") await forever();
    process.exitCode = Number(process.env.FAKE_CLAUDE_EXIT ?? 0);
    break;
  }
  case "success": {
    const prompt = await readStdin();
    init();
    result(`prompt bytes=${Buffer.byteLength(prompt)}`);
    break;
  }
  case "echo-args": {
    await readStdin();
    init();
    result(JSON.stringify(process.argv.slice(2)));
    break;
  }
  case "echo-env": {
    await readStdin();
    init();
    result(JSON.stringify(process.env));
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
      `{"type":"user","message":{"content":"${"x".repeat(Number(process.env.FAKE_CLAUDE_HUGE ?? 0))}"}}`,
    );
    out('{"type":"assistant","message":{"content":[{"type":"text","text":"half a li');
    out({
      type: "assistant",
      message: { id: "m1", model: "fake-model", content: [{ type: "text", text: "still here" }] },
      parent_tool_use_id: null,
      session_id: sessionId,
    });
    result("done despite garbage");
    break;
  }
  case "burst": {
    // More output than a pipe holds, then exit at once.
    init();
    for (let i = 0; i < 2000; i++) {
      out({
        type: "assistant",
        message: { id: `m${i}`, content: [{ type: "text", text: `line ${i} ${"x".repeat(400)}` }] },
      });
    }
    result("after the burst");
    break;
  }
  case "no-result": {
    init();
    out({ type: "assistant", message: { id: "m1", content: [{ type: "text", text: "partial" }] } });
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
    if (process.env.FAKE_CLAUDE_PIDFILE)
      fs.writeFileSync(process.env.FAKE_CLAUDE_PIDFILE, String(child.pid));
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
    await sleep(Number(process.env.FAKE_CLAUDE_SILENT_MS ?? 60_000));
    result("woke up");
    break;
  }
  default:
    process.stderr.write(`fake claude: unknown scenario ${scenario}\n`);
    process.exitCode = 2;
}
