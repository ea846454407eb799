/**
 * A comment (or review comment, or the issue body) edited or deleted: what it already asked
 * follows the change, and an edit that addresses an agent anew is a request of its own.
 */
import { AGENT_CLIS } from "../cli-registry.js";
import { loadRepoConfig } from "../config/load-repo-config.js";
import { DEFAULT_CONFIG } from "../config/repo-config.js";
import { postComment } from "../github/comments.js";
import { conversationsOfPull } from "../sql/conversations.js";
import { isDeliveryPending, type Delivery } from "../sql/deliveries.js";
import { bumpEpochsForComment, bumpEpochsForIssueBody } from "../sql/history.js";
import { clearIgnoredEdit, recordIgnoredEdit } from "../sql/ignored-edits.js";
import {
  isRequest,
  refreshIssueSnapshot,
  removeQueuedComment,
  updateQueuedComment,
} from "../sql/tasks/edit.js";
import type { Author } from "./access.js";
import { refusalOf } from "./may-trigger.js";
import { addedMentionNames } from "./parse-comment.js";
import type { Change, TextTrigger } from "./events.js";
import { done, skipped, type Handled, type IntakeEffects } from "./intake-effects.js";
import {
  anyQueued,
  handleTrigger,
  installationOctokit,
  withReplyParent,
  type RepoView,
} from "./text-request.js";

/** Not a failure: the delivery must wait for another one (its comment's creation) to finish. */
export class RetryLater extends Error {
  override name = "RetryLater";
}

/**
 * A comment (or review comment, or the issue body) was edited or deleted. What it already asked
 * follows the change: a queued task fed by it reads the new text or loses it, and the sessions
 * that read it are marked (history epoch). An edit that addresses an agent for the first time is
 * also a new request for that agent, handled like a new comment.
 */
export async function handleChange(
  fx: IntakeEffects,
  d: Delivery,
  t: TextTrigger,
  change: Exclude<Change, { action: "created" }>,
): Promise<Handled> {
  // Its creation is still in the inbox: let it become a task first, or this change would find
  // nothing to update and the task would later read the old text.
  if (await isDeliveryPending(fx.pool, t.createdKey))
    throw new RetryLater(`${t.label} on ${t.repo}#${t.issueNumber} is still being taken in`);
  const ref = {
    repoId: t.repoId,
    issueNumber: t.issueNumber,
    source: t.comment.source,
    commentId: t.comment.commentId,
  };
  // A comment on a conversation's pull request may have fed the issue's key: what it asked
  // follows the change there too.
  const conversations = t.isPullRequest
    ? await conversationsOfPull(fx.pool, t.repoId, t.issueNumber)
    : [];
  const refs = [ref, ...conversations.map((c) => ({ ...ref, issueNumber: c.issueNumber }))];
  const notes: string[] = [];
  // An edit of a request (a comment that fed a task) changes what an agent is asked only when
  // its editor may ask: else the request, and what a rewind sends again, stay as they were.
  const view =
    change.action === "edited" &&
    (await isRequest(fx.pool, {
      repo: t.repo,
      source: t.comment.source,
      issueNumbers: refs.map((r) => r.issueNumber),
    }))
      ? await judgeEditor(fx, d, t, change.editor)
      : undefined;
  const ignored = view?.refusal ?? null;
  // A queued turn that reads the issue from its snapshot reads the edited one (as context).
  if (t.seenBy === "every-turn" && change.action === "edited" && t.issue) {
    const refreshed = await refreshIssueSnapshot(fx.pool, t, t.issue);
    if (refreshed.length) notes.push(`issue refreshed for queued task(s) ${refreshed.join(",")}`);
  }
  if (change.action === "edited" && ignored !== null) {
    fx.log.info(
      { delivery: d.deliveryId, repo: t.repo, editor: change.by, reason: ignored },
      "edit of a request ignored",
    );
    // A cold turn's thread shows GitHub's text: marked as this editor's, not the author's.
    await recordIgnoredEdit(fx.pool, {
      repoId: t.repoId,
      source: t.comment.source,
      editor: change.by,
      reason: ignored,
    });
    notes.push(`edit ignored: ${ignored}`);
  } else if (change.action === "edited") {
    if (view) await clearIgnoredEdit(fx.pool, { repoId: t.repoId, source: t.comment.source });
    // A queued reply's request quotes its parent: the edit rebuilds it the same way, reading
    // the parent only when there is a queued request to rebuild.
    if (t.replyTo && (await anyQueued(fx.pool, refs)))
      t = await withReplyParent(
        view?.octokit ?? (await installationOctokit(fx, d.installationId)),
        t,
      );
    for (const r of refs) {
      const updated = await updateQueuedComment(fx.pool, { ...r, body: t.comment.body });
      if (updated.length) notes.push(`updated queued task(s) ${updated.join(",")}`);
    }
  } else {
    for (const r of refs)
      for (const removed of await removeQueuedComment(fx.pool, r))
        notes.push(
          removed.cancelled
            ? `cancelled queued task ${removed.taskId}`
            : `removed from task ${removed.taskId}`,
        );
  }
  const reason = `${t.label} ${change.action} by ${change.by}`;
  // The issue body is context to every turn whoever edits it; a comment's ignored edit leaves
  // the sessions that read it as they are (they hold the words of someone who may ask).
  const bumped =
    t.seenBy === "every-turn"
      ? await bumpEpochsForIssueBody(fx.pool, {
          repoId: t.repoId,
          issueNumber: t.issueNumber,
          reason,
        })
      : ignored !== null
        ? []
        : await bumpEpochsForComment(fx.pool, {
            repoId: t.repoId,
            issueNumber: t.issueNumber,
            source: t.comment.source,
            commentCreatedAt: t.comment.createdAt,
            inThread: t.seenBy === "thread",
            reason,
            deleted: change.action === "deleted",
            body: t.comment.body,
          });
  if (bumped.length) notes.push(`history epoch bumped for ${bumped.join(",")}`);
  if (t.seenBy !== "every-turn" && ignored === null)
    for (const c of conversations) {
      // Only the turns it fed read it: the issue's cold turns read the issue's thread.
      const more = await bumpEpochsForComment(fx.pool, {
        repoId: t.repoId,
        issueNumber: c.issueNumber,
        source: t.comment.source,
        commentCreatedAt: t.comment.createdAt,
        inThread: false,
        reason,
        deleted: change.action === "deleted",
        body: t.comment.body,
      });
      if (more.length)
        notes.push(`history epoch of #${c.issueNumber} bumped for ${more.join(",")}`);
    }

  if (change.action === "edited" && ignored !== null && view) {
    // Replies come last: a failure before them leaves nothing done twice.
    await postComment(view.octokit, {
      owner: t.owner,
      repo: t.name,
      issueNumber: t.issueNumber,
      body: describeIgnoredEdit(t, change.by, ignored),
    });
    return done([...notes, "replied"].join("; "));
  }
  if (change.action === "edited" && addedMentionNames(change.previousText, t.text).length) {
    const asked = await handleTrigger(fx, d, t, {
      previousText: change.previousText,
      editor: change.editor,
      ...(view ? { view } : {}),
    });
    return notes.length ? done([...notes, asked.outcome].join("; ")) : asked;
  }
  return notes.length
    ? done(notes.join("; "))
    : skipped("not in a queued task or a session's history");
}

/**
 * Reads what judging an edit's editor needs (the installation's Octokit, the config) and judges
 * them by the access rules a comment's author passes. A broken config is judged by the defaults.
 */
async function judgeEditor(
  fx: IntakeEffects,
  d: Delivery,
  t: TextTrigger,
  editor: Author,
): Promise<RepoView> {
  const octokit = await installationOctokit(fx, d.installationId);
  const where = { owner: t.owner, repo: t.name };
  const loaded = await loadRepoConfig(octokit, where, {
    clis: AGENT_CLIS,
    orgFileLikely: fx.repoHints?.orgFileLikely(t.repo) ?? false,
  });
  const refusal = await refusalOf(editor, {
    octokit,
    where,
    access: loaded.ok ? loaded.config.access : DEFAULT_CONFIG.access,
    appLogin: fx.appLogin,
  });
  return { octokit, loaded, refusal };
}

/** The note that says an edit of a request was ignored, and why (logins unlinked: no pings). */
export function describeIgnoredEdit(t: TextTrigger, editor: string, reason: string): string {
  const who = `\`@${editor}\``;
  // Only conversation comments are in the thread a fresh turn reads with their editor marked.
  const marked =
    t.seenBy === "thread"
      ? ` (a fresh turn reads it in the thread as context, marked as ${who}'s)`
      : "";
  return [
    `An edit of [this ${t.what === "issue" ? "issue's description" : t.what}](${t.comment.url}) by ${who} was ignored: ${reason}.`,
    `Agents are asked the request as \`@${t.comment.author}\` wrote it; the edited text is never sent as a request${marked}. Only someone who may ask Tether (\`access\` in \`.github/tether.yml\`) can change a request by editing it.`,
  ].join("\n\n");
}
