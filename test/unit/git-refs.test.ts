import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseLooseRef, parsePackedRefs, refFiles } from "../../src/workspace/git-refs.js";

const A = "a".repeat(40);
const B = "b".repeat(40);
const C = "c".repeat(40);
const SHA256 = "d".repeat(64);

describe("parseLooseRef", () => {
  it.each([
    { content: `${A}\n`, value: { kind: "sha", sha: A } },
    { content: A, value: { kind: "sha", sha: A } },
    { content: `${SHA256}\n`, value: { kind: "sha", sha: SHA256 } },
    { content: "ref: refs/heads/main\n", value: { kind: "symref", target: "refs/heads/main" } },
    {
      content: "ref: refs/remotes/origin/feature/x\n",
      value: { kind: "symref", target: "refs/remotes/origin/feature/x" },
    },
    // Anything git itself would not write is left to git.
    { content: `${A.toUpperCase()}\n`, value: undefined },
    { content: `${A}\n\n`, value: undefined },
    { content: `${A} extra\n`, value: undefined },
    { content: "ref: refs/heads/../../../etc/passwd\n", value: undefined },
    { content: "ref: HEAD\n", value: undefined },
    { content: "ref: heads/main\n", value: undefined },
    { content: "ref:refs/heads/main\n", value: undefined },
    { content: "", value: undefined },
  ])("$content", ({ content, value }) => {
    expect(parseLooseRef(content)).toEqual(value);
  });
});

describe("parsePackedRefs", () => {
  it("reads names and shas, skipping the header and peeled lines", () => {
    const text = [
      "# pack-refs with: peeled fully-peeled sorted ",
      `${A} refs/heads/main`,
      `${B} refs/tags/v1`,
      `^${C}`,
      `${C} refs/pull/7/head`,
      "",
    ].join("\n");
    expect(parsePackedRefs(text)).toEqual(
      new Map([
        ["refs/heads/main", A],
        ["refs/tags/v1", B],
        ["refs/pull/7/head", C],
      ]),
    );
    expect(parsePackedRefs("")).toEqual(new Map());
  });

  it.each([`${A}`, `nothex refs/heads/main`, `${A} HEAD`, `${A}  refs/heads/x`])(
    "gives up on %j",
    (line) => {
      expect(parsePackedRefs(`${line}\n`)).toBeUndefined();
    },
  );
});

describe("refFiles", () => {
  let scratch: string;
  let n = 0;

  beforeAll(async () => {
    scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-refs-"));
  });
  afterAll(async () => {
    await fs.rm(scratch, { recursive: true, force: true });
  });

  /** A .git directory made of the given files (relative path → content). */
  async function gitDir(files: Record<string, string>): Promise<string> {
    const dir = path.join(scratch, `g${++n}`);
    for (const [name, content] of Object.entries(files)) {
      await fs.mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await fs.writeFile(path.join(dir, name), content);
    }
    await fs.mkdir(path.join(dir, "refs", "heads"), { recursive: true });
    return dir;
  }

  it("follows HEAD to a loose branch, and origin/HEAD to a packed one", async () => {
    const refs = refFiles(
      await gitDir({
        HEAD: "ref: refs/heads/main\n",
        "refs/heads/main": `${A}\n`,
        "refs/remotes/origin/HEAD": "ref: refs/remotes/origin/main\n",
        "packed-refs": `# pack-refs with: peeled fully-peeled sorted \n${B} refs/remotes/origin/main\n`,
      }),
    );
    expect(await refs.resolve("HEAD")).toEqual({ ref: "refs/heads/main", sha: A });
    expect(await refs.read("refs/remotes/origin/HEAD")).toEqual({
      kind: "symref",
      target: "refs/remotes/origin/main",
    });
    expect(await refs.resolve("refs/remotes/origin/HEAD")).toEqual({
      ref: "refs/remotes/origin/main",
      sha: B,
    });
  });

  it("prefers a loose ref over its stale packed line", async () => {
    const refs = refFiles(
      await gitDir({
        "refs/heads/main": `${A}\n`,
        "packed-refs": `${B} refs/heads/main\n${C} refs/heads/other\n`,
      }),
    );
    expect(await refs.read("refs/heads/main")).toEqual({ kind: "sha", sha: A });
    expect(await refs.read("refs/heads/other")).toEqual({ kind: "sha", sha: C });
  });

  it("reports missing refs, a detached HEAD and an unborn branch", async () => {
    const detached = refFiles(await gitDir({ HEAD: `${A}\n` }));
    expect(await detached.resolve("HEAD")).toEqual({ ref: "HEAD", sha: A });
    expect(await detached.read("refs/heads/nope")).toEqual({ kind: "missing" });
    // A directory where a ref would be: refs/heads/feature/x exists, so refs/heads/feature cannot.
    const nested = refFiles(await gitDir({ "refs/heads/feature/x": `${A}\n` }));
    expect(await nested.read("refs/heads/feature")).toEqual({ kind: "missing" });
    const unborn = refFiles(await gitDir({ HEAD: "ref: refs/heads/main\n" }));
    expect(await unborn.resolve("HEAD")).toEqual({ ref: "refs/heads/main", sha: null });
  });

  it("leaves to git what it does not understand", async () => {
    const odd = refFiles(
      await gitDir({
        HEAD: "ref: refs/heads/a\n",
        "refs/heads/a": "ref: refs/heads/b\n",
        "refs/heads/b": "ref: refs/heads/a\n",
        "refs/heads/garbage": "hello\n",
      }),
    );
    expect(await odd.resolve("HEAD")).toBeUndefined(); // a symref loop
    expect(await odd.read("refs/heads/garbage")).toBeUndefined();
    expect(await odd.read("refs/heads/../../outside")).toBeUndefined();
    expect(await odd.read("refs/heads/x.lock")).toBeUndefined();
    expect(await odd.read("main")).toBeUndefined();

    // A reftable repository's files are stubs: trust none of them.
    const reftable = refFiles(
      await gitDir({ HEAD: "ref: refs/heads/.invalid\n", "reftable/tables.list": "" }),
    );
    expect(await reftable.read("refs/heads/main")).toBeUndefined();

    const badPacked = refFiles(await gitDir({ "packed-refs": "not a packed-refs file\n" }));
    expect(await badPacked.read("refs/heads/main")).toBeUndefined();
  });
});
