import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectImages } from "../../src/runner/turn/turn-images.js";
import { hostGit } from "../../src/workspace/git.js";
import { readRepoFile } from "../../src/workspace/repo-file.js";

/*
 * The image fetcher over real HTTP and a real git repository: the token on the first request to
 * GitHub's host only, never on the redirect; bytes bounded and sniffed; a repository file read
 * from the tree at a commit, confined to it.
 */

const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000004000000040806000000a9f19e7e0000001249444154789c63f8cf" +
    "c0f01f1933902e00003c401fe1e08177b40000000049454e44ae426082",
  "hex",
);
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-turn-images-"));
const seen: Array<{ server: string; url: string; auth: string | undefined }> = [];
let github = "";
let storage = "";

function serve(name: string, handle: http.RequestListener): Promise<http.Server> {
  const s = http.createServer((req, res) => {
    seen.push({ server: name, url: req.url ?? "", auth: req.headers.authorization });
    handle(req, res);
  });
  return new Promise((r) => s.listen(0, "127.0.0.1", () => r(s)));
}
const servers: http.Server[] = [];

beforeAll(async () => {
  const st = await serve("storage", (req, res) => {
    const at = new URL(req.url ?? "/", "http://x").pathname;
    if (at === "/png") {
      // A lying type: the bytes say PNG.
      res.writeHead(200, { "content-type": "text/html" });
      res.end(PNG);
    } else if (at === "/big") {
      // No length announced: the reader stops past the cap.
      res.writeHead(200);
      res.write(PNG);
      res.end(Buffer.alloc(64 * 1024));
    } else if (at === "/html") {
      res.writeHead(200, { "content-type": "image/png" });
      res.end("<html>");
    } else if (at === "/hang") {
      res.writeHead(200);
      res.write(PNG.subarray(0, 4)); // and never more
    } else res.writeHead(404).end();
  });
  storage = `http://127.0.0.1:${(st.address() as AddressInfo).port}`;
  const gh = await serve("github", (req, res) => {
    const to = req.url!.replace("/user-attachments/assets/", "/");
    if (to === "/loop")
      return void res.writeHead(302, { location: `${github}/user-attachments/assets/loop` }).end();
    if (!req.headers.authorization) return void res.writeHead(401).end();
    res.writeHead(302, { location: `${storage}${to}?sig=1` }).end();
  });
  github = `http://127.0.0.1:${(gh.address() as AddressInfo).port}`;
  servers.push(st, gh);
});
afterAll(() => {
  for (const s of servers) s.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const att = (id: string) => ({
  kind: "attachment" as const,
  source: id,
  url: `${github}/user-attachments/assets/${id}`,
});
let dirs = 0;
const dir = () => path.join(root, `images-${++dirs}`);

describe("collectImages over HTTP", () => {
  it("the token goes to GitHub's host on the first request only; storage gets none; the type is sniffed", async () => {
    seen.length = 0;
    const d = dir();
    const got = await collectImages([att("png")], d, { token: "ghs_secret" });
    expect(got.skipped).toEqual([]);
    expect(got.images).toEqual([
      { path: path.join(d, "image-1.png"), mediaType: "image/png", source: "png" },
    ]);
    expect(fs.readFileSync(got.images[0]!.path)).toEqual(PNG);
    expect(seen).toEqual([
      { server: "github", url: "/user-attachments/assets/png", auth: "token ghs_secret" },
      { server: "storage", url: "/png?sig=1", auth: undefined },
    ]);
  });

  it("names what it left out, with why, and goes on with the rest", async () => {
    seen.length = 0;
    const refs = [att("html"), att("big"), att("missing"), att("loop"), att("png")];
    const got = await collectImages(refs, dir(), { token: "ghs_secret", maxBytes: 32 * 1024 });
    expect(got.skipped).toEqual([
      { source: "html", why: "not a PNG, JPEG, GIF or WebP image" },
      { source: "big", why: "larger than 32 KB" },
      { source: "missing", why: `${new URL(storage).host} answered 404 after a redirect` },
      { source: "loop", why: "more than 3 redirects" },
    ]);
    expect(got.images.map((i) => i.source)).toEqual(["png"]);
    // A redirect back to GitHub's host does not get the token again.
    const loops = seen.filter((s) => s.url.endsWith("/loop"));
    expect(loops.map((l) => l.auth)).toEqual(["token ghs_secret", undefined, undefined, undefined]);
  });

  it("a download that stalls ends at its time limit (the server never finishes: no race)", async () => {
    const got = await collectImages([att("hang")], dir(), { token: "ghs_secret", timeoutMs: 300 });
    expect(got.skipped).toEqual([{ source: "hang", why: "took too long to download" }]);
  });

  it("without a token, a private repository's attachment is refused by GitHub, and said so", async () => {
    const got = await collectImages([att("png")], dir(), { token: undefined });
    expect(got).toEqual({ images: [], skipped: [{ source: "png", why: "GitHub answered 401" }] });
  });
});

describe("readRepoFile: a file of the tree at a commit, from the mirror", () => {
  const repo = path.join(root, "repo");
  const git = hostGit({ home: root, log: pino({ level: "silent" }) });
  let commit = "";
  beforeAll(() => {
    fs.mkdirSync(path.join(repo, "docs"), { recursive: true });
    fs.writeFileSync(path.join(repo, "docs", "shot.png"), PNG);
    fs.writeFileSync(path.join(root, "outside.png"), PNG);
    fs.symlinkSync(path.join(root, "outside.png"), path.join(repo, "docs", "link.png"));
    fs.symlinkSync(root, path.join(repo, "up"));
    const run = (...a: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...a], { cwd: repo })
        .toString()
        .trim();
    run("init", "-q");
    run("add", "-A");
    run("commit", "-qm", "c");
    commit = run("rev-parse", "HEAD");
  });
  const read = (p: string, maxBytes = 1 << 20) =>
    readRepoFile({ git, mirror: repo, repo: "o/r", commit, path: p, maxBytes });

  it("reads a regular file", async () => {
    expect(await read("docs/shot.png")).toEqual(PNG);
  });
  it.each([
    ["a link to a file outside", "docs/link.png"],
    ["a path through a linked directory", "up/outside.png"],
    ["a directory", "docs"],
    ["nothing there", "docs/none.png"],
    ["a path with ..", "docs/../docs/shot.png"],
  ])("null for %s", async (_, p) => {
    expect(await read(p)).toBeNull();
  });
  it("too_big past the cap", async () => {
    expect(await read("docs/shot.png", 10)).toBe("too_big");
  });
  it("null for a commit that is no object name", async () => {
    expect(
      await readRepoFile({
        git,
        mirror: repo,
        repo: "o/r",
        commit: "HEAD",
        path: "docs/shot.png",
        maxBytes: 1 << 20,
      }),
    ).toBeNull();
  });
});
