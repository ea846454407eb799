/**
 * Scoped installation tokens name their repository by id (`repository_ids`, from the webhook's
 * `repository.id`), not by name, whose case GitHub matches by an undocumented rule. Through the
 * app's real client (Probot, the app's JWT) against the GitHub stand-in, which honours
 * `repository_ids` as GitHub does: the token is for those repositories alone, and an id that is
 * not the installation's is a 422.
 */
import { pino } from "pino";
import { Probot } from "probot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appOctokit } from "../../src/github/app-auth.js";
import {
  FETCH_PERMISSIONS,
  pushToken,
  PushTokenError,
  scopedToken,
} from "../../src/github/scoped-auth.js";
import { startFakeGitHub, type FakeGitHub, type RecordedRequest } from "../helpers/fake-github.js";

let gh: FakeGitHub;
let app: Awaited<ReturnType<Probot["auth"]>>;
let widgets: number;
let gadgets: number;
let elsewhere: number;

beforeAll(async () => {
  gh = await startFakeGitHub();
  widgets = (await gh.addRepo({ owner: "Octo", name: "Widgets" })).id as number;
  gadgets = (await gh.addRepo({ owner: "Octo", name: "gadgets" })).id as number;
  // Another installation's repository: the app's, but not through this installation.
  elsewhere = (await gh.addRepo({ owner: "other", name: "things", installationId: 99 }))
    .id as number;
  const probot = new Probot({
    appId: gh.appId,
    privateKey: gh.privateKeyPem,
    baseUrl: gh.apiUrl,
    log: pino({ level: "silent" }),
    Octokit: appOctokit({ TETHER_GITHUB_THROTTLE: false }),
  });
  app = await probot.auth();
});
afterAll(async () => {
  await gh?.close();
});

const exchanges = (from: number): RecordedRequest[] =>
  gh.requests
    .slice(from)
    .filter((r) => r.route === "POST /app/installations/{installation_id}/access_tokens");

describe("scoped installation tokens", () => {
  it("ask for the task's repository by id, and get a token for it alone", async () => {
    const from = gh.requests.length;
    // The task keeps `owner/name` lower case; the id names the repository whatever its case.
    const token = await scopedToken(app, {
      installationId: gh.installationId,
      repo: "octo/widgets",
      repoId: widgets,
      permissions: FETCH_PERMISSIONS,
    });
    const sent = exchanges(from);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.status).toBe(201);
    expect(sent[0]!.body).toEqual({ repository_ids: [widgets], permissions: FETCH_PERMISSIONS });
    expect(gh.tokenGrant(token)).toMatchObject({
      repositories: ["Octo/Widgets"],
      permissions: { contents: "read", metadata: "read" },
    });
    const other = await fetch(`${gh.apiUrl}/repos/Octo/gadgets`, {
      headers: { authorization: `token ${token}` },
    });
    expect(other.status).toBe(404);
  });

  it("the stand-in refuses an id that is not the installation's with GitHub's 422, and so does a push token", async () => {
    const from = gh.requests.length;
    const err = await scopedToken(app, {
      installationId: gh.installationId,
      repo: "other/things",
      repoId: elsewhere,
      permissions: FETCH_PERMISSIONS,
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 422 });
    expect(exchanges(from)[0]!.body).toMatchObject({ repository_ids: [elsewhere] });
    // One id of the installation's beside one that is not: refused all the same.
    const both = await fetch(`${gh.apiUrl}/app/installations/${gh.installationId}/access_tokens`, {
      method: "POST",
      headers: {
        authorization: `bearer ${(exchanges(from)[0]!.headers.authorization as string).split(" ")[1]}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ repository_ids: [gadgets, 987_654] }),
    });
    expect(both.status).toBe(422);
    expect(await both.json()).toMatchObject({
      message:
        "There is at least one repository that does not exist or is not accessible to the parent installation.",
    });
    await expect(
      pushToken(app, {
        installationId: gh.installationId,
        repo: "other/things",
        repoId: elsewhere,
        workflows: false,
      }),
    ).rejects.toBeInstanceOf(PushTokenError);
  });

  it("a push token names the repository by id too", async () => {
    const from = gh.requests.length;
    const token = await pushToken(app, {
      installationId: gh.installationId,
      repo: "octo/gadgets",
      repoId: gadgets,
      workflows: false,
    });
    expect(exchanges(from).map((r) => r.body)).toEqual([
      { repository_ids: [gadgets], permissions: { contents: "write", metadata: "read" } },
    ]);
    expect(gh.tokenGrant(token)?.repositories).toEqual(["Octo/gadgets"]);
  });

  it("a task without an id (queued by hand) still gets a token for its repository, by name", async () => {
    const from = gh.requests.length;
    const token = await scopedToken(app, {
      installationId: gh.installationId,
      repo: "octo/gadgets",
      repoId: null,
      permissions: { issues: "write" },
    });
    expect(exchanges(from).map((r) => r.body)).toEqual([
      { repositories: ["gadgets"], permissions: { issues: "write" } },
    ]);
    expect(gh.tokenGrant(token)?.repositories).toEqual(["Octo/gadgets"]);
  });
});
