/**
 * The line-comment tool as the agent CLIs are told of it: an MCP server (line-comment-server.mjs,
 * shipped beside this file in src/ and dist/) run by the CLI inside the sandbox with the
 * system's node, writing to a file in the run's outbox (/run/tether/out), which Tether reads
 * after the turn. The server holds no token: Tether posts the review.
 */
import fs from "node:fs";
import { fileURLToPath } from "node:url";

/** The MCP server's name: tools appear as `mcp__tether__<tool>` (Claude) or `tether` (Codex). */
export const MCP_SERVER_NAME = "tether";
export const COMMENT_TOOL = "comment_on_line";
export const CHANGES_TOOL = "request_changes";
/** The file, in the run's outbox, the server appends comments to. */
export const COMMENTS_FILE = "line-comments.jsonl";

/** The server's script, as shipped (the build copies it into dist/src/review/). */
export const SERVER_SCRIPT = fileURLToPath(new URL("./line-comment-server.mjs", import.meta.url));

/** What a run needs to offer the tool: where its file is, and what it may do. */
export interface LineCommentTool {
  /** Host directory the server writes to; the sandbox's outbox. */
  dir: string;
  /** The agent may ask for the review to request changes (its setting). */
  requestChanges: boolean;
}

/** An MCP server over stdio, as a CLI's config takes it. */
export interface McpServer {
  name: string;
  /** The tool's directory as the CLI sees it (where the CLI may find files Tether put there). */
  outDir: string;
  command: string;
  args: string[];
  /** Tool names the CLI must allow without asking. */
  tools: string[];
}

/**
 * The server a run's CLI starts. `outDir`: the directory as the CLI sees it (the sandbox's
 * outbox, or the host directory unsandboxed). Node and the script are at the same path inside
 * the sandbox as outside (bound read-only there, see readOnlyPaths).
 */
export function lineCommentServer(t: LineCommentTool, outDir: string): McpServer {
  return {
    name: MCP_SERVER_NAME,
    outDir,
    command: nodeBinary(),
    args: [
      SERVER_SCRIPT,
      `${outDir}/${COMMENTS_FILE}`,
      ...(t.requestChanges ? ["--request-changes"] : []),
    ],
    tools: t.requestChanges ? [COMMENT_TOOL, CHANGES_TOOL] : [COMMENT_TOOL],
  };
}

/** Host paths the sandbox shows read-only for the server to run. */
export function readOnlyPaths(): string[] {
  const node = nodeBinary();
  return [SERVER_SCRIPT, ...(node.startsWith("/usr/") ? [] : [node])];
}

/** This process's node, its real path (what the sandbox binds). */
function nodeBinary(): string {
  try {
    return fs.realpathSync(process.execPath);
  } catch {
    return process.execPath;
  }
}
