#!/usr/bin/env node
/**
 * Tether's line-comment tool for the agent, served inside the sandbox on pull request turns: a
 * dependency-free MCP server over stdio (newline-delimited JSON-RPC 2.0). It holds no token and
 * reaches nothing: each comment the agent asks for is checked and appended as one JSON line to
 * the file named on the command line (in a directory Tether reads after the turn, outside the
 * checkout); Tether then posts them, with the diff as GitHub computes it, as one review
 * (src/review/post-review.ts).
 *
 * Usage: node line-comment-server.mjs <comments.jsonl> [--request-changes]
 */
import { Buffer } from "node:buffer";
import fs from "node:fs";
import readline from "node:readline";

const [file, ...flags] = process.argv.slice(2);
const canRequestChanges = flags.includes("--request-changes");

/** At most this many comments per turn, this many bytes per body, this many bytes in all. */
const MAX_COMMENTS = 50;
const MAX_BODY = 16_000;
const MAX_FILE = 400_000;
const MAX_PATH = 1000;

const COMMENT_TOOL = {
  name: "comment_on_line",
  description:
    "Comment on lines of this pull request's diff. Tether posts every comment of the turn as ONE " +
    "GitHub review after the turn ends (nothing is posted now). `line` is a line number in the " +
    "file: on the RIGHT side (default) of the pull request's version, on the LEFT side of the " +
    "base version (a removed line). For a range, give `start_line` (first line) and `line` " +
    "(last). To propose a change, put a GitHub suggestion block in the body:\n" +
    "```suggestion\nthe replacement lines\n```\n" +
    "A comment on a line outside the diff is kept in the review's body as path:line.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path relative to the repository root." },
      line: { type: "integer", minimum: 1, description: "The (last) line commented on." },
      body: { type: "string", description: "The comment (Markdown; may hold a suggestion block)." },
      side: {
        type: "string",
        enum: ["RIGHT", "LEFT"],
        description: "RIGHT: the pull request's version (default). LEFT: the base version.",
      },
      start_line: {
        type: "integer",
        minimum: 1,
        description: "First line of a multi-line comment (below `line`).",
      },
    },
    required: ["path", "line", "body"],
    additionalProperties: false,
  },
  // Claude Code defers MCP tools behind its ToolSearch unless told not to (docs/claude-cli-facts.md).
  _meta: { "anthropic/alwaysLoad": true },
};

const CHANGES_TOOL = {
  name: "request_changes",
  description:
    "Mark this turn's review as requesting changes (instead of a plain comment). Use it only " +
    "when the pull request must not be merged as it is; say why in `reason`.",
  inputSchema: {
    type: "object",
    properties: { reason: { type: "string", description: "Why changes are needed." } },
    required: ["reason"],
    additionalProperties: false,
  },
  _meta: { "anthropic/alwaysLoad": true },
};

const tools = canRequestChanges ? [COMMENT_TOOL, CHANGES_TOOL] : [COMMENT_TOOL];

/** Counts what an earlier server of the same turn (the CLI may restart it) already wrote. */
function existing() {
  try {
    const text = fs.readFileSync(file, "utf8");
    return { bytes: Buffer.byteLength(text), lines: text.split("\n").filter(Boolean).length };
  } catch {
    return { bytes: 0, lines: 0 };
  }
}

function isInt(v) {
  return typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 10_000_000;
}

/** The comment as a record, or the words that say what is wrong with the input. */
function checkComment(a) {
  if (typeof a !== "object" || a === null) return "arguments must be an object";
  const { path, line, body, side, start_line: startLine } = a;
  if (typeof path !== "string" || path.trim() === "") return "`path` must be a non-empty string";
  if (path.length > MAX_PATH) return `\`path\` must be at most ${MAX_PATH} characters`;
  if (path.startsWith("/") || /[\0\r\n]/.test(path))
    return "`path` must be relative to the repository root, on one line";
  if (!isInt(line)) return "`line` must be a positive whole number";
  if (typeof body !== "string" || body.trim() === "") return "`body` must be a non-empty string";
  if (Buffer.byteLength(body) > MAX_BODY) return `\`body\` must be at most ${MAX_BODY} bytes`;
  if (side !== undefined && side !== "RIGHT" && side !== "LEFT")
    return '`side` must be "RIGHT" or "LEFT"';
  if (startLine !== undefined && startLine !== null) {
    if (!isInt(startLine)) return "`start_line` must be a positive whole number";
    if (startLine >= line) return "`start_line` must be below `line`";
  }
  for (const k of Object.keys(a))
    if (!["path", "line", "body", "side", "start_line"].includes(k))
      return `unknown argument \`${k}\``;
  return {
    kind: "comment",
    path: path.replace(/^\.\//, ""),
    line,
    side: side ?? "RIGHT",
    ...(startLine ? { start_line: startLine } : {}),
    body,
  };
}

function append(record) {
  const have = existing();
  const line = JSON.stringify(record) + "\n";
  if (record.kind === "comment" && have.lines >= MAX_COMMENTS)
    return `at most ${MAX_COMMENTS} comments per turn; this one was not kept`;
  if (have.bytes + Buffer.byteLength(line) > MAX_FILE)
    return "this turn's comments are too long in all; this one was not kept";
  fs.appendFileSync(file, line, { mode: 0o600 });
  return null;
}

function callTool(name, args) {
  const fail = (text) => ({ content: [{ type: "text", text }], isError: true });
  if (!file) return fail("the tool is not set up for this turn (no output file)");
  try {
    if (name === COMMENT_TOOL.name) {
      const c = checkComment(args);
      if (typeof c === "string") return fail(`Not recorded: ${c}.`);
      const refused = append(c);
      if (refused) return fail(`Not recorded: ${refused}.`);
      const at = c.start_line ? `${c.path}:${c.start_line}-${c.line}` : `${c.path}:${c.line}`;
      return {
        content: [
          {
            type: "text",
            text: `Recorded a comment on ${at} (${c.side}). Tether posts it in this turn's review after you finish; do not repeat it in your answer.`,
          },
        ],
      };
    }
    if (name === CHANGES_TOOL.name && canRequestChanges) {
      const reason = args && typeof args.reason === "string" ? args.reason.trim() : "";
      if (!reason) return fail("Not recorded: `reason` must be a non-empty string.");
      if (Buffer.byteLength(reason) > MAX_BODY)
        return fail(`Not recorded: \`reason\` must be at most ${MAX_BODY} bytes.`);
      const refused = append({ kind: "request_changes", reason });
      if (refused) return fail(`Not recorded: ${refused}.`);
      return { content: [{ type: "text", text: "This turn's review will request changes." }] };
    }
    return fail(`no tool named ${JSON.stringify(name)}`);
  } catch (err) {
    return fail(`Not recorded: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\n");
}

function handle(msg) {
  if (typeof msg !== "object" || msg === null || Array.isArray(msg)) return;
  const { id, method, params } = msg;
  const isRequest = id !== undefined && id !== null;
  const reply = (result) => isRequest && send({ jsonrpc: "2.0", id, result });
  const error = (code, message) =>
    isRequest && send({ jsonrpc: "2.0", id, error: { code, message } });
  switch (method) {
    case "initialize":
      return reply({
        protocolVersion:
          params && typeof params.protocolVersion === "string"
            ? params.protocolVersion
            : "2025-06-18",
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: "tether", version: "1.0.0" },
        instructions:
          "Tether's review tools: comment on lines of the pull request's diff; Tether posts one review after the turn.",
      });
    case "ping":
      return reply({});
    case "tools/list":
      return reply({ tools });
    case "tools/call":
      return reply(callTool(params?.name, params?.arguments ?? {}));
    case "resources/list":
      return reply({ resources: [] });
    case "prompts/list":
      return reply({ prompts: [] });
    default:
      if (typeof method === "string" && method.startsWith("notifications/")) return;
      return error(-32601, `method not found: ${String(method)}`);
  }
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (text) => {
  if (!text.trim()) return;
  let msg;
  try {
    msg = JSON.parse(text);
  } catch {
    send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } });
    return;
  }
  try {
    if (Array.isArray(msg)) msg.forEach(handle);
    else handle(msg);
  } catch (err) {
    if (msg && msg.id !== undefined)
      send({ jsonrpc: "2.0", id: msg.id, error: { code: -32603, message: String(err) } });
  }
});
rl.on("close", () => process.exit(0));
