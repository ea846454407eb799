import type { Logger } from "../log.js";
import type { Pool } from "../db/pool.js";
import { isDeliveryPending, type InsertResult } from "../sql/deliveries.js";
import { issueHasTasks } from "../sql/tasks/read.js";
import { InboxWriter } from "./inbox-writer.js";
import { addedMentionNames, mentionedNames } from "./parse-comment.js";
import { conversationsOfPull } from "../sql/conversations.js";
import { readEvent, type IntakeEvent } from "./events.js";
import { PUSH_EVENT, takePush } from "./config-push.js";
import { screenCiRun } from "./ci-ownership.js";
import { INSTALLATION_EVENTS, takeInstallation } from "./installation-schedules.js";
import { noteRepoName } from "../sql/repo-names.js";

export type Screened =
  | { take: false; reason: string }
  | {
      take: true;
      action: string;
      installationId: number;
      dedupeKey: string;
      /** The payload, validated and trimmed to what intake reads. */
      payload: object;
      /**
       * Deletions, and edits that mention no one new, matter only on an issue that has tasks,
       * or whose triggering delivery is still in the inbox. Checked in Postgres after screening.
       */
      onlyIf?: { repo: string; repoId: number; issueNumber: number; pendingKey: string };
      /**
       * A review that mentions no one matters only on a conversation's pull request (the agent's
       * own): checked in Postgres after screening.
       */
      onlyIfConversationPull?: { repoId: number; pullNumber: number };
    };

/**
 * The webhook's cheap checks, a pure function of the delivery: does it carry a trigger
 * (events.ts reads it), not written by Tether itself, that could matter (a body that mentions
 * someone, an edit that changed a body, CI on a conversation's branch from this repository)? Anything needing GitHub
 * or the repo config is the processor's.
 */
export function screenDelivery(name: string, payload: unknown, appId?: number): Screened {
  const read = readEvent(name, payload);
  if (!read.ok) return { take: false, reason: read.reason };
  const e = read.event;
  const taken = {
    take: true as const,
    action: e.action,
    installationId: e.installationId,
    dedupeKey: e.dedupeKey,
    payload: e.payload,
  };
  switch (e.kind) {
    case "work-item":
      return taken;
    case "ci": {
      // A fork's run, or one on no conversation's branch, goes no further (ci-ownership.ts).
      // Which conversation, and whether the run's commit is its pull request's head, is the
      // processor's.
      const refused = screenCiRun(e.run);
      return refused ? { take: false, reason: refused } : taken;
    }
    case "text":
      return screenText(e, taken, appId);
  }
}

function screenText(
  e: Extract<IntakeEvent, { kind: "text" }>,
  taken: Extract<Screened, { take: true }>,
  appId: number | undefined,
): Screened {
  const t = e.trigger;
  if (appId !== undefined && t.viaAppId === appId)
    return { take: false, reason: `Tether's own ${t.what}` };
  const onlyIf = {
    repo: t.repo,
    repoId: t.repoId,
    issueNumber: t.issueNumber,
    pendingKey: t.createdKey,
  };
  switch (e.change.action) {
    case "edited":
      // An edit that mentions someone new may address an agent for the first time: a request,
      // taken like a new comment. Other edits only touch what already exists.
      if (addedMentionNames(e.change.previousText, t.text).length) return taken;
      return { ...taken, onlyIf };
    case "deleted":
      return { ...taken, onlyIf };
    case "created":
      if (mentionedNames(t.text).length) return taken;
      // A review of an agent's own pull request reaches it without a mention (per the agent's
      // `reviews` setting, which the processor reads with the config).
      if (t.review)
        return {
          ...taken,
          onlyIfConversationPull: { repoId: t.repoId, pullNumber: t.issueNumber },
        };
      return { take: false, reason: "mentions no one" };
  }
}

export interface WebhookDelivery {
  /** X-GitHub-Delivery. */
  id: string;
  name: string;
  payload: unknown;
}

export interface WebhookDeps {
  pool: Pool;
  log: Logger;
  /** Tether's GitHub App id: deliveries about its own comments are dropped. */
  appId?: number;
}

export type Taken =
  | { taken: false; reason: string }
  | { taken: true; result: InsertResult }
  /** A push or an installation, recorded at once (config-push.ts, installation-schedules.ts). */
  | { taken: true; recorded: string };

/**
 * The webhook handler: screen, then put the delivery in the inbox (which wakes a processor),
 * batched with whatever else is arriving. No GitHub call; edits and deletions add one or two
 * indexed lookups first, and a taken delivery notes its repository's name and id (one indexed
 * upsert that writes nothing while the name keeps its repository: src/sql/repo-names.ts). A database error propagates, so GitHub sees a
 * failed delivery it can redeliver, rather than a 200 for a comment we did not keep.
 */
export function takeDelivery(deps: WebhookDeps): (event: WebhookDelivery) => Promise<Taken> {
  const inbox = new InboxWriter(deps.pool);
  return async (event) => {
    if (event.name === PUSH_EVENT) {
      const pushed = await takePush(deps.pool, event.payload);
      deps.log.debug({ delivery: event.id, ...pushed }, "push");
      return "ignore" in pushed
        ? { taken: false, reason: pushed.ignore }
        : { taken: true, recorded: pushed.recorded };
    }
    if ((INSTALLATION_EVENTS as readonly string[]).includes(event.name)) {
      const installed = await takeInstallation(deps.pool, event.name, event.payload);
      deps.log.debug({ delivery: event.id, ...installed }, event.name);
      return "ignore" in installed
        ? { taken: false, reason: installed.ignore }
        : { taken: true, recorded: installed.recorded };
    }
    const s = screenDelivery(event.name, event.payload, deps.appId);
    if (!s.take) {
      deps.log.debug(
        { delivery: event.id, event: event.name, reason: s.reason },
        "webhook ignored",
      );
      return { taken: false, reason: s.reason };
    }
    if (
      s.onlyIfConversationPull &&
      !(
        await conversationsOfPull(
          deps.pool,
          s.onlyIfConversationPull.repoId,
          s.onlyIfConversationPull.pullNumber,
        )
      ).length
    ) {
      deps.log.debug(
        { delivery: event.id },
        "webhook ignored: a review of no agent's pull request",
      );
      return { taken: false, reason: "mentions no one" };
    }
    if (s.onlyIf) {
      const { repo, repoId, issueNumber, pendingKey } = s.onlyIf;
      const relevant =
        (await issueHasTasks(deps.pool, repoId, issueNumber)) ||
        (await isDeliveryPending(deps.pool, pendingKey));
      if (!relevant) {
        deps.log.debug(
          { delivery: event.id, repo, issueNumber },
          "webhook ignored: no task on the issue",
        );
        return { taken: false, reason: "no task on the issue" };
      }
    }
    // Before the inbox row, so before anything reads the config: a repository new under an old
    // name is served nothing kept for the old one (src/sql/repo-names.ts).
    const repository = repositoryOf(event.payload);
    if (repository) await noteRepoName(deps.pool, repository.name, repository.id);
    const result = await inbox.insert({
      deliveryId: event.id,
      event: event.name,
      action: s.action,
      installationId: s.installationId,
      dedupeKey: s.dedupeKey,
      payloadJson: JSON.stringify(s.payload),
    });
    deps.log.debug(
      { delivery: event.id, event: `${event.name}.${s.action}`, result },
      "webhook taken",
    );
    return { taken: true, result };
  };
}

/** The repository a delivery is about, when its payload names one with its id. */
function repositoryOf(payload: unknown): { id: number; name: string } | undefined {
  const r = (payload as { repository?: { id?: unknown; full_name?: unknown } } | null)?.repository;
  return typeof r?.id === "number" && typeof r.full_name === "string"
    ? { id: r.id, name: r.full_name }
    : undefined;
}
