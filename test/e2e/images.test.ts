/**
 * Images from the thread reach the model (issue #39), end to end: the built app, the real Claude
 * CLI in its sandbox, GitHub's stand-in serving a private repository's attachments as GitHub
 * does (401 without a token, then a 302 to storage on another port). The token goes to GitHub's
 * host only, never to storage; a link on another host is not fetched; the footer says what was
 * left out and why.
 */
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { replies } from "../helpers/fake-anthropic.js";

/** A real 4×4 PNG. */
const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000004000000040806000000a9f19e7e0000001249444154789c63f8cf" +
    "c0f01f1933902e00003c401fe1e08177b40000000049454e44ae426082",
  "hex",
);

const db = await createTestDatabase();
let stack: Stack;
/** Another host: it must never be asked for anything. */
const elsewhere: string[] = [];
const other = http.createServer((req, res) => {
  elsewhere.push(req.url ?? "");
  res.writeHead(200, { "content-type": "image/png" });
  res.end(PNG);
});

beforeAll(async () => {
  await new Promise<void>((r) => other.listen(0, "127.0.0.1", () => r()));
  stack = await startStack({ pool: db.pool, databaseUrl: db.url, privateRepo: true });
}, 120_000);
afterAll(async () => {
  await stack?.close();
  other.close();
});

describe("images from the thread", { timeout: 180_000 }, () => {
  it("an attachment in the issue body and one in the comment reach the model as image blocks; the token never leaves GitHub's host", async () => {
    const inBody = stack.gh.addAttachment(REPO, PNG);
    const notImage = stack.gh.addAttachment(REPO, Buffer.from("<html>not an image</html>"));
    const otherHost = `http://127.0.0.1:${(other.address() as AddressInfo).port}/shot.png`;
    const issue = stack.gh.addIssue({
      repo: REPO,
      title: "Broken layout",
      body: `The page looks wrong:\n\n![screenshot](${inBody})\n`,
      user: "alice",
    });
    const n = issue.number as number;
    // A comment's image whose bytes differ, so each block is told apart.
    const second = Buffer.concat([PNG, Buffer.from("trailing bytes")]);
    const inComment = stack.gh.addAttachment(REPO, second);
    // Unauthenticated, GitHub's host refuses a private repository's attachment.
    expect((await fetch(inComment, { redirect: "manual" })).status).toBe(401);

    const ghBefore = stack.gh.requests.length;
    const before = stack.api.messageRequests().length;
    stack.api.script(replies.text("I SEE THE SCREENSHOTS"));
    const task = await stack.finishedTask(
      await stack.comment(
        n,
        `@tether what is wrong here? <img width="300" src="${inComment}">\n![x](${notImage}) ![y](${otherHost})`,
      ),
    );
    expect(task).toMatchObject({ status: "succeeded", outcome: "success" });

    const req = stack.api.messageRequests().slice(before)[0]!;
    const content = req.body!.messages!.at(-1)!.content as Array<Record<string, unknown>>;
    const images = content.filter((b) => b.type === "image");
    expect(images).toEqual([
      {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: second.toString("base64") },
      },
      {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: PNG.toString("base64") },
      },
    ]);

    // The token went to GitHub's host with each attachment request, and to nothing else.
    const asked = stack.gh.requests
      .slice(ghBefore)
      .filter((r) => r.path.startsWith("/user-attachments/"));
    expect(asked.map((r) => r.status).sort()).toEqual([302, 302, 302]);
    for (const r of asked) expect(r.headers.authorization).toMatch(/^token ghs_/);
    expect(stack.gh.storageRequests).toHaveLength(3);
    for (const r of stack.gh.storageRequests) expect(r.headers.authorization).toBeUndefined();
    expect(elsewhere).toEqual([]);

    // The footer names what was shown and what was left out, and why.
    const body = String(stack.taskComments(n, task.id as number)[0]!.body);
    expect(body).toContain("I SEE THE SCREENSHOTS");
    expect(body).toContain("🖼️ 2 images shown");
    expect(body).toContain(`\`${notImage}\` (not a PNG, JPEG, GIF or WebP image)`);
    expect(body).toContain(
      `\`${otherHost}\` (on another host (127.0.0.1:${(other.address() as AddressInfo).port})`,
    );

    // The turn's image directory is gone once the turn ended.
    expect(fs.readdirSync(path.join(stack.dataDir, "images"))).toEqual([]);
  });
});
