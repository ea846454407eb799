import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunSpec } from "../../src/agent-cli/runtime-adapter.js";
import { createClaudeCli } from "../../src/claude/claude-cli.js";
import { createCodexCli } from "../../src/codex/codex-cli.js";
import { createGeminiCli, resolveGeminiPath } from "../../src/gemini/gemini-cli.js";
import { createOpencodeCli } from "../../src/opencode/opencode-cli.js";
import type { TurnImage } from "../../src/core/images.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import { replies, startFakeAnthropic, type FakeAnthropic } from "../helpers/fake-anthropic.js";
import { startFakeOpenAI, type FakeOpenAI } from "../helpers/fake-openai.js";
import { resolveCodexBinary } from "../helpers/real-codex.js";
import { geminiReplies, startFakeGemini } from "../helpers/fake-gemini.js";
import { resolveOpencodeBinary } from "../helpers/real-opencode.js";

/*
 * Images from the thread reach the model (issue #39): each CLI that takes images, the real
 * pinned binary in Tether's sandbox against its fake model API (Claude's and opencode's the
 * Messages API, Codex's the Responses API, Gemini's its own), is given a turn's image files
 * (a directory outside the checkout) and the image's bytes show up, base64, in the request the
 * model API receives.
 */

const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-images-"));
const log = pino({ level: "silent" });
let sandbox: Sandbox;
let anthropic: FakeAnthropic;
let openai: FakeOpenAI;

/** A real 4×4 PNG (red), valid to the CRCs: Codex decodes an image before it sends it. */
const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000004000000040806000000a9f19e7e0000001249444154789c63f8cf" +
    "c0f01f1933902e00003c401fe1e08177b40000000049454e44ae426082",
  "hex",
);

beforeAll(async () => {
  anthropic = await startFakeAnthropic();
  openai = await startFakeOpenAI();
  sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
  expect(sandbox.status).toMatchObject({ ok: true });
});
afterAll(async () => {
  await anthropic?.close();
  await openai?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

let n = 0;
/** A checkout and HOME, and the turn's image directory beside them (never inside the checkout). */
function place(): { cwd: string; home: string; images: TurnImage[] } {
  const k = ++n;
  const cwd = path.join(root, `work-${k}`);
  const home = path.join(root, `home-${k}`);
  const dir = path.join(root, `images-${k}`);
  for (const d of [cwd, home, dir]) fs.mkdirSync(d);
  execFileSync("git", ["init", "-q"], { cwd });
  const file = path.join(dir, "image-1.png");
  fs.writeFileSync(file, PNG);
  return { cwd, home, images: [{ path: file, mediaType: "image/png", source: "shot.png" }] };
}

const b64 = PNG.toString("base64");

/** A turn asking about the screenshot in place `p`, with its images (or `images`). */
function turn(
  p: { cwd: string; home: string; images: TurnImage[] },
  model: string,
  images = p.images,
): RunSpec {
  return {
    cwd: p.cwd,
    home: p.home,
    prompt: "What is in the screenshot?",
    images,
    settings: { model, timeoutMs: 120_000, stallMs: 120_000 },
    sandbox: { sandbox, network: { kind: "model-only" } },
  };
}

/** A CLI's base environment: the temp root as HOME, and the model API's key and URL. */
const env = (model: Record<string, string>) => ({
  PATH: process.env.PATH,
  HOME: root,
  LANG: "C.UTF-8",
  ...model,
});
/** The same for Claude's CLI, which is given no LANG here. */
const claudeEnv = (model: Record<string, string>) => ({
  PATH: process.env.PATH,
  HOME: root,
  ...model,
});

describe("images reach the model", { timeout: 240_000 }, () => {
  it("Claude: one stream-json user message, the prompt and an image block (base64)", async () => {
    const cli = createClaudeCli({
      log,
      baseEnv: claudeEnv({ ANTHROPIC_API_KEY: "sk-test", ANTHROPIC_BASE_URL: anthropic.url }),
    });
    const p = place();
    anthropic.script(replies.text("I SEE A PIXEL"));
    const before = anthropic.messageRequests().length;
    const spec: RunSpec = turn(p, "claude-sonnet-4-5");
    const o = await cli.start(spec).outcome;
    expect(o).toMatchObject({ kind: "success", resultText: "I SEE A PIXEL" });
    const req = anthropic.messageRequests().slice(before)[0]!;
    const content = req.body!.messages!.at(-1)!.content as Array<Record<string, unknown>>;
    expect(content).toContainEqual(
      expect.objectContaining({
        type: "image",
        source: { type: "base64", media_type: "image/png", data: b64 },
      }),
    );
    expect(JSON.stringify(content)).toContain("What is in the screenshot?");
    // The session resumes as any other: the image stays in its history.
    anthropic.script(replies.text("STILL A PIXEL"));
    const again = await cli.start({
      ...spec,
      images: [],
      prompt: "And now?",
      resumeSessionId: o.sessionId!,
    }).outcome;
    expect(again).toMatchObject({ kind: "success", resultText: "STILL A PIXEL" });
    expect(JSON.stringify(anthropic.messageRequests().at(-1)!.body)).toContain(b64);
  });

  it("images inside the checkout are refused before the CLI starts (the agent could change them)", async () => {
    const cli = createClaudeCli({ log, baseEnv: { PATH: process.env.PATH, HOME: root } });
    const p = place();
    const inside = path.join(p.cwd, "shot.png");
    fs.writeFileSync(inside, PNG);
    const o = await cli.start(
      turn(p, "claude-sonnet-4-5", [{ path: inside, mediaType: "image/png", source: "shot.png" }]),
    ).outcome;
    expect(o).toMatchObject({
      kind: "failed",
      detail: "the turn's images must be outside the working directory",
    });
  });

  it("Codex: --image with the file's path in the sandbox, the bytes as a data URL", async () => {
    const cli = createCodexCli({
      path: resolveCodexBinary(),
      log,
      baseEnv: env({ OPENAI_API_KEY: "sk-test-openai", OPENAI_BASE_URL: openai.url }),
    });
    const p = place();
    const before = openai.responseRequests().length;
    const o = await cli.start(turn(p, "gpt-5.5")).outcome;
    expect(o.kind).toBe("success");
    const body = JSON.stringify(openai.responseRequests().slice(before)[0]!.body);
    expect(body).toContain(`data:image/png;base64,${b64}`);
    expect(body).toContain("What is in the screenshot?");
  });

  it("Gemini: @<path> references to the images' directory, the bytes as inline data", async () => {
    const fake = await startFakeGemini();
    try {
      const cli = createGeminiCli({
        path: resolveGeminiPath({}),
        log,
        baseEnv: env({ GEMINI_API_KEY: "AIza-test", GOOGLE_GEMINI_BASE_URL: fake.url }),
      });
      const p = place();
      fake.script(geminiReplies.text("A RED SQUARE"));
      const o = await cli.start(turn(p, "gemini-2.5-flash")).outcome;
      expect(o.kind, o.detail + o.stderrTail).toBe("success");
      const bodies = fake.requests.map((r) => JSON.stringify(r.body ?? ""));
      expect(
        bodies.some(
          (b) =>
            b.includes(
              JSON.stringify({ inlineData: { data: b64, mimeType: "image/png" } }).slice(1, -1),
            ) ||
            (b.includes(b64) && b.includes("inlineData")),
        ),
      ).toBe(true);
    } finally {
      await fake.close();
    }
  });

  it("opencode: --file attachments, the bytes as an image block of the Messages API", async () => {
    const cli = createOpencodeCli({
      path: resolveOpencodeBinary(),
      log,
      baseEnv: env({ ANTHROPIC_API_KEY: "sk-test", ANTHROPIC_BASE_URL: anthropic.url }),
    });
    const p = place();
    anthropic.script(replies.text("A RED SQUARE"));
    const before = anthropic.messageRequests().length;
    const o = await cli.start(turn(p, "claude-sonnet-4-5")).outcome;
    expect(o.kind, o.detail + o.stderrTail).toBe("success");
    const sent = anthropic.messageRequests().slice(before);
    const blocks = sent.flatMap((r) =>
      (r.body?.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : [])),
    );
    expect(blocks).toContainEqual(
      expect.objectContaining({
        type: "image",
        source: expect.objectContaining({ type: "base64", media_type: "image/png", data: b64 }),
      }),
    );
  });
});
