/**
 * The savings benchmark's agent policy for the fake Messages API: turns that read files.
 *
 * The repository holds a few source files of fixed size; every comment needs a fixed pair of
 * them (the same in both arms; see needsOf). Asked to answer, the fake looks at the conversation it was sent:
 * for the first needed file whose contents are not in it yet (each file carries a marker line
 * that only its contents contain), it asks the CLI to Read it (one tool call a request, as a
 * model reading files one after another would); once all are there, it answers with text. The
 * real Claude CLI runs the Read and sends the result back, so the file then sits in the session.
 * A resumed session still holds what earlier turns read and reads only what is new to it; a
 * cold start re-reads everything its comment needs. Pure, apart from the turn's needs, which
 * the driver sets before each turn.
 */
import { replies, type FakeReply, type FakeRequest } from "../test/helpers/fake-anthropic.js";
import { answerText } from "./savings-thread.js";

export const FILE_NAMES = [
  "src/split.js",
  "src/csv.js",
  "src/stream.js",
  "src/lines.js",
  "src/export.js",
  "src/config.js",
  "src/errors.js",
  "test/split.test.js",
];

const marker = (file: string) => `/* bench-file: ${file} */`;

/** The repository's files: each about `bytes` of plausible code, led by its marker line. */
export function repoFiles(bytes: number): Record<string, string> {
  const out: Record<string, string> = { "README.md": "# widgets\n" };
  for (const [i, name] of FILE_NAMES.entries()) {
    const lines = [marker(name)];
    for (let n = 0; lines.join("\n").length < bytes - 120; n++)
      lines.push(
        `export function step${i}_${n}(input) {\n  const parts = input.split("\\n"); // part ${n} of ${name}\n  return parts.filter((p, k) => k % ${(n % 7) + 2} !== 0).join("\\n");\n}`,
      );
    out[name] = `${lines.join("\n")}\n`;
  }
  return out;
}

/**
 * The files comment `turn` (1-based) needs, fixed per comment: the module the thread is about
 * and one of four others in turn, so a thread keeps coming back to code it has read.
 */
export function needsOf(turn: number): string[] {
  return [FILE_NAMES[0]!, FILE_NAMES[((turn - 1) % 4) + 1]!];
}

/** The workspace the CLI runs in, as its system prompt states it. */
function workingDirectory(req: FakeRequest): string | null {
  const text = JSON.stringify([req.body?.system ?? "", req.body?.messages?.[0] ?? ""]);
  const m = /[Ww]orking directory:\s*([^\s"\\]+)/.exec(text);
  return m?.[1] ?? null;
}

export interface ReadingAgent {
  /** The comment being answered now (both arms answer the same comment in turn). */
  setTurn(turn: number): void;
  reply(req: FakeRequest): FakeReply;
}

/** How the CLI's file-reading tool is called: Claude Code's `Read`, or opencode's `read`. */
const READ_TOOL = {
  claude: (file: string) => ({ name: "Read", input: { file_path: file } }),
  opencode: (file: string) => ({ name: "read", input: { filePath: file } }),
};

export function readingAgent(
  replyBytes: number,
  cli: keyof typeof READ_TOOL = "claude",
): ReadingAgent {
  let needs: string[] = [];
  return {
    setTurn(turn) {
      needs = needsOf(turn);
    },
    reply(req) {
      const conversation = JSON.stringify(req.body?.messages ?? []);
      const missing = needs.find((f) => !conversation.includes(marker(f)));
      const cwd = workingDirectory(req);
      if (missing && cwd) {
        const call = READ_TOOL[cli](`${cwd}/${missing}`);
        return replies.toolUse(call.name, call.input, `Reading ${missing}.`);
      }
      return replies.text(answerText(replyBytes, req.n));
    },
  };
}
