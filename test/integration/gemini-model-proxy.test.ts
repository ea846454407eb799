/**
 * The egress proxy with Gemini's endpoint (src/gemini/model-endpoint.ts): only the model call
 * goes through (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, `:generateContent`,
 * `:countTokens`); every other route and spelling is refused at the proxy and never reaches the
 * API; the key is put on by the proxy; a streamed answer is metered from its usageMetadata.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { geminiModelAccess, GEMINI_PLACEHOLDER } from "../../src/gemini/model-endpoint.js";
import { BRIDGE_URL } from "../../src/sandbox/init-script.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import { startFakeGemini, type FakeGemini } from "../helpers/fake-gemini.js";
import { runModelOnlyShell } from "../helpers/sandbox-shell.js";

const KEY = "AIza-real-gemini-key-for-the-proxy-drill";
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-gemini-proxy-"));
const log = pino({ level: "silent" });
let fake: FakeGemini;
let sandbox: Sandbox;

beforeAll(async () => {
  fake = await startFakeGemini({
    usage: () => ({
      promptTokenCount: 1_000_000,
      cachedContentTokenCount: 400_000,
      candidatesTokenCount: 1000,
      totalTokenCount: 1_001_000,
    }),
  });
  sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
  expect(sandbox.status).toMatchObject({ ok: true });
});
afterAll(async () => {
  await fake?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const M = "gemini-2.5-flash";
const REFUSED: Array<[method: string, target: string]> = [
  ["GET", "/v1beta/models"],
  ["GET", `/v1beta/models/${M}`],
  ["POST", "/v1beta/files"],
  ["POST", "/upload/v1beta/files"],
  ["POST", "/v1beta/cachedContents"],
  ["GET", "/v1beta/cachedContents"],
  ["POST", `/v1beta/models/${M}:streamGenerateContent`],
  ["POST", `/v1beta/models/${M}:streamGenerateContent?alt=sse&key=x`],
  ["POST", `/v1beta/models/${M}:generateContent?alt=sse`],
  ["GET", `/v1beta/models/${M}:generateContent`],
  ["POST", `/v1beta/models/${M}:embedContent`],
  ["POST", `/v1beta/models/${M}:batchGenerateContent`],
  ["POST", "/v1beta/tunedModels/mine:generateContent"],
  ["POST", `/v1/models/${M}:generateContent`],
  ["POST", "/v1beta/models/../files:generateContent"],
  ["POST", "/v1beta/models/%2e%2e:generateContent"],
  ["POST", `/v1beta/models/a/${M}:generateContent`],
  ["POST", `//v1beta/models/${M}:generateContent`],
  ["POST", `/v1beta/models/${M}:generateContent/`],
  ["POST", "/"],
];

function probeLine(method: string, target: string, out: string): string {
  const data = method === "POST" ? `--data '{}'` : "";
  return (
    `printf '%s %s %s\\n' '${method}' '${target}' "$(curl -s -o /dev/null --path-as-is -X ${method} ` +
    `-H 'content-type: application/json' -H 'x-goog-api-key: ${GEMINI_PLACEHOLDER}' ${data} ` +
    `-w '%{http_code}' '${BRIDGE_URL}${target}')" >> ${out}`
  );
}

describe("the model proxy with Gemini's endpoint", { timeout: 180_000 }, () => {
  it("only the model call goes through, with the operator's key; the rest is refused and never reaches the API; a streamed answer is metered", async () => {
    const access = geminiModelAccess({ GEMINI_API_KEY: KEY, GOOGLE_GEMINI_BASE_URL: fake.url });
    expect(access.inside).toEqual({
      GOOGLE_GEMINI_BASE_URL: BRIDGE_URL,
      GEMINI_API_KEY: GEMINI_PLACEHOLDER,
    });
    const ws = fs.mkdtempSync(path.join(root, "ws-"));
    execFileSync("git", ["init", "-q"], { cwd: ws });
    const body = JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] });
    const script = [
      ...REFUSED.map(([m, t]) => probeLine(m, t, "/workspace/probes.txt")),
      `curl -s -o /workspace/answer.txt -w '%{http_code}\\n' -X POST -H 'content-type: application/json' -H 'x-goog-api-key: ${GEMINI_PLACEHOLDER}' --data '${body}' '${BRIDGE_URL}/v1beta/models/${M}:streamGenerateContent?alt=sse' > /workspace/status.txt`,
      `env > /workspace/env.txt`,
    ].join("\n");
    const before = fake.requests.length;
    const egress = await runModelOnlyShell(sandbox, ws, access, script);
    const lines = fs.readFileSync(path.join(ws, "probes.txt"), "utf8").trim().split("\n");
    expect(lines).toHaveLength(REFUSED.length);
    for (const line of lines) expect(line.slice(line.lastIndexOf(" ") + 1), line).toBe("403");
    expect(fs.readFileSync(path.join(ws, "status.txt"), "utf8").trim()).toBe("200");
    const reached = fake.requests.slice(before);
    expect(reached.map((r) => `${r.method} ${r.path}?${r.query.toString()}`)).toEqual([
      `POST /v1beta/models/${M}:streamGenerateContent?alt=sse`,
    ]);
    expect(reached[0]!.headers["x-goog-api-key"]).toBe(KEY);
    // The sandbox holds the placeholder, never the key.
    const env = fs.readFileSync(path.join(ws, "env.txt"), "utf8");
    expect(env).toContain(`GEMINI_API_KEY=${GEMINI_PLACEHOLDER}`);
    expect(env).not.toContain(KEY);
    // gemini-2.5-flash: $0.30 a million input, $0.03 cached, $2.50 output.
    const expected = (600_000 * 0.3 + 400_000 * 0.03 + 1000 * 2.5) / 1_000_000;
    expect(egress!.stats().spentUsd).toBeCloseTo(expected, 6);
  });
});
