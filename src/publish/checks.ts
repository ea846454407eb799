/**
 * The rules a change must pass before Tether pushes it (docs/changes.md "Changes"). Pure: the facts are
 * gathered from the mirror and GitHub first, then judged here, every rule a table row in
 * test/unit/publish-checks.test.ts.
 */
import type { FileChange } from "./mirror-git.js";
import type { SecretHit } from "./secret-scan.js";
import { protectedAmong, WORKFLOWS_DIR } from "./protected-paths.js";

export type RefusalReason =
  | "default-branch"
  | "protected-branch"
  | "bad-branch"
  | "workflow"
  | "protected-path"
  | "too-many-files"
  | "too-large"
  | "secret"
  | "not-tethers-commit";

export interface Refusal {
  reason: RefusalReason;
  /** Plain words for the answer: what was refused and what to do. Never a secret. */
  message: string;
}

export interface PublishFacts {
  /** The branch the push would update. */
  branch: string;
  defaultBranch: string;
  /** GitHub says the branch is protected. */
  protectedBranch: boolean;
  /** Only these branches may be pushed: the key's own, or its pull request's head. */
  allowedBranch: string;
  files: FileChange[];
  secrets: SecretHit[];
  limits: {
    maxFiles: number;
    maxBytes: number;
    /** The deprecated `publish.workflows`: `.github/workflows/` is not protected when true. */
    workflows: boolean;
    /** `changes.protectedPaths`. */
    protectedPaths: readonly string[];
  };
}

export function touchesWorkflows(files: readonly FileChange[]): string[] {
  return files.map((f) => f.path).filter((p) => p.toLowerCase().startsWith(WORKFLOWS_DIR));
}

/** Every rule the change breaks, the most basic first (empty: it may be pushed). */
export function checkPublish(f: PublishFacts): Refusal[] {
  const out: Refusal[] = [];
  const code = (s: string) => `\`${s.replace(/`/g, "'")}\``;
  if (f.branch !== f.allowedBranch)
    out.push({
      reason: "bad-branch",
      message: `${code(f.branch)} is not the branch this conversation may push to (${code(f.allowedBranch)}).`,
    });
  if (f.branch === f.defaultBranch)
    out.push({
      reason: "default-branch",
      message: `${code(f.branch)} is the default branch: Tether never pushes to it.`,
    });
  if (f.protectedBranch)
    out.push({
      reason: "protected-branch",
      message: `${code(f.branch)} is a protected branch: Tether never pushes to one.`,
    });
  const kept = protectedAmong(
    f.files.map((x) => x.path),
    f.limits.protectedPaths,
    f.limits.workflows,
  );
  if (kept.length) {
    // A workflow keeps its own reason code (dashboards count it since before protectedPaths).
    const workflow = kept.some((p) => p.toLowerCase().startsWith(WORKFLOWS_DIR));
    const patterns = f.limits.protectedPaths.slice(0, 5).map(code).join(", ");
    out.push({
      reason: workflow ? "workflow" : "protected-path",
      message: `the change touches ${list(kept, code)}, which \`changes.protectedPaths\` in \`.github/tether.yml\` (${patterns}) keeps from the agent: CI runs such files with the repository's secrets. Change ${kept.length === 1 ? "it" : "them"} yourself, or take the path out of \`changes.protectedPaths\`${workflow ? " (a workflow also needs the app's `workflows` permission)" : ""}.`,
    });
  }
  if (f.files.length > f.limits.maxFiles)
    out.push({
      reason: "too-many-files",
      message: `the change touches ${f.files.length} files; at most ${f.limits.maxFiles} are published at once (\`publish.maxFiles\`).`,
    });
  const bytes = f.files.reduce((n, x) => n + x.bytes, 0);
  if (bytes > f.limits.maxBytes)
    out.push({
      reason: "too-large",
      message: `the change carries ${size(bytes)} of file contents; at most ${size(f.limits.maxBytes)} are published at once (\`publish.maxBytes\`).`,
    });
  if (f.secrets.length) {
    const where = f.secrets
      .slice(0, 5)
      .map((h) =>
        h.path === null
          ? `the commit message${h.line ? ` (line ${h.line})` : ""}`
          : `${code(h.path)}${h.line ? ` line ${h.line}` : ""}`,
      );
    const kinds = [...new Set(f.secrets.map((h) => h.kind))].join(", ");
    out.push({
      reason: "secret",
      message: `the change holds what looks like a secret (${kinds}) in ${where.join(", ")}${f.secrets.length > 5 ? ` and ${f.secrets.length - 5} more place(s)` : ""}. Remove it (and rotate it if it is real), then ask again.`,
    });
  }
  return out;
}

function list(items: string[], fmt: (s: string) => string): string {
  const shown = items.slice(0, 5).map(fmt).join(", ");
  return items.length > 5 ? `${shown} and ${items.length - 5} more` : shown;
}

export function size(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}
