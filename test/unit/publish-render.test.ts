/** What the answer says about the agent's changes (docs/changes.md "Changes"). */
import { describe, expect, it } from "vitest";
import type { FileChange } from "../../src/publish/mirror-git.js";
import { renderChanges, type PublishReport } from "../../src/publish/report.js";
import { MAX_ANSWER, renderAnswer } from "../../src/runner/render/thread-comments.js";

const files: FileChange[] = [
  { path: "src/parser.ts", status: "M", mode: "100644", bytes: 120, added: 3, removed: 1 },
  { path: "test/parser.test.ts", status: "A", mode: "100644", bytes: 80, added: 10, removed: 0 },
  { path: "logo.png", status: "A", mode: "100644", bytes: 900, added: null, removed: null },
];

const published: PublishReport = {
  result: "published",
  branch: "tether/15-tether",
  branchUrl: "https://github.com/o/r/tree/tether/15-tether",
  sha: "0123456789abcdef0123456789abcdef01234567",
  commits: 1,
  files,
  merged: [],
  pull: {
    number: 16,
    url: "https://github.com/o/r/pull/16",
    opened: true,
    draft: true,
    state: "open",
  },
  compareUrl: null,
};

describe("renderChanges", () => {
  it("links the branch, the commit and the pull request, and shows what changed", () => {
    expect(renderChanges(published)).toBe(
      [
        "📦 **Changes**: pushed 1 commit to [`tether/15-tether`](https://github.com/o/r/tree/tether/15-tether) (`0123456`).",
        "Opened draft pull request [#16](https://github.com/o/r/pull/16).",
        "",
        "| file | + | − |",
        "| --- | --: | --: |",
        "| `src/parser.ts` | +3 | −1 |",
        "| `test/parser.test.ts` (new) | +10 | −0 |",
        "| `logo.png` (new) | binary | |",
        "| **3 files** | **+13** | **−1** |",
      ].join("\n"),
    );
  });

  it("on a follow-up, says the pull request has the new commit; a merge names whose commits were kept", () => {
    const text = renderChanges({
      ...published,
      commits: 2,
      pull: { ...published.pull!, opened: false },
      merged: [{ sha: "abc1234", author: "bob", subject: "notes" }],
    });
    expect(text).toContain("pushed 2 commits");
    expect(text).toContain(
      "Pull request [#16](https://github.com/o/r/pull/16) has the new commit.",
    );
    expect(text).toContain("their commit (`abc1234`) is kept and merged with mine");
  });

  it("says once that the pull request was opened ready because the repository has no drafts", () => {
    const text = renderChanges({
      ...published,
      pull: { ...published.pull!, draft: false, draftsUnsupported: true },
    });
    expect(text).toContain(
      "Opened pull request [#16](https://github.com/o/r/pull/16) ready for review, not as a draft: this repository does not support draft pull requests",
    );
    expect(text.match(/draft/gi)).toHaveLength(2);
    // On a follow-up the pull request exists: nothing more to say about drafts.
    expect(
      renderChanges({
        ...published,
        pull: { ...published.pull!, opened: false, draft: false, draftsUnsupported: true },
      }),
    ).not.toMatch(/draft/i);
  });

  it("a commit made through GitHub's API says so, and that GitHub verified it", () => {
    expect(renderChanges({ ...published, signed: true }).split("\n")[0]).toBe(
      "📦 **Changes**: committed 1 commit to [`tether/15-tether`](https://github.com/o/r/tree/tether/15-tether) (`0123456`) through GitHub's API, signed by GitHub (Verified).",
    );
    expect(renderChanges({ ...published, signed: false }).split("\n")[0]).not.toContain("Verified");
  });

  it("a push that fell back from the API carries its note under the first line", () => {
    const lines = renderChanges({ ...published, note: "Pushed with git, unsigned: why." }).split(
      "\n",
    );
    expect(lines[0]).toContain("pushed 1 commit");
    expect(lines[1]).toBe("Pushed with git, unsigned: why.");
  });

  it("in branch mode, offers the compare link", () => {
    const text = renderChanges({
      ...published,
      pull: null,
      compareUrl: "https://github.com/o/r/compare/main...x",
    });
    expect(text).toContain(
      "[Open a pull request](https://github.com/o/r/compare/main...x) from it.",
    );
  });

  it("refusals say that nothing was published, why, and that the work is kept", () => {
    const text = renderChanges({
      result: "refused",
      reason: "workflow",
      messages: ["the change touches `.github/workflows/ci.yml` under …"],
      files: [],
    });
    expect(text).toMatch(/^⚠️ \*\*Changes not published\*\*: they stay in my workspace/);
    expect(text).toContain("- The change touches `.github/workflows/ci.yml`");
  });

  it("a fork's patch sits in a collapsed block whose fence no line of the patch can close", () => {
    const patch = "diff --git a/x.md b/x.md\n+```\n+````\n";
    const text = renderChanges({ result: "patch", files: [files[0]!], patch, cut: false });
    expect(text).toContain("nothing was pushed to it");
    expect(text).toContain("<details><summary>Patch (1 file, +3 −1)</summary>");
    expect(text).toContain("`````diff\n" + patch.trimEnd() + "\n`````");
  });

  it("says nothing when nothing changed", () => {
    expect(renderChanges({ result: "unchanged" })).toBe("");
  });

  it("keeps the whole answer under GitHub's comment limit: the agent's text gives way", () => {
    const changes = "x".repeat(30_000);
    const body = renderAnswer(
      7,
      "y".repeat(MAX_ANSWER),
      { resumed: false, reason: null, sessionId: null, usage: null },
      changes,
    );
    expect(body.length).toBeLessThan(65_536);
    expect(body).toContain(changes);
    expect(body).toContain("Answer cut at");
  });
});
