/**
 * What became of a turn's changes, and how the answer says so. Rendering is pure
 * (test/unit/publish-render.test.ts).
 */
import type { FileChange } from "./mirror-git.js";
import type { RefusalReason } from "./checks.js";

/** Codes for publishes that did not happen, counted by the dashboard. */
export type PublishReason =
  | RefusalReason
  | "conflict"
  | "workspace"
  | "push-refused"
  | "signatures-required"
  | "permission"
  | "workflows-permission"
  | "error";

export type PublishReport =
  /** The agent changed nothing. */
  | { result: "unchanged" }
  | {
      result: "published";
      branch: string;
      branchUrl: string;
      /** The commit the branch now points at. */
      sha: string;
      /** Commits pushed: the turn's one, and a merge when others pushed meanwhile. */
      commits: number;
      files: FileChange[];
      /** Commits others pushed to the branch during the turn, merged with the agent's. */
      merged: Array<{ sha: string; author: string; subject: string }>;
      /** The pull request: opened now, or the one the branch already had. Null in `branch` mode. */
      pull: {
        number: number;
        url: string;
        opened: boolean;
        draft: boolean;
        state: string;
        /** Asked for as a draft, opened ready: the repository does not support drafts. */
        draftsUnsupported?: boolean;
      } | null;
      /** `branch` mode: where to open one. */
      compareUrl: string | null;
      /**
       * Made through GitHub's API (`changes.signedCommits`): whether GitHub marked it verified.
       * Absent: pushed with git.
       */
      signed?: boolean;
      /** Said under the first line (why it was pushed with git after all). */
      note?: string;
    }
  /** A pull request from a fork: nothing pushed; the change as a patch. */
  | {
      result: "patch";
      files: FileChange[];
      patch: string;
      /** The patch was longer than a comment can hold. */
      cut: boolean;
    }
  | { result: "refused"; reason: PublishReason; messages: string[]; files: FileChange[] }
  | { result: "failed"; reason: PublishReason; message: string };

/** The patch shown in an answer is cut at this size (GitHub's comment limit is 65,536). */
export const MAX_PATCH = 30_000;

/** The "Changes" part of the answer (Markdown), or "" when there is nothing to say. */
export function renderChanges(r: PublishReport): string {
  switch (r.result) {
    case "unchanged":
      return "";
    case "published": {
      const lines: string[] = [];
      const short = r.sha.slice(0, 7);
      const commits = `${r.commits} commit${r.commits === 1 ? "" : "s"}`;
      const to = `[\`${r.branch}\`](${r.branchUrl}) (\`${short}\`)`;
      lines.push(
        r.signed === undefined
          ? `📦 **Changes**: pushed ${commits} to ${to}.`
          : `📦 **Changes**: committed ${commits} to ${to} through GitHub's API${r.signed ? ", signed by GitHub (Verified)" : ""}.`,
      );
      if (r.note) lines.push(r.note);
      if (r.pull) {
        const what = !r.pull.opened
          ? `Pull request [#${r.pull.number}](${r.pull.url}) has the new commit.`
          : r.pull.draftsUnsupported
            ? `Opened pull request [#${r.pull.number}](${r.pull.url}) ready for review, not as a draft: this repository does not support draft pull requests (GitHub has none on private repositories of Free and Pro plans).`
            : `Opened ${r.pull.draft ? "draft " : ""}pull request [#${r.pull.number}](${r.pull.url}).`;
        lines.push(what);
        if (r.pull.state === "closed")
          lines.push(`Pull request #${r.pull.number} is closed: reopen it to review the change.`);
      } else if (r.compareUrl) {
        lines.push(`[Open a pull request](${r.compareUrl}) from it.`);
      }
      if (r.merged.length)
        lines.push(
          `Someone pushed to the branch while I worked; their commit${r.merged.length === 1 ? "" : "s"} (${r.merged
            .slice(0, 5)
            .map((c) => `\`${c.sha}\``)
            .join(", ")}) ${r.merged.length === 1 ? "is" : "are"} kept and merged with mine.`,
        );
      lines.push("", ...fileTable(r.files));
      return lines.join("\n");
    }
    case "patch": {
      const fence = fenceFor(r.patch);
      const stats = totals(r.files);
      return [
        "📦 **Changes**: this pull request comes from a fork, so nothing was pushed to it. The change is below; to take it, save it as `tether.patch` and run `git apply tether.patch` on the pull request's branch.",
        "",
        ...fileTable(r.files),
        "",
        `<details><summary>Patch (${r.files.length} file${r.files.length === 1 ? "" : "s"}, +${stats.added} −${stats.removed})</summary>`,
        "",
        `${fence}diff`,
        r.patch.replace(/\n$/, ""),
        fence,
        "",
        "</details>",
        ...(r.cut
          ? [
              "",
              `_The patch was cut at ${MAX_PATCH / 1000} KB: GitHub limits comment size. Ask for a smaller change, or for it in parts._`,
            ]
          : []),
      ].join("\n");
    }
    case "refused":
      return [
        "⚠️ **Changes not published**: they stay in my workspace, and the next turn publishes them once this is fixed.",
        "",
        ...r.messages.map((m) => `- ${capital(m)}`),
      ].join("\n");
    case "failed":
      return `⚠️ **Changes not published**: ${r.message} They stay in my workspace; the next turn tries again.`;
  }
}

function fileTable(files: readonly FileChange[]): string[] {
  if (!files.length) return [];
  const max = 30;
  const rows = files.slice(0, max).map((f) => {
    const name = `\`${f.path.replace(/`/g, "'").replace(/\|/g, "\\|")}\``;
    const what = { A: " (new)", D: " (deleted)" }[f.status] ?? "";
    return f.added === null
      ? `| ${name}${what} | binary | |`
      : `| ${name}${what} | +${f.added} | −${f.removed} |`;
  });
  const t = totals(files);
  const lines = ["| file | + | − |", "| --- | --: | --: |", ...rows];
  if (files.length > max) lines.push(`| … ${files.length - max} more | | |`);
  lines.push(
    `| **${files.length} file${files.length === 1 ? "" : "s"}** | **+${t.added}** | **−${t.removed}** |`,
  );
  return lines;
}

function totals(files: readonly FileChange[]): { added: number; removed: number } {
  return files.reduce(
    (s, f) => ({ added: s.added + (f.added ?? 0), removed: s.removed + (f.removed ?? 0) }),
    { added: 0, removed: 0 },
  );
}

/** A code fence longer than any run of backticks in `text`. */
function fenceFor(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return "`".repeat(longest + 1);
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
