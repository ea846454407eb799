import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  commitFiles,
  initBareRepo,
  readPath,
  readPathByGit,
  refSha,
  refShaByGit,
  standInGitEnv,
  updateRef,
} from "../helpers/fake-github-git.js";

/**
 * The stand-in's branch lookups and contents reads come from the ref files and a cache instead
 * of a git process each; every answer here is checked against git's own. Where it matters which
 * way an answer came, it is asked again with no git on PATH: the files (or the cache) still
 * answer, a fallback to git does not.
 */

let scratch: string;
let bare: string;
let env: Record<string, string>;
/** The same environment with no git to run. */
let noGit: Record<string, string>;
let clock = Date.UTC(2024, 0, 1);

beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-fake-gh-git-"));
  const home = path.join(scratch, "home");
  const empty = path.join(scratch, "empty-path");
  await fs.mkdir(home);
  await fs.mkdir(empty);
  env = standInGitEnv(home);
  noGit = { ...env, PATH: empty };
  bare = path.join(scratch, "repo.git");
  await initBareRepo(bare, "main", env);
  await commit("main", {
    "README.md": "# widgets\n",
    "src/index.ts": "export {};\n",
    "src/lib/util.ts": "export const x = 1;\n",
  });
  await commit("main", { "src/lib/util.ts": "export const x = 2;\n" });
});

afterAll(async () => {
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

async function commit(branch: string, files: Record<string, string | null>, from?: string) {
  clock += 60_000;
  return commitFiles(
    bare,
    { branch, files, message: `on ${branch}`, from, when: new Date(clock) },
    env,
  );
}

async function git(...args: string[]): Promise<string> {
  const r = await execa("git", args, { cwd: bare, env, extendEnv: false });
  return r.stdout;
}

async function packRefs() {
  await git("pack-refs", "--all");
}

async function looseExists(ref: string): Promise<boolean> {
  return fs.access(path.join(bare, ref)).then(
    () => true,
    () => false,
  );
}

/** refSha agrees with git, and says whether the answer needed git. */
async function expectRefSha(ref: string, want: string | undefined, via: "files" | "git") {
  expect(await refShaByGit(bare, ref, env)).toBe(want);
  expect(await refSha(bare, ref, env)).toBe(want);
  expect(await refSha(bare, ref, noGit)).toBe(via === "files" ? want : undefined);
}

describe("refSha", () => {
  it("reads a loose branch from its file", async () => {
    const sha = await git("rev-parse", "main");
    expect(await looseExists("refs/heads/main")).toBe(true);
    await expectRefSha("refs/heads/main", sha, "files");
  });

  it("reads a branch with a slash in its name", async () => {
    const sha = await commit("tether/4-agent", { "agent.txt": "hello\n" }, "refs/heads/main");
    await expectRefSha("refs/heads/tether/4-agent", sha, "files");
  });

  it("reads a packed branch from packed-refs", async () => {
    const sha = await commit("packed-one", { "p.txt": "1\n" }, "refs/heads/main");
    await packRefs();
    expect(await looseExists("refs/heads/packed-one")).toBe(false);
    expect(await fs.readFile(path.join(bare, "packed-refs"), "utf8")).toContain(
      `${sha} refs/heads/packed-one\n`,
    );
    await expectRefSha("refs/heads/packed-one", sha, "files");
  });

  it("prefers the loose file when a branch is both packed and loose", async () => {
    const packed = await commit("both", { "b.txt": "1\n" }, "refs/heads/main");
    await packRefs();
    const loose = await commit("both", { "b.txt": "2\n" });
    expect(loose).not.toBe(packed);
    expect(await fs.readFile(path.join(bare, "packed-refs"), "utf8")).toContain(
      `${packed} refs/heads/both\n`,
    );
    expect((await fs.readFile(path.join(bare, "refs/heads/both"), "utf8")).trim()).toBe(loose);
    await expectRefSha("refs/heads/both", loose, "files");
  });

  it("answers undefined for a branch that does not exist, as git does", async () => {
    await expectRefSha("refs/heads/no-such-branch", undefined, "files");
    await expectRefSha("refs/heads/tether/99-agent", undefined, "files");
  });

  it("leaves a name outside the safe set to git", async () => {
    const sha = await commit("a+b", { "plus.txt": "+\n" }, "refs/heads/main");
    await expectRefSha("refs/heads/a+b", sha, "git");
    const main = await git("rev-parse", "main");
    const parent = await git("rev-parse", "main~1");
    await expectRefSha("refs/heads/main~1", parent, "git");
    await expectRefSha("refs/heads/main^{commit}", main, "git");
    // Not under refs/heads/.
    await updateRef(bare, "refs/pull/1/head", main, env);
    await expectRefSha("refs/pull/1/head", main, "git");
  });

  it("leaves a symbolic branch to git", async () => {
    await fs.writeFile(path.join(bare, "refs/heads/sym"), "ref: refs/heads/main\n");
    try {
      await expectRefSha("refs/heads/sym", await git("rev-parse", "main"), "git");
    } finally {
      await fs.rm(path.join(bare, "refs/heads/sym"));
    }
  });

  it("leaves it to git when git would find the name under another of its rules", async () => {
    // git reads refs/heads/ghost as refs/heads/refs/heads/ghost when there is no refs/heads/ghost.
    const main = await git("rev-parse", "main");
    await updateRef(bare, "refs/heads/refs/heads/ghost", main, env);
    try {
      await expectRefSha("refs/heads/ghost", main, "git");
    } finally {
      await git("update-ref", "-d", "refs/heads/refs/heads/ghost");
    }
  });

  it("leaves a missing name that reads as `git describe` output to git", async () => {
    // "…-g<abbreviated sha>" names that commit to git even though no such branch exists.
    const main = await git("rev-parse", "main");
    await expectRefSha(`refs/heads/nope-g${main.slice(0, 7)}`, main, "git");
  });
});

describe("readPath", () => {
  it("reads a file, a directory, the root and a missing path as git does", async () => {
    for (const p of [
      "README.md",
      "/src/index.ts",
      "src",
      "src/lib/",
      "",
      "/",
      "nope",
      "src/nope",
    ]) {
      const want = await readPathByGit(bare, "main", p, env);
      expect(await readPath(bare, "main", p, env)).toEqual(want);
      // Asked again, from the ref file and the cache: no git process at all.
      expect(await readPath(bare, "main", p, noGit)).toEqual(want);
    }
    const file = await readPath(bare, "main", "README.md", env);
    expect(file?.type === "file" && file.content.toString()).toBe("# widgets\n");
    const dir = await readPath(bare, "main", "src", env);
    expect(dir?.type === "dir" && dir.entries.map((e) => [e.type, e.path])).toEqual([
      ["file", "src/index.ts"],
      ["dir", "src/lib"],
    ]);
    expect(await readPath(bare, "main", "nope", env)).toBeUndefined();
  });

  it("answers an unknown ref as git's failing ls-tree did: an empty root, no path", async () => {
    for (const ref of ["no-such-branch", "tether/99-agent", "refs/heads/no-such-branch"]) {
      for (const p of ["", "README.md", "src"]) {
        const want = await readPathByGit(bare, ref, p, env);
        expect(want).toEqual(p === "" ? { type: "dir", entries: [] } : undefined);
        expect(await readPath(bare, ref, p, env)).toEqual(want);
        expect(await readPath(bare, ref, p, noGit)).toEqual(want);
      }
    }
    // A 40-hex sha that is no object here: git's answer, and nothing kept.
    const ghost = "0123456789abcdef0123456789abcdef01234567";
    expect(await readPath(bare, ghost, "", env)).toEqual(await readPathByGit(bare, ghost, "", env));
    expect(await readPath(bare, ghost, "README.md", env)).toBeUndefined();
  });

  it("reads a branch with a slash, a packed branch, a sha and other git names as git does", async () => {
    const main = await git("rev-parse", "main");
    const refs = [
      "tether/4-agent",
      "refs/heads/tether/4-agent",
      "packed-one",
      "both",
      main,
      main.toUpperCase(),
      main.slice(0, 10),
      "main~1",
      "main:src",
      "HEAD",
      "a+b",
    ];
    for (const ref of refs) {
      for (const p of ["", "README.md", "agent.txt", "b.txt", "lib", "index.ts"]) {
        expect(await readPath(bare, ref, p, env)).toEqual(await readPathByGit(bare, ref, p, env));
      }
    }
  });

  it("sees a new commit on the branch (the cache is keyed by the commit, not the name)", async () => {
    await commit("moving", { "m.txt": "one\n" }, "refs/heads/main");
    const before = await readPath(bare, "moving", "m.txt", env);
    expect(before?.type === "file" && before.content.toString()).toBe("one\n");
    await commit("moving", { "m.txt": "two\n", "n.txt": "new\n" });
    const after = await readPath(bare, "moving", "m.txt", env);
    expect(after?.type === "file" && after.content.toString()).toBe("two\n");
    expect(after).toEqual(await readPathByGit(bare, "moving", "m.txt", env));
    expect(await readPath(bare, "moving", "", env)).toEqual(
      await readPathByGit(bare, "moving", "", env),
    );
  });

  it("follows git's order when a tag and a branch share a name: the tag first", async () => {
    const tagged = await commit("dup-base", { "which.txt": "tag\n" }, "refs/heads/main");
    await commit("dup", { "which.txt": "branch\n" }, "refs/heads/main");
    await updateRef(bare, "refs/tags/dup", tagged, env);
    const read = async (e: Record<string, string>) => {
      const got = await readPath(bare, "dup", "which.txt", e);
      return got?.type === "file" ? got.content.toString() : got;
    };
    expect(await readPathByGit(bare, "dup", "which.txt", env)).toEqual(
      await readPath(bare, "dup", "which.txt", env),
    );
    expect(await read(env)).toBe("tag\n");
    expect(await read(noGit)).toBe("tag\n");

    // The same with an annotated tag, packed.
    await git(
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@t.invalid",
      "tag",
      "-a",
      "-m",
      "t",
      "dup2",
      tagged,
    );
    await commit("dup2", { "which.txt": "branch 2\n" }, "refs/heads/main");
    await packRefs();
    expect(await looseExists("refs/tags/dup2")).toBe(false);
    const want = await readPathByGit(bare, "dup2", "which.txt", env);
    expect(want?.type === "file" && want.content.toString()).toBe("tag\n");
    expect(await readPath(bare, "dup2", "which.txt", env)).toEqual(want);
    expect(await readPath(bare, "dup2", "which.txt", noGit)).toEqual(want);
    // The branch by its full name is still the branch.
    const branch = await readPath(bare, "refs/heads/dup2", "which.txt", env);
    expect(branch?.type === "file" && branch.content.toString()).toBe("branch 2\n");
  });

  it("hands out copies: changing an answer does not change the next one", async () => {
    const first = await readPath(bare, "main", "README.md", env);
    if (first?.type !== "file") throw new Error("expected a file");
    first.content.fill(0);
    const dir = await readPath(bare, "main", "src", env);
    if (dir?.type !== "dir") throw new Error("expected a directory");
    dir.entries[0]!.name = "changed";
    dir.entries.pop();
    const again = await readPath(bare, "main", "README.md", noGit);
    expect(again?.type === "file" && again.content.toString()).toBe("# widgets\n");
    expect(await readPath(bare, "main", "src", noGit)).toEqual(
      await readPathByGit(bare, "main", "src", env),
    );
  });
});
