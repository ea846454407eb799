/**
 * Where a conversation's chain lives on the dashboard: one page per (repository, issue, agent),
 * `/dashboard/conversations/<owner>/<name>/<issue>/<agent>`, its JSON under /api/conversations/
 * (src/web/dashboard-routes.ts). The answer's footer links to it (src/runner/render/thread-comments.ts).
 */
import type { TaskKey } from "./task.js";

/**
 * A key as a page's address names it: by the repository's name. The dashboard finds the id of
 * the repository that last had tasks under that name (src/sql/tasks/read.ts repoIdByName).
 */
export type NamedKey = Omit<TaskKey, "repoId">;

/** The page's path for a key (each part URL-encoded). */
export function conversationPath(key: NamedKey, prefix = "/dashboard/conversations"): string {
  const [owner = "", name = ""] = key.repo.split("/");
  return `${prefix}/${[owner, name, String(key.issueNumber), key.agent].map(encodeURIComponent).join("/")}`;
}

/** The page's absolute URL under the operator's public URL (TETHER_PUBLIC_URL). */
export function conversationUrl(publicUrl: string, key: NamedKey): string {
  return `${publicUrl.replace(/\/+$/, "")}${conversationPath(key)}`;
}

const PART = "([A-Za-z0-9._-]{1,100})";
const PATH = new RegExp(
  `^/(dashboard|api)/conversations/${PART}/${PART}/(\\d{1,10})/([a-z0-9-]{1,64})(?:/transcripts/([A-Za-z0-9][A-Za-z0-9_-]{0,127}))?/?$`,
);

export interface ConversationRoute {
  kind: "page" | "api" | "transcript";
  key: NamedKey;
  sessionId?: string;
}

/** Reads a conversation route's path; null when it is not one (or names no valid key). */
export function parseConversationPath(path: string): ConversationRoute | null {
  const m = PATH.exec(path);
  if (!m) return null;
  const [, area, owner, name, issue, agent, session] = m;
  const issueNumber = Number(issue);
  if (!owner || !name || !agent || !Number.isSafeInteger(issueNumber) || issueNumber < 1)
    return null;
  if (/^\.+$/.test(owner) || /^\.+$/.test(name)) return null; // no repository is named so
  const key = { repo: `${owner}/${name}`.toLowerCase(), issueNumber, agent };
  if (session !== undefined)
    return area === "dashboard" ? { kind: "transcript", key, sessionId: session } : null;
  return { kind: area === "api" ? "api" : "page", key };
}
