import fs from "node:fs";
import path from "node:path";
import { newEvidence, observe, type RunEvidence } from "../../src/claude/run-evidence.js";
import type { RunEvent } from "../../src/agent-cli/runtime-adapter.js";
import { StreamParser, type StreamMessage } from "../../src/claude/stream-parser.js";

/** Recorded CLI output (see fake-claude-fixtures/README.md). */
export const FIXTURES = path.resolve(import.meta.dirname, "fake-claude-fixtures");

/** A fixture's bytes through the parser, cut into chunks like a pipe delivers them. */
export function replayFixture(
  name: string,
  chunkSize = 97,
): { messages: StreamMessage[]; parser: StreamParser } {
  return replayBytes(fs.readFileSync(path.join(FIXTURES, name)), chunkSize);
}

export function replayBytes(
  bytes: Buffer,
  chunkSize = 97,
): { messages: StreamMessage[]; parser: StreamParser } {
  const parser = new StreamParser();
  const messages: StreamMessage[] = [];
  for (let i = 0; i < bytes.length; i += chunkSize) {
    messages.push(...parser.push(bytes.subarray(i, i + chunkSize)));
  }
  messages.push(...parser.end());
  return { messages, parser };
}

/** The evidence and events a stream of lines gives. */
export function evidenceOf(lines: Array<string | object>): {
  evidence: RunEvidence;
  events: RunEvent[];
} {
  const text = lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n");
  const { messages } = replayBytes(Buffer.from(`${text}\n`));
  const evidence = newEvidence();
  const events = messages.flatMap((m) => observe(evidence, m));
  return { evidence, events };
}

/** A fixture's lines as text. */
export function fixtureLines(name: string): string[] {
  return fs.readFileSync(path.join(FIXTURES, name), "utf8").split("\n").filter(Boolean);
}
