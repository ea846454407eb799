import type { ChildProcess } from "node:child_process";
import {
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  verify as verifySignature,
  type KeyObject,
  createHash,
  createPublicKey,
} from "node:crypto";
import fs from "node:fs/promises";
import http, {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import {
  commitFiles,
  diffFiles,
  deleteRef,
  initBareRepo,
  installPreReceive,
  isSafeRefName,
  listRefs,
  readPath,
  refSha,
  serveGitHttp,
  standInGitEnv,
  updateRef,
  type FileMap,
} from "./fake-github-git.js";
import {
  commentJson,
  commitJson,
  installationJson,
  issueJson,
  iso,
  nodeId,
  pullJson,
  REACTION_CONTENTS,
  reactionJson,
  reactionsSummary,
  repoJson,
  reviewCommentJson,
  reviewJson,
  userJson,
  type Bases,
  type IssueFacts,
  type Json,
  type ReactionContent,
  type UserType,
} from "./fake-github-shapes.js";
import {
  issueCommentEvent,
  issuesEvent,
  pullRequestEvent,
  pullRequestReviewCommentEvent,
  pushEvent,
  WebhookDeliveryLog,
  type PushEvent,
  type DeliveryAttemptRecord,
  type DeliveryResult,
  type PayloadSource,
  pullRequestReviewEvent,
} from "./fake-github-webhooks.js";
import { checkRequest, checkResponse, parseBody } from "./openapi.js";
import {
  isAncestor,
  newCommits,
  objectIs,
  readCommit,
  treeEntries,
  writeBlob,
  writeCommit,
  writeTree,
  type TreeEntryIn,
} from "./fake-github-gitdata.js";

export { signedWebhook, sign } from "./fake-github-webhooks.js";
export type { DeliveryAttemptRecord, DeliveryResult } from "./fake-github-webhooks.js";
import { FakeChecks } from "./fake-github-checks.js";
export type { Json } from "./fake-github-shapes.js";
export type { FileMap } from "./fake-github-git.js";

/**
 * A local stand-in for GitHub: a real HTTP server on 127.0.0.1 that serves the REST calls a
 * Probot app and Tether's runner make (under /api/v3, as GitHub Enterprise does, so the app
 * reaches it through GHE_HOST/GHE_PROTOCOL) and git's smart HTTP (clone and fetch) through
 * `git http-backend`. State lives in memory and in bare repositories in a temp directory.
 *
 * It checks credentials the way GitHub does: /app routes want an RS256 JWT signed with the
 * app's private key (privateKeyPem), everything else an installation token it issued, git a
 * Basic `x-access-token:<token>`. Every request is recorded (`requests`) so tests can assert
 * what the app posted and with which token.
 */

export type Permission = "admin" | "maintain" | "write" | "triage" | "read" | "none";

export interface FakeGitHubOptions {
  appId?: number;
  appSlug?: string;
  /** The default installation's id and account (repos go to it unless told otherwise). */
  installationId?: number;
  account?: string;
  /** Lifetime of issued installation tokens. Default one hour, like GitHub. */
  tokenTtlMs?: number;
  /** Clock for timestamps and token expiry. */
  now?: () => Date;
  /**
   * Mint installation tokens the way GitHub's stateless ones look: `ghs_<app id>_` and a
   * JWT-like three base64url parts joined by dots, ~520 characters. Default: the short
   * 40-character `ghs_…` kind.
   */
  statelessTokens?: boolean;
  /**
   * Hold every REST request and answer against GitHub's OpenAPI description (openapi.ts) and
   * make close() fail on what does not fit. Default true; a test that sends GitHub something
   * wrong on purpose drains `takeOpenapiViolations()` instead of turning this off.
   */
  openapi?: boolean;
}

export interface RecordedRequest {
  seq: number;
  /** When it arrived (ms since the epoch, real clock). */
  at: number;
  kind: "rest" | "git" | "other";
  method: string;
  /**
   * URL path as sent, without the query, e.g. /api/v3/repos/octo/widgets/issues/1/comments
   * (Octokit percent-encodes a `/` inside a parameter such as a contents path: `.github%2Ftether.yml`).
   */
  path: string;
  query: Record<string, string>;
  /** Octokit-style route that answered, e.g. "POST /repos/{owner}/{repo}/issues/{issue_number}/comments". */
  route: string | undefined;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or the text; undefined for git requests and empty bodies. */
  body: unknown;
  /** The body as text ("" for git requests, whose bodies are binary). */
  rawBody: string;
  /** Installation token presented (REST `token`/`Bearer`, or git Basic password), valid or not. */
  token: string | undefined;
  /** Response status; 0 until answered. */
  status: number;
  /** When its response was finished (ms since the epoch); undefined until then. */
  doneAt?: number;
}

export type RequestMatcher =
  | {
      method?: string;
      /** Exact path, or a pattern tested against it. */
      path?: string | RegExp;
      route?: string;
      kind?: RecordedRequest["kind"];
    }
  | ((req: RecordedRequest) => boolean);

export interface FailResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** How many matching requests fail. Default 1. */
  times?: number;
}

/**
 * A primary rate limit answer, as the throttling plugin recognises it (x-ratelimit-remaining 0).
 * The plugin waits until x-ratelimit-reset plus a second; a reset of -1 s means "already
 * reset", so it retries at once.
 */
export function rateLimited(resetInSeconds = 1, status: 403 | 429 = 403): FailResponse {
  return {
    status,
    headers: {
      "retry-after": String(Math.max(0, resetInSeconds)),
      "x-ratelimit-limit": "5000",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-used": "5000",
      "x-ratelimit-reset": String(Math.ceil(Date.now() / 1000) + resetInSeconds),
      "x-ratelimit-resource": "core",
    },
    body: {
      message: "API rate limit exceeded for installation.",
      documentation_url:
        "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
    },
  };
}

/** A secondary (abuse) rate limit answer: 403 with retry-after and GitHub's wording. */
export function secondaryRateLimited(retryAfterSeconds = 1): FailResponse {
  return {
    status: 403,
    headers: { "retry-after": String(retryAfterSeconds) },
    body: {
      message:
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
      documentation_url:
        "https://docs.github.com/rest/overview/resources-in-the-rest-api#secondary-rate-limits",
    },
  };
}

/** The owner's GitHub plan: Free and Pro have no draft pull requests on private repositories. */
export type Plan = "free" | "pro" | "team" | "enterprise";

interface RepoState {
  id: number;
  owner: string;
  name: string;
  defaultBranch: string;
  private: boolean;
  plan: Plan;
  installationId: number | null;
  bare: string;
  createdAt: Date;
  pushedAt: Date;
  /** When each commit the stand-in made or took landed: a branch's answer dates its commit by it. */
  commitDates: Map<string, Date>;
  nextNumber: number;
  issues: Map<number, IssueState>;
  permissions: Map<string, Permission>;
  /** Branches GitHub's protection (or a ruleset) keeps pushes away from. */
  protectedBranches: Set<string>;
  /** Branches a ruleset requires signed commits on (rule `required_signatures`). */
  signaturesRequired: Set<string>;
  /** Commits GitHub made and signed (through the Git Data API, no author given). */
  signedCommits: Set<string>;
}

interface IssueState {
  id: number;
  number: number;
  title: string;
  body: string | null;
  user: string;
  state: "open" | "closed";
  labels: string[];
  createdAt: Date;
  updatedAt: Date;
  closedAt: Date | null;
  reactions: ReactionState[];
  pull?: {
    headRef: string;
    headSha: string;
    baseRef: string;
    draft: boolean;
    /** `owner/name` of the fork the head lives in; undefined: this repository. */
    fork?: string;
    /** The review discussion, oldest first, as the REST API shows it. */
    reviewComments: Json[];
    reviews: Json[];
  };
}

interface CommentState {
  id: number;
  /** The repository's id: a comment stays with its repository through a rename. */
  repoId: number;
  issueNumber: number;
  user: string;
  body: string;
  createdAt: Date;
  updatedAt: Date;
  deleted: boolean;
  reactions: ReactionState[];
}

interface ReactionState {
  id: number;
  user: string;
  content: ReactionContent;
  createdAt: Date;
}

interface TokenState {
  token: string;
  installationId: number;
  createdAt: Date;
  expiresAt: Date;
  revoked: boolean;
  /** Repository ids the token is limited to; null: all of the installation's. */
  repoIds: number[] | null;
  /** What the token may do: the app's permissions, or the subset asked for when it was made. */
  permissions: Record<string, string>;
}

/** What a token was made with, for tests that check least privilege. */
export interface TokenGrant {
  token: string;
  /** Full names the token is limited to; null: every repository of the installation. */
  repositories: string[] | null;
  permissions: Record<string, string>;
}

/**
 * The permission a REST request needs, as GitHub decides it for an installation token:
 * issues (and their comments and reactions), pull requests (and reviews), contents, and
 * metadata for the rest. Reading needs `read`, anything else `write`.
 */
export function requiredPermission(
  method: string,
  pathname: string,
): { name: string; level: "read" | "write" } | null {
  const m = /^\/repos\/[^/]+\/[^/]+(\/[^/]+)?/.exec(pathname);
  if (!m) return null;
  const level = method === "GET" || method === "HEAD" ? "read" : "write";
  const section = m[1] ?? "";
  if (section === "/issues") return { name: "issues", level };
  if (section === "/pulls") return { name: "pull_requests", level };
  // GitHub checks the checks permission for a commit's check runs, not contents.
  if (
    section === "/check-runs" ||
    section === "/check-suites" ||
    /^\/repos\/[^/]+\/[^/]+\/commits\/[^/]+\/check-(runs|suites)\/?$/.test(pathname)
  )
    return { name: "checks", level };
  if (section === "/actions") return { name: "actions", level };
  if (["/contents", "/git", "/commits", "/branches", "/compare"].includes(section))
    return { name: "contents", level };
  return { name: "metadata", level: "read" };
}

const LEVELS = { read: 1, write: 2 } as const;
function grants(
  have: Record<string, string>,
  need: { name: string; level: "read" | "write" },
): boolean {
  const h = have[need.name];
  return (h === "read" || h === "write") && LEVELS[h] >= LEVELS[need.level];
}

interface InstallationState {
  id: number;
  account: string;
  createdAt: Date;
  /** What the installation was granted (the app's permissions unless a test changes them). */
  permissions: Record<string, string>;
}

/** One push the stand-in took (git receive-pack), for tests to assert what was pushed. */
export interface RecordedPush {
  repo: string;
  ref: string;
  /** null: the ref was created (or deleted, for `after`). */
  before: string | null;
  after: string | null;
  token: string;
  /** The pushing token's permissions and repositories. */
  permissions: Record<string, string>;
  repositories: string[] | null;
  /** `git`: a push (receive-pack); `api`: a ref created or moved through the Git Data API. */
  via: "git" | "api";
}

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Raw (non-JSON) body with its content type. */
  raw?: { contentType: string; data: Buffer | string };
}

interface RouteCtx {
  params: Record<string, string>;
  query: Record<string, string>;
  body: Json;
  rec: RecordedRequest;
  token: TokenState | undefined;
  repo: RepoState | undefined;
  accept: string;
}

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
  names: string[];
  auth: "jwt" | "token";
  handle: (ctx: RouteCtx) => Reply | Promise<Reply>;
}

const PERMISSIONS = {
  contents: "write",
  issues: "write",
  pull_requests: "write",
  metadata: "read",
  checks: "read",
  actions: "read",
} as const;
const EVENTS = [
  "issue_comment",
  "issues",
  "pull_request",
  "pull_request_review",
  "pull_request_review_comment",
  "check_run",
  "check_suite",
  "workflow_run",
];
const DOCS = "https://docs.github.com/rest";
const MAX_BODY = 64 * 1024 * 1024;

let keyPair: { privateKeyPem: string; publicKeyPem: string } | undefined;

/** One RSA key pair per test process: generating one costs ~100 ms. */
function appKeyPair() {
  if (!keyPair) {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    keyPair = {
      // PKCS#1, the format GitHub hands out app keys in.
      privateKeyPem: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
      publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    };
  }
  return keyPair;
}

export async function startFakeGitHub(opts: FakeGitHubOptions = {}): Promise<FakeGitHub> {
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), "tether-fake-github-"));
  const gh = new FakeGitHub(opts, tmp);
  await gh.listen();
  return gh;
}

export class FakeGitHub implements PayloadSource {
  readonly appId: number;
  readonly appSlug: string;
  /** The default installation. */
  readonly installationId: number;
  /** Give this to the app as PRIVATE_KEY. */
  readonly privateKeyPem: string;
  readonly publicKeyPem: string;
  /** http://127.0.0.1:PORT */
  url = "";
  /** http://127.0.0.1:PORT/api/v3: Octokit's baseUrl. */
  apiUrl = "";
  /** 127.0.0.1:PORT: the app's GHE_HOST (with GHE_PROTOCOL=http). */
  host = "";
  readonly protocol = "http" as const;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Where the bare repositories are: <reposDir>/<owner>/<name>.git (lower case). */
  readonly reposDir: string;
  /** Every ref update a push made, in order. */
  readonly pushes: RecordedPush[] = [];
  /** What GitHub's OpenAPI description does not allow in the requests and answers so far. */
  readonly openapiViolations: string[] = [];
  /**
   * Uploaded attachments (`/user-attachments/assets/<id>`), served as GitHub does: on a private
   * repository 401 without a token that sees it, then a 302 to storage (`storageUrl`, another
   * port, answering without any token as pre-signed storage does).
   */
  private readonly attachments = new Map<string, { repo: string; bytes: Buffer }>();
  private readonly storage = http.createServer((req, res) => this.serveStorage(req, res));
  /** http://127.0.0.1:PORT of the attachment storage. */
  storageUrl = "";
  /** Every request the attachment storage received, with its headers. */
  readonly storageRequests: Array<{ path: string; headers: http.IncomingHttpHeaders }> = [];

  /** Webhook payload builders over the current state (see fake-github-webhooks.ts). */
  readonly webhooks = {
    issueComment: (o: Parameters<typeof issueCommentEvent>[1]) => issueCommentEvent(this, o),
    issues: (o: Parameters<typeof issuesEvent>[1]) => issuesEvent(this, o),
    pullRequest: (o: Parameters<typeof pullRequestEvent>[1]) => pullRequestEvent(this, o),
    pullRequestReview: (o: Parameters<typeof pullRequestReviewEvent>[1]) =>
      pullRequestReviewEvent(this, o),
    pullRequestReviewComment: (o: Parameters<typeof pullRequestReviewCommentEvent>[1]) =>
      pullRequestReviewCommentEvent(this, o),
    push: (o: Parameters<typeof pushEvent>[1]) => pushEvent(this, o),
  };

  /**
   * Sends the `push` webhook GitHub sends after `commit()` moves a branch (e2e-stack.ts delivers
   * it to the app). Unset: no push is delivered. Pushes over git (the app's own) send none.
   */
  onPush: ((event: PushEvent) => Promise<void>) | undefined;

  /**
   * GitHub's log of the app's webhook deliveries: what `deliver` sent (and what a test recorded),
   * listed by `GET /app/hook/deliveries` and redelivered by
   * `POST /app/hook/deliveries/{delivery_id}/attempts`.
   */
  readonly deliveryLog: WebhookDeliveryLog = new WebhookDeliveryLog(() => this.now());

  /** Check runs, their annotations and Actions job logs; CI webhooks (fake-github-checks.ts). */
  readonly checks: FakeChecks = new FakeChecks({
    webBase: () => this.url,
    apiBase: () => this.apiUrl,
    repoJson: (repo) => this.repoJson(repo),
    userJson: (login) => this.userJson(login),
    installationRef: (repo) => this.installationRef(repo),
    fullName: (repo) => this.fullName(this.repo(repo)),
    pullsWithHead: (repo, branch) =>
      [...this.repo(repo).issues.values()]
        .filter((i) => i.pull && !i.pull.fork && i.pull.headRef === branch && i.state === "open")
        .map((i) => ({ number: i.number, baseRef: i.pull!.baseRef })),
    forkJson: (repo, fork) => this.forkJson(repo, fork),
  });

  private readonly publicKey: KeyObject;
  private readonly now: () => Date;
  private readonly tokenTtlMs: number;
  private readonly statelessTokens: boolean;
  private readonly openapi: boolean;
  /** Reactions on review comments (a pull request's diff comments), by comment id. */
  private readonly reviewReactions = new Map<number, ReactionState[]>();
  private readonly home: string;
  private readonly server: http.Server;
  private readonly children = new Set<ChildProcess>();
  private readonly users = new Map<string, { login: string; id: number; type: UserType }>();
  private readonly installations = new Map<number, InstallationState>();
  private readonly repos = new Map<string, RepoState>();
  /** A renamed repository's old names: GitHub keeps answering them until a repository takes the name. */
  private readonly formerNames = new Map<string, RepoState>();
  private readonly commentsById = new Map<number, CommentState>();
  private readonly tokens = new Map<string, TokenState>();
  private readonly rateLimits = new Map<
    number,
    { remaining: number; limit: number; resetAt: number }
  >();
  private readonly globalPermissions = new Map<string, Permission>();
  private readonly failures: Array<{
    matcher: RequestMatcher;
    response: FailResponse;
    left: number;
  }> = [];
  private readonly routes: Route[];
  private ids = { repo: 500, issue: 7000, comment: 900_000, reaction: 30_000, user: 100 };
  private seq = 0;

  constructor(
    opts: FakeGitHubOptions,
    private readonly tmp: string,
  ) {
    this.appId = opts.appId ?? 1001;
    this.appSlug = opts.appSlug ?? "tether";
    this.installationId = opts.installationId ?? 4242;
    this.now = opts.now ?? (() => new Date());
    this.tokenTtlMs = opts.tokenTtlMs ?? 60 * 60_000;
    this.statelessTokens = opts.statelessTokens ?? false;
    this.openapi = opts.openapi ?? true;
    const keys = appKeyPair();
    this.privateKeyPem = keys.privateKeyPem;
    this.publicKeyPem = keys.publicKeyPem;
    this.publicKey = createPublicKey(keys.publicKeyPem);
    this.reposDir = path.join(tmp, "repos");
    this.home = path.join(tmp, "home");
    this.installations.set(this.installationId, {
      id: this.installationId,
      account: opts.account ?? "octo",
      createdAt: this.now(),
      permissions: { ...PERMISSIONS },
    });
    this.routes = this.buildRoutes();
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  /** @internal */
  async listen(): Promise<void> {
    await fs.mkdir(this.reposDir, { recursive: true });
    await fs.mkdir(this.home, { recursive: true });
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = this.server.address() as AddressInfo;
    this.host = `127.0.0.1:${port}`;
    this.url = `http://${this.host}`;
    this.apiUrl = `${this.url}/api/v3`;
    await new Promise<void>((resolve) => this.storage.listen(0, "127.0.0.1", () => resolve()));
    this.storageUrl = `http://127.0.0.1:${(this.storage.address() as AddressInfo).port}`;
  }

  /** Uploads `bytes` as an attachment of `repo` ("owner/name"); returns its URL as GitHub gives it. */
  addAttachment(repo: string, bytes: Buffer): string {
    const id = randomUUID();
    this.attachments.set(id, { repo, bytes });
    return `${this.url}/user-attachments/assets/${id}`;
  }

  private serveAttachment(
    req: IncomingMessage,
    res: ServerResponse,
    rec: RecordedRequest,
    id: string,
  ): void {
    const a = this.attachments.get(id);
    const auth = parseAuthorization(req.headers.authorization);
    const token = auth && "credential" in auth ? this.liveToken(auth.credential) : undefined;
    rec.token = auth && "credential" in auth ? auth.credential : undefined;
    const repo = a && this.repos.get(repoKey(a.repo));
    if (!a || !repo) rec.status = 404;
    else if (repo.private && !token) rec.status = 401;
    else if (repo.private && token && !this.tokenSees(token, repo)) rec.status = 404;
    else rec.status = 302;
    if (rec.status !== 302) {
      res.writeHead(rec.status, { "content-type": "text/plain" });
      res.end(rec.status === 401 ? "Unauthorized" : "Not Found");
      return;
    }
    res.writeHead(302, { location: `${this.storageUrl}/assets/${id}?X-Amz-Signature=stand-in` });
    res.end();
  }

  private serveStorage(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "http://storage");
    this.storageRequests.push({ path: url.pathname, headers: req.headers });
    const a = this.attachments.get(url.pathname.replace(/^\/assets\//, ""));
    // Pre-signed: a request carrying credentials of its own is refused, as S3 refuses two auths.
    if (!a || req.headers.authorization) {
      res.writeHead(a ? 400 : 404, { "content-type": "application/xml" });
      res.end("<Error/>");
      return;
    }
    // What storage says of the type is not what Tether trusts (it sniffs the bytes).
    res.writeHead(200, {
      "content-type": "application/octet-stream",
      "content-length": a.bytes.length,
    });
    res.end(a.bytes);
  }

  /**
   * Stop serving and remove the repositories; then fail if a request or an answer did not fit
   * GitHub's OpenAPI description (the stand-in drifted, or Tether sent what GitHub refuses).
   */
  async close(): Promise<void> {
    for (const child of this.children) child.kill("SIGKILL");
    this.server.closeAllConnections();
    this.storage.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await new Promise<void>((resolve) => this.storage.close(() => resolve()));
    await fs.rm(this.tmp, { recursive: true, force: true });
    const found = this.takeOpenapiViolations();
    if (found.length) {
      throw new Error(
        `FakeGitHub: ${found.length} request(s) or answer(s) GitHub's OpenAPI description does not allow:\n${found.join("\n")}`,
      );
    }
  }

  /** The OpenAPI violations found so far, emptied (for a test that provokes one on purpose). */
  takeOpenapiViolations(): string[] {
    return this.openapiViolations.splice(0);
  }

  /**
   * The environment that points a Tether (Probot) process at this stand-in: app id, private
   * key, GHE_HOST/GHE_PROTOCOL (so its REST base is <url>/api/v3) and the webhook secret.
   */
  appEnv(webhookSecret: string): Record<string, string> {
    return {
      APP_ID: String(this.appId),
      PRIVATE_KEY: this.privateKeyPem,
      WEBHOOK_SECRET: webhookSecret,
      GHE_HOST: this.host,
      GHE_PROTOCOL: this.protocol,
    };
  }

  // ---------------------------------------------------------------- test control: state

  /** Create a repository with an initial commit of `files` on `defaultBranch`. */
  async addRepo(o: {
    owner: string;
    name: string;
    files?: FileMap;
    defaultBranch?: string;
    private?: boolean;
    /**
     * The owner's plan (default "team"). A private repository on "free" or "pro" refuses draft
     * pull requests as GitHub does (422, "Draft pull requests are not supported in this repository.").
     */
    plan?: Plan;
    /** Installation that can see it; null: none (the app has no access). Default: the default installation. */
    installationId?: number | null;
    ownerType?: UserType;
  }): Promise<Json> {
    const key = repoKey(`${o.owner}/${o.name}`);
    if (this.repos.has(key)) throw new Error(`repo ${key} exists already`);
    this.formerNames.delete(key); // a new repository under an old name ends the old one's redirect
    this.user(o.owner, o.ownerType ?? "User");
    const installationId = o.installationId === undefined ? this.installationId : o.installationId;
    if (installationId !== null && !this.installations.has(installationId)) {
      this.installations.set(installationId, {
        id: installationId,
        account: o.owner,
        createdAt: this.now(),
        permissions: { ...PERMISSIONS },
      });
    }
    const id = ++this.ids.repo;
    // A renamed repository keeps its bare repository where it was made: a new one under its old
    // name goes beside it.
    const taken = [...this.repos.values(), ...this.formerNames.values()].some(
      (r) => r.bare === path.join(this.reposDir, `${key}.git`),
    );
    const repo: RepoState = {
      id,
      owner: o.owner,
      name: o.name,
      defaultBranch: o.defaultBranch ?? "main",
      private: o.private ?? false,
      plan: o.plan ?? "team",
      installationId,
      bare: path.join(this.reposDir, taken ? `${key}.${id}.git` : `${key}.git`),
      createdAt: this.now(),
      pushedAt: this.now(),
      commitDates: new Map(),
      nextNumber: 1,
      issues: new Map(),
      permissions: new Map(),
      protectedBranches: new Set(),
      signaturesRequired: new Set(),
      signedCommits: new Set(),
    };
    await initBareRepo(repo.bare, repo.defaultBranch, this.gitEnv());
    await installPreReceive(repo.bare);
    await commitFiles(
      repo.bare,
      {
        branch: repo.defaultBranch,
        files: o.files ?? { "README.md": `# ${o.name}\n` },
        message: "Initial commit",
        when: this.now(),
      },
      this.gitEnv(),
    );
    this.repos.set(key, repo);
    return this.repoJson(key);
  }

  /**
   * Rename a repository (same id, issues and git history), as its settings page does. GitHub
   * keeps redirecting the old name (API and git) until another repository takes it; the
   * stand-in answers the old name as the renamed repository.
   */
  renameRepo(from: string, to: string): Json {
    const r = this.repo(from);
    const key = repoKey(to);
    if (this.repos.has(key)) throw new Error(`repo ${key} exists already`);
    const [owner, name] = to.split("/");
    if (!owner || !name) throw new Error(`not owner/name: ${to}`);
    this.user(owner, "User");
    this.repos.delete(repoKey(from));
    this.formerNames.set(repoKey(from), r);
    r.owner = owner;
    r.name = name;
    this.repos.set(key, r);
    return this.repoJson(key);
  }

  /** Delete a repository: its name is free for a new one (with a new id). */
  async deleteRepo(name: string): Promise<void> {
    const r = this.repo(name);
    this.repos.delete(repoKey(name));
    for (const [k, v] of this.formerNames) if (v === r) this.formerNames.delete(k);
    await fs.rm(r.bare, { recursive: true, force: true });
  }

  /** A repository by its current name, or by a name it had before a rename. */
  private lookup(name: string): RepoState | undefined {
    return this.repos.get(repoKey(name)) ?? this.formerNames.get(repoKey(name));
  }

  /** Commit files (null deletes) on a branch (default: the default branch). Returns the sha. */
  async commit(
    repo: string,
    o: { files: FileMap; message?: string; branch?: string; from?: string },
  ): Promise<string> {
    const r = this.repo(repo);
    const branch = o.branch ?? r.defaultBranch;
    const before = this.onPush ? await refSha(r.bare, `refs/heads/${branch}`, this.gitEnv()) : "";
    const sha = await commitFiles(
      r.bare,
      {
        branch,
        files: o.files,
        message: o.message ?? "Update files",
        from: o.from ?? `refs/heads/${r.defaultBranch}`,
        when: this.now(),
      },
      this.gitEnv(),
    );
    r.pushedAt = this.now();
    r.commitDates.set(sha, r.pushedAt);
    await this.onPush?.(
      this.webhooks.push({
        repo,
        ref: `refs/heads/${branch}`,
        before: before || "0".repeat(40),
        after: sha,
      }),
    );
    return sha;
  }

  /** The commit a ref (branch name or full ref) points at in the bare repository. */
  async sha(repo: string, ref: string): Promise<string | undefined> {
    const r = this.repo(repo);
    const full = ref.startsWith("refs/") ? ref : `refs/heads/${ref}`;
    return refSha(r.bare, full, this.gitEnv());
  }

  /** Path of the bare repository on disk. */
  barePath(repo: string): string {
    return this.repo(repo).bare;
  }

  addIssue(o: {
    repo: string;
    title?: string;
    body?: string | null;
    user?: string;
    labels?: string[];
  }): Json {
    const r = this.repo(o.repo);
    const issue = this.newIssue(r, o);
    return this.issueJson(o.repo, issue.number);
  }

  /**
   * Open a pull request: commits `files` on a new head branch started from the base branch and
   * points refs/pull/<n>/head at it, as GitHub does.
   */
  async addPullRequest(o: {
    repo: string;
    headRef: string;
    baseRef?: string;
    files?: FileMap;
    title?: string;
    body?: string | null;
    user?: string;
    draft?: boolean;
    /**
     * The head lives in this fork (`owner/name`): its commits reach the base repository only as
     * refs/pull/<n>/head, as on GitHub, and no branch of the base repository has them.
     */
    fork?: string;
  }): Promise<Json> {
    const r = this.repo(o.repo);
    const baseRef = o.baseRef ?? r.defaultBranch;
    const scratch = `fake-fork-head-${randomBytes(4).toString("hex")}`;
    const headSha = await commitFiles(
      r.bare,
      {
        branch: o.fork ? scratch : o.headRef,
        files: o.files ?? { [`${o.headRef.replace(/\W+/g, "-")}.txt`]: "change\n" },
        message: o.title ?? "A change",
        from: `refs/heads/${baseRef}`,
        when: this.now(),
      },
      this.gitEnv(),
    );
    const issue = this.newIssue(r, { ...o, title: o.title ?? "A pull request" });
    issue.pull = {
      headRef: o.headRef,
      headSha,
      baseRef,
      draft: o.draft ?? false,
      reviewComments: [],
      reviews: [],
      ...(o.fork ? { fork: o.fork } : {}),
    };
    await updateRef(r.bare, `refs/pull/${issue.number}/head`, headSha, this.gitEnv());
    if (o.fork) await deleteRef(r.bare, `refs/heads/${scratch}`, this.gitEnv());
    return this.pullJson(o.repo, issue.number);
  }

  /** GitHub protects `branch`: pushes to it are refused (GH006), and the REST API says so. */
  /** Make a repository private or public, or move its owner to another plan. */
  setVisibility(repo: string, o: { private?: boolean; plan?: Plan }): void {
    const r = this.repo(repo);
    if (o.private !== undefined) r.private = o.private;
    if (o.plan !== undefined) r.plan = o.plan;
  }

  protectBranch(repo: string, branch: string): void {
    this.repo(repo).protectedBranches.add(branch);
  }

  /**
   * A ruleset that requires signed commits on `branch`: its rules list `required_signatures`,
   * and a push (git receive-pack) of a commit GitHub did not sign is refused, as GitHub does.
   */
  requireSignatures(repo: string, branch: string): void {
    this.repo(repo).signaturesRequired.add(branch);
  }

  /** Whether GitHub made and signed this commit (the Git Data API's `verification.verified`). */
  isVerified(repo: string, sha: string): boolean {
    return this.repo(repo).signedCommits.has(sha);
  }

  /**
   * The rate-limit headroom an installation's token requests are told (x-ratelimit-remaining,
   * -limit, -reset on every answer), as GitHub reports it; null: the default (4999 of 5000, an
   * hour to go). The count stays where it is set: a test moves it, the stand-in does not.
   */
  setRateLimit(
    installationId: number,
    limit: { remaining: number; limit?: number; resetAt: number } | null,
  ): void {
    if (limit === null) this.rateLimits.delete(installationId);
    else this.rateLimits.set(installationId, { limit: 5000, ...limit });
  }

  /** Change what an installation was granted (e.g. add `workflows: write`). */
  setInstallationPermissions(permissions: Record<string, string>, installationId?: number): void {
    const inst = this.installations.get(installationId ?? this.installationId);
    if (!inst) throw new Error(`no installation ${installationId}`);
    inst.permissions = { ...permissions };
  }

  /** Pushes that updated `repo` (and `branch`, a short name, when given). */
  pushesTo(repo: string, branch?: string): RecordedPush[] {
    return this.pushes.filter(
      (p) => p.repo === repoKey(repo) && (branch === undefined || p.ref === `refs/heads/${branch}`),
    );
  }

  /** Pull requests of `repo`, as the REST API shows them, oldest first. */
  pulls(repo: string): Json[] {
    const r = this.repo(repo);
    return [...r.issues.values()].filter((i) => i.pull).map((i) => this.pullJson(repo, i.number));
  }

  /** Push a new commit to a pull request's head branch (and refs/pull/<n>/head). */
  async pushToPullRequest(
    repo: string,
    number: number,
    o: { files: FileMap; message?: string },
  ): Promise<string> {
    const r = this.repo(repo);
    const issue = r.issues.get(number);
    if (!issue?.pull) throw new Error(`${repo} #${number} is not a pull request`);
    const sha = await commitFiles(
      r.bare,
      {
        branch: issue.pull.headRef,
        files: o.files,
        message: o.message ?? "More changes",
        when: this.now(),
      },
      this.gitEnv(),
    );
    issue.pull.headSha = sha;
    issue.updatedAt = this.now();
    await updateRef(r.bare, `refs/pull/${number}/head`, sha, this.gitEnv());
    return sha;
  }

  /**
   * A reviewer comments on a line (or lines) of a pull request's diff, at its head commit. No
   * webhook is sent: the caller delivers one if the test needs it. Returns the REST shape.
   */
  addReviewComment(o: {
    repo: string;
    number: number;
    body: string;
    path: string;
    line: number;
    startLine?: number;
    side?: "LEFT" | "RIGHT";
    user?: string;
    /** The review (addReview's id) it is submitted with. */
    reviewId?: number;
    /** The review comment this one replies to (its thread's first). */
    inReplyTo?: number;
  }): Json {
    const r = this.repo(o.repo);
    const pull = this.pullState(r, o.number);
    const json = reviewCommentJson(this.bases(), this.fullName(r), {
      reviewId: o.reviewId ?? null,
      id: ++this.ids.comment,
      pullNumber: o.number,
      user: this.userJson(o.user ?? "octocat"),
      body: o.body,
      path: o.path,
      line: o.line,
      startLine: o.startLine ?? null,
      side: o.side ?? "RIGHT",
      commitId: pull.headSha,
      createdAt: this.now(),
    });
    if (o.inReplyTo !== undefined) json.in_reply_to_id = o.inReplyTo;
    pull.reviewComments.push(json);
    return json;
  }

  /** A reviewer submits a review of a pull request's head commit. Returns the REST shape. */
  addReview(o: {
    repo: string;
    number: number;
    body: string;
    state?: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED";
    user?: string;
  }): Json {
    const r = this.repo(o.repo);
    const pull = this.pullState(r, o.number);
    const json = reviewJson(this.bases(), this.fullName(r), {
      id: ++this.ids.comment,
      pullNumber: o.number,
      user: this.userJson(o.user ?? "octocat"),
      body: o.body,
      state: o.state ?? "COMMENTED",
      commitId: pull.headSha,
      submittedAt: this.now(),
    });
    pull.reviews.push(json);
    return json;
  }

  /** The reviews of a pull request and their line comments, as the REST API shows them. */
  reviewsOf(repo: string, number: number): { reviews: Json[]; comments: Json[] } {
    const pull = this.pullState(this.repo(repo), number);
    return { reviews: [...pull.reviews], comments: [...pull.reviewComments] };
  }

  /** A pull request's diff as GitHub computes it (its base branch now, its head). */
  private async pullDiff(r: RepoState, pull: NonNullable<IssueState["pull"]>) {
    const base =
      (await refSha(r.bare, `refs/heads/${pull.baseRef}`, this.gitEnv())) ?? pull.baseRef;
    return diffFiles(r.bare, base, pull.headSha, this.gitEnv());
  }

  private pullState(r: RepoState, number: number): NonNullable<IssueState["pull"]> {
    const pull = this.issueState(r, number).pull;
    if (!pull) throw new Error(`${this.fullName(r)} #${number} is not a pull request`);
    return pull;
  }

  addComment(o: { repo: string; issueNumber: number; body: string; user?: string }): Json {
    const r = this.repo(o.repo);
    const issue = this.issueState(r, o.issueNumber);
    const c = this.newComment(r, issue, o.user ?? "octocat", o.body);
    return this.commentJson(c.id);
  }

  /** A person edits a comment. Returns the edited comment. */
  editComment(commentId: number, body: string): Json {
    const c = this.commentState(commentId);
    c.body = body;
    c.updatedAt = this.now();
    return this.commentJson(commentId);
  }

  deleteComment(commentId: number): void {
    this.commentState(commentId).deleted = true;
  }

  editIssue(
    repo: string,
    issueNumber: number,
    o: { title?: string; body?: string | null; state?: "open" | "closed" },
  ): Json {
    const issue = this.issueState(this.repo(repo), issueNumber);
    if (o.title !== undefined) issue.title = o.title;
    if (o.body !== undefined) issue.body = o.body;
    if (o.state !== undefined) {
      issue.state = o.state;
      issue.closedAt = o.state === "closed" ? this.now() : null;
    }
    issue.updatedAt = this.now();
    return this.issueJson(repo, issueNumber);
  }

  /** Set a user's permission, on one repository or (without `repo`) on all. */
  setPermission(user: string, permission: Permission, repo?: string): void {
    if (repo) this.repo(repo).permissions.set(user.toLowerCase(), permission);
    else this.globalPermissions.set(user.toLowerCase(), permission);
  }

  /**
   * Commit `.github/tether.yml` (or `file`) to the default branch; null removes it. The
   * contents API and clones then both see it, as on GitHub.
   */
  async setConfig(repo: string, yaml: string | null, file = ".github/tether.yml"): Promise<string> {
    return this.commit(repo, {
      files: { [file]: yaml },
      message: yaml === null ? `Remove ${file}` : `Configure ${file}`,
    });
  }

  /** The thread's comments now (edits applied, deleted ones gone), as the REST API shows them. */
  comments(repo: string, issueNumber: number): Json[] {
    const r = this.repo(repo);
    this.issueState(r, issueNumber);
    return this.liveComments(r, issueNumber).map((c) => this.commentJson(c.id));
  }

  /**
   * Reactions on a comment (`commentId`), on a review comment on a pull request's diff
   * (`reviewCommentId`) or on an issue (`issueNumber`).
   */
  reactions(
    repo: string,
    target: { commentId: number } | { reviewCommentId: number } | { issueNumber: number },
  ): Array<{ user: string; content: ReactionContent }> {
    const list =
      "commentId" in target
        ? this.commentState(target.commentId).reactions
        : "reviewCommentId" in target
          ? (this.reviewReactions.get(target.reviewCommentId) ?? [])
          : this.issueState(this.repo(repo), target.issueNumber).reactions;
    return list.map((x) => ({ user: x.user, content: x.content }));
  }

  /** Issue an installation token without the JWT exchange (for tests of git and the runner). */
  createInstallationToken(
    o: {
      installationId?: number;
      repositories?: string[];
      /** Narrower than the installation's (default: all of them). */
      permissions?: Record<string, string>;
    } = {},
  ): string {
    const installationId = o.installationId ?? this.installationId;
    let repoIds: number[] | null = null;
    if (o.repositories) repoIds = o.repositories.map((name) => this.repo(name).id);
    return this.issueToken(installationId, repoIds, o.permissions).token;
  }

  /** Every installation token issued so far, oldest first. */
  issuedTokens(): string[] {
    return [...this.tokens.keys()];
  }

  /** What `token` was made with (repositories and permissions); undefined if never issued. */
  tokenGrant(token: string): TokenGrant | undefined {
    const t = this.tokens.get(token);
    if (!t) return undefined;
    return {
      token,
      repositories: t.repoIds
        ? t.repoIds.map((id) =>
            this.fullName([...this.repos.values()].find((r) => r.id === id) as RepoState),
          )
        : null,
      permissions: { ...t.permissions },
    };
  }

  revokeToken(token: string): void {
    const t = this.tokens.get(token);
    if (t) t.revoked = true;
  }

  /** Make every issued token expire now (the app must fetch a new one). */
  expireTokens(): void {
    for (const t of this.tokens.values()) t.expiresAt = new Date(this.now().getTime() - 1000);
  }

  /** The next `times` requests matching `matcher` get `response` instead of being served. */
  failNext(matcher: RequestMatcher, response: FailResponse): void {
    this.failures.push({ matcher, response, left: response.times ?? 1 });
  }

  /**
   * Deliver a webhook to `url` as GitHub does: signed with `secret`, with a new delivery id
   * unless given, and recorded in the app's delivery log with the answer's status (0 when none
   * came: nothing listening, the connection cut, no answer within 10 s). Never throws for a
   * failed delivery.
   */
  deliver(
    url: string,
    event: string,
    payload: unknown,
    secret: string,
    opts: { deliveryId?: string; at?: Date; timeoutMs?: number } = {},
  ): Promise<DeliveryResult & { attempt: DeliveryAttemptRecord }> {
    return this.deliveryLog.send(url, event, payload, secret, opts);
  }

  /** Requests that created comments (POST …/issues/{n}/comments), optionally for one thread. */
  postedComments(repo?: string, issueNumber?: number): RecordedRequest[] {
    return this.requests.filter(
      (r) =>
        r.route === "POST /repos/{owner}/{repo}/issues/{issue_number}/comments" &&
        r.status === 201 &&
        (repo === undefined || r.path.toLowerCase().includes(`/repos/${repoKey(repo)}/`)) &&
        (issueNumber === undefined || r.path.endsWith(`/issues/${issueNumber}/comments`)),
    );
  }

  /** REST requests whose body contains `text` (to assert a secret was never posted). */
  requestsWithBodyContaining(text: string): RecordedRequest[] {
    return this.requests.filter((r) => r.kind === "rest" && r.rawBody.includes(text));
  }

  // ---------------------------------------------------------------- JSON shapes (PayloadSource)

  repoJson(repo: string): Json {
    const r = this.repo(repo);
    const open = [...r.issues.values()].filter((i) => i.state === "open").length;
    return repoJson(this.bases(), {
      id: r.id,
      owner: this.userJson(r.owner),
      name: r.name,
      private: r.private,
      defaultBranch: r.defaultBranch,
      createdAt: r.createdAt,
      pushedAt: r.pushedAt,
      openIssues: open,
    });
  }

  issueJson(repo: string, issueNumber: number): Json {
    const r = this.repo(repo);
    return issueJson(
      this.bases(),
      this.fullName(r),
      this.issueFacts(r, this.issueState(r, issueNumber)),
    );
  }

  pullJson(repo: string, number: number): Json {
    const r = this.repo(repo);
    const issue = this.issueState(r, number);
    if (!issue.pull) throw new Error(`${repo} #${number} is not a pull request`);
    return pullJson(this.bases(), this.fullName(r), {
      issue: this.issueFacts(r, issue),
      repo: this.repoJson(repo),
      ...(issue.pull.fork ? { headRepo: this.forkJson(repo, issue.pull.fork) } : {}),
      headRef: issue.pull.headRef,
      headSha: issue.pull.headSha,
      baseRef: issue.pull.baseRef,
      baseSha: "",
      draft: issue.pull.draft,
    });
  }

  /** A fork of `repo` named `fork` (`owner/name`), as a pull request's head.repo shows it. */
  forkJson(repo: string, fork: string): Json {
    const [owner = "", name = ""] = fork.split("/");
    const base = this.repoJson(repo);
    return {
      ...base,
      id: (base.id as number) + 100_000,
      name,
      full_name: fork,
      owner: this.userJson(owner),
      fork: true,
      html_url: `${this.url}/${fork}`,
      clone_url: `${this.url}/${fork}.git`,
    };
  }

  commentJson(commentId: number): Json {
    const c = this.commentState(commentId);
    const r = [...this.repos.values()].find((x) => x.id === c.repoId);
    if (!r) throw new Error(`the repository of comment ${commentId} is gone`);
    const issue = this.issueState(r, c.issueNumber);
    return commentJson(this.bases(), this.fullName(r), {
      id: c.id,
      issueNumber: c.issueNumber,
      isPullRequest: issue.pull !== undefined,
      user: this.userJson(c.user),
      body: c.body,
      createdAt: c.createdAt,
      updatedAt: c.updatedAt,
      authorAssociation: this.association(r, c.user),
      reactions: c.reactions.map((x) => x.content),
      performedViaApp: c.user === this.botLogin() ? this.appJson() : null,
    });
  }

  userJson(login: string): Json {
    const u = this.user(login);
    return userJson(this.bases(), u.login, u.id, u.type);
  }

  installationRef(repo: string): { id: number; node_id: string } {
    const id = this.repo(repo).installationId ?? this.installationId;
    return { id, node_id: nodeId("Installation", id) };
  }

  /** The app's bot login, the author of everything posted with an installation token. */
  botLogin(): string {
    return `${this.appSlug}[bot]`;
  }

  // ---------------------------------------------------------------- state helpers

  private gitEnv() {
    return standInGitEnv(this.home);
  }

  private bases(): Bases {
    return { apiUrl: this.apiUrl, webUrl: this.url };
  }

  private repo(name: string): RepoState {
    const r = this.repos.get(repoKey(name));
    if (!r) throw new Error(`the stand-in has no repo ${name}; addRepo it first`);
    return r;
  }

  private fullName(r: RepoState): string {
    return `${r.owner}/${r.name}`;
  }

  private user(login: string, type?: UserType) {
    const key = login.toLowerCase();
    let u = this.users.get(key);
    if (!u) {
      u = { login, id: ++this.ids.user, type: type ?? (login.endsWith("[bot]") ? "Bot" : "User") };
      this.users.set(key, u);
    }
    return u;
  }

  private newIssue(
    r: RepoState,
    o: { title?: string; body?: string | null; user?: string; labels?: string[] },
  ): IssueState {
    const issue: IssueState = {
      id: ++this.ids.issue,
      number: r.nextNumber++,
      title: o.title ?? "An issue",
      body: o.body === undefined ? "" : o.body,
      user: this.user(o.user ?? "octocat").login,
      state: "open",
      labels: o.labels ?? [],
      createdAt: this.now(),
      updatedAt: this.now(),
      closedAt: null,
      reactions: [],
    };
    r.issues.set(issue.number, issue);
    return issue;
  }

  private issueState(r: RepoState, n: number): IssueState {
    const issue = r.issues.get(n);
    if (!issue) throw new Error(`${this.fullName(r)} has no issue #${n}`);
    return issue;
  }

  private newComment(r: RepoState, issue: IssueState, user: string, body: string): CommentState {
    const c: CommentState = {
      id: ++this.ids.comment,
      repoId: r.id,
      issueNumber: issue.number,
      user: this.user(user).login,
      body,
      createdAt: this.now(),
      updatedAt: this.now(),
      deleted: false,
      reactions: [],
    };
    this.commentsById.set(c.id, c);
    issue.updatedAt = this.now();
    return c;
  }

  private commentState(id: number): CommentState {
    const c = this.commentsById.get(id);
    if (!c) throw new Error(`the stand-in has no comment ${id}`);
    return c;
  }

  private liveComments(r: RepoState, issueNumber: number): CommentState[] {
    return [...this.commentsById.values()]
      .filter((c) => c.repoId === r.id && c.issueNumber === issueNumber && !c.deleted)
      .sort((a, b) => a.id - b.id);
  }

  private issueFacts(r: RepoState, i: IssueState): IssueFacts {
    return {
      id: i.id,
      number: i.number,
      title: i.title,
      body: i.body,
      user: this.userJson(i.user),
      state: i.state,
      labels: i.labels,
      comments: this.liveComments(r, i.number).length,
      createdAt: i.createdAt,
      updatedAt: i.updatedAt,
      closedAt: i.closedAt,
      authorAssociation: this.association(r, i.user),
      isPullRequest: i.pull !== undefined,
      reactions: i.reactions.map((x) => x.content),
    };
  }

  private permissionOf(r: RepoState, login: string): Permission {
    const key = login.toLowerCase();
    const set = r.permissions.get(key) ?? this.globalPermissions.get(key);
    if (set) return set;
    if (key === r.owner.toLowerCase()) return "admin";
    return r.private ? "none" : "read";
  }

  private association(r: RepoState, login: string): string {
    if (login.toLowerCase() === r.owner.toLowerCase()) return "OWNER";
    const p = this.permissionOf(r, login);
    return p === "admin" || p === "maintain" || p === "write" ? "COLLABORATOR" : "NONE";
  }

  private appJson(): Json {
    const owner = this.userJson(this.installations.get(this.installationId)?.account ?? "octo");
    return {
      id: this.appId,
      slug: this.appSlug,
      node_id: nodeId("Integration", this.appId),
      client_id: `Iv1.${this.appId.toString(16).padStart(16, "0")}`,
      owner,
      name: this.appSlug,
      description: "",
      external_url: this.url,
      html_url: `${this.url}/apps/${this.appSlug}`,
      created_at: iso(new Date(0)),
      updated_at: iso(new Date(0)),
      permissions: PERMISSIONS,
      events: EVENTS,
      installations_count: this.installations.size,
    };
  }

  private installationJson(id: number): Json {
    const inst = this.installations.get(id);
    if (!inst) throw new Error(`no installation ${id}`);
    return installationJson(this.bases(), {
      id,
      appId: this.appId,
      appSlug: this.appSlug,
      account: this.userJson(inst.account),
      permissions: { ...PERMISSIONS },
      events: EVENTS,
      repositorySelection: "all",
      createdAt: inst.createdAt,
    });
  }

  private issueToken(
    installationId: number,
    repoIds: number[] | null,
    permissions?: Record<string, string>,
  ): TokenState {
    const inst = this.installations.get(installationId);
    if (!inst) throw new Error(`no installation ${installationId}`);
    const t: TokenState = {
      token: this.statelessTokens
        ? this.statelessToken(installationId, repoIds)
        : `ghs_${randomBytes(27).toString("base64url").replace(/[-_]/g, "x").slice(0, 36)}`,
      installationId,
      createdAt: this.now(),
      expiresAt: new Date(this.now().getTime() + this.tokenTtlMs),
      revoked: false,
      repoIds,
      // GitHub adds metadata: read to every installation token.
      permissions: { metadata: "read", ...(permissions ?? inst.permissions) },
    };
    this.tokens.set(t.token, t);
    return t;
  }

  /**
   * A token shaped like GitHub's stateless installation tokens: `ghs_<app id>_` then a JWT-like
   * header.payload.signature in base64url (~520 characters). The stand-in still looks it up in
   * its table; only the shape is GitHub's.
   */
  private statelessToken(installationId: number, repoIds: number[] | null): string {
    const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const header = part({ alg: "RS256", typ: "JWT", kid: randomBytes(6).toString("hex") });
    const payload = part({
      iss: this.appId,
      ins: installationId,
      rep: repoIds ?? "all",
      iat: Math.floor(this.now().getTime() / 1000),
      exp: Math.floor((this.now().getTime() + this.tokenTtlMs) / 1000),
      jti: randomBytes(12).toString("base64url"),
    });
    const signature = randomBytes(256).toString("base64url");
    return `ghs_${this.appId}_${header}.${payload}.${signature}`;
  }

  private liveToken(token: string | undefined): TokenState | undefined {
    const t = token ? this.tokens.get(token) : undefined;
    if (!t || t.revoked || t.expiresAt.getTime() <= this.now().getTime()) return undefined;
    return t;
  }

  private tokenSees(t: TokenState, r: RepoState): boolean {
    return (
      r.installationId === t.installationId && (t.repoIds === null || t.repoIds.includes(r.id))
    );
  }

  /** Why a JWT is refused, in GitHub's words; undefined when it is good. */
  private jwtProblem(jwt: string): string | undefined {
    const parts = jwt.split(".");
    if (parts.length !== 3) return "A JSON web token could not be decoded";
    const [h = "", p = "", s = ""] = parts;
    let header: Json;
    let payload: Json;
    try {
      header = JSON.parse(Buffer.from(h, "base64url").toString()) as Json;
      payload = JSON.parse(Buffer.from(p, "base64url").toString()) as Json;
    } catch {
      return "A JSON web token could not be decoded";
    }
    if (header.alg !== "RS256") return "A JSON web token could not be decoded";
    const good = verifySignature(
      "sha256",
      Buffer.from(`${h}.${p}`),
      this.publicKey,
      Buffer.from(s, "base64url"),
    );
    if (!good) return "A JSON web token could not be decoded";
    if (String(payload.iss) !== String(this.appId)) {
      return "'Issuer' claim ('iss') must be an Integer";
    }
    const now = Math.floor(Date.now() / 1000);
    if (typeof payload.iat !== "number" || payload.iat > now + 60) {
      return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";
    }
    if (typeof payload.exp !== "number" || payload.exp <= now) {
      return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
    }
    if (payload.exp > now + 600 + 60) {
      return "'Expiration time' claim ('exp') is too far in the future";
    }
    return undefined;
  }

  // ---------------------------------------------------------------- HTTP

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://stand-in");
    const rec: RecordedRequest = {
      seq: ++this.seq,
      at: Date.now(),
      kind: "other",
      method: req.method ?? "GET",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      route: undefined,
      headers: req.headers,
      body: undefined,
      rawBody: "",
      token: undefined,
      status: 0,
    };
    this.requests.push(rec);
    res.once("finish", () => (rec.doneAt = Date.now()));
    try {
      const body = await readBody(req);
      const git = GIT_PATH.exec(url.pathname);
      if (git) {
        rec.kind = "git";
        await this.handleGit(req, res, rec, url, body, git);
      } else if (url.pathname.startsWith("/user-attachments/assets/")) {
        this.serveAttachment(req, res, rec, url.pathname.slice("/user-attachments/assets/".length));
      } else if (url.pathname.startsWith("/_blobs/")) {
        // Pre-signed storage URLs (a job's log): no token, as on GitHub's blob storage.
        const blob = this.checks.blob(url.pathname);
        rec.status = blob === undefined ? 404 : 200;
        res.writeHead(rec.status, { "content-type": "text/plain; charset=utf-8" });
        res.end(blob ?? "BlobNotFound");
      } else if (url.pathname.startsWith("/api/v3/") || url.pathname === "/api/v3") {
        rec.kind = "rest";
        rec.rawBody = body.toString("utf8");
        await this.handleRest(req, res, rec, url);
      } else {
        this.sendJson(res, rec, { status: 404, body: { message: "Not Found" } });
      }
    } catch (err) {
      if (!res.headersSent) {
        this.sendJson(res, rec, {
          status: 500,
          body: { message: `stand-in error: ${err instanceof Error ? err.message : String(err)}` },
        });
      } else {
        res.destroy();
      }
    }
  }

  private takeFailure(rec: RecordedRequest): FailResponse | undefined {
    for (const f of this.failures) {
      if (f.left <= 0) continue;
      const m = f.matcher;
      const hit =
        typeof m === "function"
          ? m(rec)
          : (m.method === undefined || m.method.toUpperCase() === rec.method) &&
            (m.kind === undefined || m.kind === rec.kind) &&
            (m.route === undefined || m.route === rec.route) &&
            (m.path === undefined ||
              (typeof m.path === "string" ? m.path === rec.path : m.path.test(rec.path)));
      if (hit) {
        f.left -= 1;
        return f.response;
      }
    }
    return undefined;
  }

  private async handleRest(
    req: IncomingMessage,
    res: ServerResponse,
    rec: RecordedRequest,
    url: URL,
  ): Promise<void> {
    const sub = url.pathname.slice("/api/v3".length) || "/";
    let match: { route: Route; params: Record<string, string> } | undefined;
    for (const route of this.routes) {
      if (route.method !== rec.method) continue;
      const m = route.pattern.exec(sub);
      if (m) {
        const params = Object.fromEntries(
          route.names.map((n, i) => [n, decodeURIComponent(m[i + 1] ?? "")]),
        );
        match = { route, params };
        break;
      }
    }
    if (match) rec.route = `${match.route.method} ${match.route.template}`;

    const auth = parseAuthorization(req.headers.authorization);
    rec.token = auth?.scheme === "basic" ? auth.password : auth?.credential;

    const failure = this.takeFailure(rec);
    if (failure) {
      this.sendJson(res, rec, {
        status: failure.status,
        body: failure.body ?? { message: failure.status >= 500 ? "Server Error" : "Error" },
        headers: failure.headers ?? {},
      });
      return;
    }

    if (rec.rawBody !== "") {
      try {
        rec.body = JSON.parse(rec.rawBody);
      } catch {
        rec.body = rec.rawBody;
        this.sendJson(res, rec, {
          status: 400,
          body: { message: "Problems parsing JSON", documentation_url: DOCS },
        });
        return;
      }
    }
    if (!auth || auth.scheme === "basic") {
      this.sendJson(res, rec, {
        status: 401,
        body: { message: "Requires authentication", documentation_url: DOCS, status: "401" },
      });
      return;
    }
    if (!match) {
      this.sendJson(res, rec, notFound());
      return;
    }
    const { route, params } = match;
    let token: TokenState | undefined;
    if (route.auth === "jwt") {
      const problem = this.jwtProblem(auth.credential);
      if (problem) {
        this.sendJson(res, rec, {
          status: 401,
          body: { message: problem, documentation_url: DOCS, status: "401" },
        });
        return;
      }
    } else {
      token = this.liveToken(auth.credential);
      if (!token) {
        this.sendJson(res, rec, {
          status: 401,
          body: { message: "Bad credentials", documentation_url: DOCS, status: "401" },
        });
        return;
      }
    }
    let repo: RepoState | undefined;
    if (params.owner !== undefined && params.repo !== undefined) {
      repo = this.lookup(`${params.owner}/${params.repo}`);
      if (!repo || (token && !this.tokenSees(token, repo))) {
        this.sendJson(res, rec, notFound());
        return;
      }
    }
    const need = token ? requiredPermission(rec.method, sub) : null;
    if (token && need && !grants(token.permissions, need)) {
      this.sendJson(res, rec, {
        status: 403,
        body: {
          message: "Resource not accessible by integration",
          documentation_url: DOCS,
          status: "403",
        },
      });
      return;
    }
    const body =
      rec.body !== null && typeof rec.body === "object" && !Array.isArray(rec.body)
        ? (rec.body as Json)
        : {};
    const reply = await route.handle({
      params,
      query: rec.query,
      body,
      rec,
      token,
      repo,
      accept: String(req.headers.accept ?? ""),
    });
    this.sendJson(res, rec, rec.method === "GET" ? conditional(req, rec, reply) : reply);
  }

  private sendJson(res: ServerResponse, rec: RecordedRequest, reply: Reply): void {
    rec.status = reply.status;
    if (this.openapi && rec.kind === "rest") this.checkOpenapi(rec, reply);
    const headers: Record<string, string> = {
      "x-github-media-type": "github.v3; format=json",
      "x-github-request-id": `FAKE:${rec.seq}`,
      "x-ratelimit-limit": "5000",
      "x-ratelimit-remaining": "4999",
      "x-ratelimit-used": "1",
      "x-ratelimit-reset": String(Math.ceil(Date.now() / 1000) + 3600),
      "x-ratelimit-resource": "core",
      ...this.rateLimitHeaders(rec),
      ...reply.headers,
    };
    if (reply.status === 204 || reply.status === 304) {
      res.writeHead(reply.status, headers);
      res.end();
      return;
    }
    if (reply.raw) {
      res.writeHead(reply.status, { ...headers, "content-type": reply.raw.contentType });
      res.end(reply.raw.data);
      return;
    }
    res.writeHead(reply.status, { ...headers, "content-type": "application/json; charset=utf-8" });
    res.end(JSON.stringify(reply.body ?? {}));
  }

  /** What setRateLimit said for the installation of the request's token, if anything. */
  private rateLimitHeaders(rec: RecordedRequest): Record<string, string> {
    const installation = rec.token ? this.tokens.get(rec.token)?.installationId : undefined;
    const l = installation === undefined ? undefined : this.rateLimits.get(installation);
    if (!l) return {};
    return {
      "x-ratelimit-limit": String(l.limit),
      "x-ratelimit-remaining": String(l.remaining),
      "x-ratelimit-used": String(Math.max(0, l.limit - l.remaining)),
      "x-ratelimit-reset": String(l.resetAt),
    };
  }

  /** Hold a REST request and the answer about to go out against GitHub's description. */
  private checkOpenapi(rec: RecordedRequest, reply: Reply): void {
    const req = {
      method: rec.method,
      path: rec.path.slice("/api/v3".length) || "/",
      query: rec.query,
      body: parseBody(rec.rawBody),
    };
    const body =
      reply.status === 204 || reply.status === 304
        ? undefined
        : reply.raw
          ? String(reply.raw.data)
          : (reply.body ?? {});
    this.openapiViolations.push(
      ...checkRequest(req),
      ...checkResponse(req, { status: reply.status, body }),
    );
  }

  private async handleGit(
    req: IncomingMessage,
    res: ServerResponse,
    rec: RecordedRequest,
    url: URL,
    body: Buffer,
    m: RegExpExecArray,
  ): Promise<void> {
    const [, owner = "", name = "", rest = ""] = m;
    const auth = parseAuthorization(req.headers.authorization);
    rec.token = auth?.scheme === "basic" ? auth.password : undefined;
    const failure = this.takeFailure(rec);
    if (failure) {
      rec.status = failure.status;
      res.writeHead(failure.status, { "content-type": "text/plain", ...failure.headers });
      res.end(typeof failure.body === "string" ? failure.body : "stand-in failure\n");
      return;
    }
    const token =
      auth?.scheme === "basic" && auth.user === "x-access-token"
        ? this.liveToken(auth.password)
        : undefined;
    if (!token) {
      rec.status = 401;
      res.writeHead(401, {
        "content-type": "text/plain",
        "www-authenticate": 'Basic realm="GitHub"',
      });
      res.end(
        "Invalid username or token. Password authentication is not supported for Git operations.\n",
      );
      return;
    }
    const repo = this.lookup(`${owner}/${name}`);
    if (!repo || !this.tokenSees(token, repo)) {
      rec.status = 404;
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("Repository not found.\n");
      return;
    }
    const pushing =
      rest === "/git-receive-pack" || url.searchParams.get("service") === "git-receive-pack";
    if (!grants(token.permissions, { name: "contents", level: pushing ? "write" : "read" })) {
      rec.status = 403;
      res.writeHead(403, { "content-type": "text/plain" });
      res.end(`Permission to ${this.fullName(repo)}.git denied to the integration.\n`);
      return;
    }
    if (pushing) {
      // Stricter than GitHub, to hold Tether to what it promises: a push must come with a token
      // minted for this one repository with contents: write and nothing else that writes.
      const writes = Object.entries(token.permissions)
        .filter(([k, v]) => v === "write" && k !== "contents" && k !== "workflows")
        .map(([k]) => k);
      const scoped =
        token.repoIds !== null && token.repoIds.length === 1 && token.repoIds[0] === repo.id;
      if (token.permissions.contents !== "write" || !scoped || writes.length) {
        rec.status = 403;
        res.writeHead(403, { "content-type": "text/plain" });
        res.end(
          `Permission to ${this.fullName(repo)}.git denied: the stand-in takes pushes only with a token minted for this repository alone with contents: write (this one: ${scoped ? "scoped" : "not scoped"}, ${JSON.stringify(token.permissions)}).\n`,
        );
        return;
      }
    }
    const before =
      pushing && req.method === "POST" ? await listRefs(repo.bare, this.gitEnv()) : undefined;
    rec.status = await serveGitHttp(
      req,
      res,
      {
        projectRoot: this.reposDir,
        // Where the repository was made: a rename keeps its bare repository in place.
        pathInfo: `/${path.relative(this.reposDir, repo.bare)}${rest}`,
        queryString: url.search.replace(/^\?/, ""),
        remoteUser: "x-access-token",
        home: this.home,
        body,
        env: {
          FAKE_PROTECTED: [...repo.protectedBranches].join(" "),
          FAKE_SIGNED_BRANCHES: [...repo.signaturesRequired].join(" "),
          FAKE_SIGNED_COMMITS: [...repo.signedCommits].join(" "),
          FAKE_WORKFLOWS: token.permissions.workflows === "write" ? "1" : "0",
        },
      },
      this.children,
      // Recorded before the response ends: a test that asserts right after `git push` sees it.
      before ? () => this.recordPush(repo, before, token) : undefined,
    );
  }

  /** After a push: what moved, and the pull requests whose head branch it was. */
  private async recordPush(
    repo: RepoState,
    before: Map<string, string>,
    token: TokenState,
    via: "git" | "api" = "git",
  ) {
    const after = await listRefs(repo.bare, this.gitEnv());
    const names = new Set([...before.keys(), ...after.keys()]);
    for (const ref of names) {
      const a = before.get(ref) ?? null;
      const b = after.get(ref) ?? null;
      if (a === b) continue;
      this.pushes.push({
        repo: repoKey(this.fullName(repo)),
        ref,
        before: a,
        after: b,
        token: token.token,
        permissions: { ...token.permissions },
        repositories: token.repoIds
          ? token.repoIds.map((id) => {
              const r = [...this.repos.values()].find((x) => x.id === id);
              return r ? this.fullName(r) : String(id);
            })
          : null,
        via,
      });
      repo.pushedAt = this.now();
      if (b !== null) repo.commitDates.set(b, repo.pushedAt);
      if (!ref.startsWith("refs/heads/") || b === null) continue;
      const branch = ref.slice("refs/heads/".length);
      for (const issue of repo.issues.values()) {
        if (
          issue.pull &&
          !issue.pull.fork &&
          issue.pull.headRef === branch &&
          issue.state === "open"
        ) {
          issue.pull.headSha = b;
          issue.updatedAt = this.now();
          await updateRef(repo.bare, `refs/pull/${issue.number}/head`, b, this.gitEnv());
        }
      }
    }
  }

  // ---------------------------------------------------------------- REST routes

  private buildRoutes(): Route[] {
    const routes: Route[] = [];
    const add = (
      method: string,
      template: string,
      auth: Route["auth"],
      handle: Route["handle"],
    ) => {
      const names: string[] = [];
      const source = template.replace(/\{(\w+)\}/g, (_m, n: string) => {
        names.push(n);
        // Contents paths span segments; ids and numbers do not.
        if (n === "path") return "(.+)";
        if (/number|_id$|^id$/.test(n)) return "(\\d+)";
        return "([^/]+)";
      });
      routes.push({ method, template, pattern: new RegExp(`^${source}/?$`), names, auth, handle });
    };
    const repoOf = (ctx: RouteCtx) => ctx.repo as RepoState;

    add("GET", "/app", "jwt", () => ({ status: 200, body: this.appJson() }));
    add("GET", "/app/installations", "jwt", () => ({
      status: 200,
      body: [...this.installations.keys()].map((id) => this.installationJson(id)),
    }));
    add("GET", "/app/installations/{installation_id}", "jwt", (ctx) => {
      const id = Number(ctx.params.installation_id);
      return this.installations.has(id)
        ? { status: 200, body: this.installationJson(id) }
        : notFound();
    });
    add("POST", "/app/installations/{installation_id}/access_tokens", "jwt", (ctx) => {
      const id = Number(ctx.params.installation_id);
      if (!this.installations.has(id)) return notFound();
      let repoIds: number[] | null = null;
      const names = ctx.body.repositories;
      const ids = ctx.body.repository_ids;
      if (Array.isArray(names) || Array.isArray(ids)) {
        const inst = [...this.repos.values()].filter((r) => r.installationId === id);
        const byName = (n: unknown) =>
          inst.find((r) => String(n).toLowerCase() === r.name.toLowerCase());
        const byId = (rid: unknown) => inst.find((r) => r.id === rid);
        const asked = [
          ...(Array.isArray(names) ? names.map(byName) : []),
          ...(Array.isArray(ids) ? ids.map(byId) : []),
        ];
        const chosen = inst.filter((r) => asked.includes(r));
        // GitHub refuses the whole request when any one asked for is not the installation's
        // (another installation's, or no repository at all).
        if (chosen.length === 0 || asked.includes(undefined)) {
          return {
            status: 422,
            body: {
              message:
                "There is at least one repository that does not exist or is not accessible to the parent installation.",
              documentation_url: DOCS,
              status: "422",
            },
          };
        }
        repoIds = chosen.map((r) => r.id);
      }
      const granted = (this.installations.get(id) as InstallationState).permissions;
      let permissions: Record<string, string> | undefined;
      const asked = ctx.body.permissions;
      if (asked !== undefined && asked !== null) {
        if (typeof asked !== "object" || Array.isArray(asked))
          return invalid('"permissions" must be an object');
        permissions = {};
        for (const [k, v] of Object.entries(asked as Record<string, unknown>)) {
          const has = granted[k];
          // GitHub: a token may be narrower than the installation, never wider.
          if (!has || (v === "write" && has !== "write") || (v !== "read" && v !== "write"))
            return {
              status: 422,
              body: {
                message: "The permissions requested are not granted to this installation.",
                documentation_url: DOCS,
                status: "422",
              },
            };
          permissions[k] = String(v);
        }
        permissions.metadata ??= "read";
      }
      const t = this.issueToken(id, repoIds, permissions);
      const body: Json = {
        token: t.token,
        expires_at: iso(t.expiresAt),
        permissions: { ...t.permissions },
        repository_selection: repoIds ? "selected" : "all",
      };
      if (repoIds) {
        body.repositories = repoIds.map((rid) => {
          const r = [...this.repos.values()].find((x) => x.id === rid) as RepoState;
          return this.repoJson(this.fullName(r));
        });
      }
      return { status: 201, body };
    });
    add("GET", "/app/hook/deliveries", "jwt", (ctx) => {
      const perPage = Math.min(
        100,
        Math.max(1, Number.parseInt(ctx.query.per_page ?? "", 10) || 30),
      );
      const { items, next } = this.deliveryLog.page(perPage, ctx.query.cursor);
      const headers: Record<string, string> = {};
      if (next) {
        headers.link = `<${this.apiUrl}/app/hook/deliveries?per_page=${perPage}&cursor=${next}>; rel="next"`;
      }
      return { status: 200, body: items, headers };
    });
    add("POST", "/app/hook/deliveries/{delivery_id}/attempts", "jwt", (ctx) =>
      this.deliveryLog.redeliver(Number(ctx.params.delivery_id))
        ? { status: 202, body: {} }
        : notFound(),
    );
    add("GET", "/repos/{owner}/{repo}/installation", "jwt", (ctx) => {
      const r = repoOf(ctx);
      return r.installationId === null
        ? notFound()
        : { status: 200, body: this.installationJson(r.installationId) };
    });
    add("GET", "/installation/repositories", "token", (ctx) => {
      const t = ctx.token as TokenState;
      const visible = [...this.repos.values()].filter((r) => this.tokenSees(t, r));
      return {
        status: 200,
        body: {
          total_count: visible.length,
          repository_selection: t.repoIds ? "selected" : "all",
          repositories: visible.map((r) => this.repoJson(this.fullName(r))),
        },
      };
    });
    add("GET", "/repos/{owner}/{repo}", "token", (ctx) => ({
      status: 200,
      body: this.repoJson(this.fullName(repoOf(ctx))),
    }));
    add("GET", "/repos/{owner}/{repo}/issues/{issue_number}", "token", (ctx) => {
      const r = repoOf(ctx);
      const n = Number(ctx.params.issue_number);
      return r.issues.has(n)
        ? { status: 200, body: this.issueJson(this.fullName(r), n) }
        : notFound();
    });
    // Opened by the app (a `title:` schedule's first run, #41): the installation's bot is its author.
    add("POST", "/repos/{owner}/{repo}/issues", "token", (ctx) => {
      const r = repoOf(ctx);
      const { title, body, labels } = ctx.body;
      if (typeof title !== "string" || title.trim() === "")
        return invalid('"title" wasn\'t supplied.');
      if (body !== undefined && body !== null && typeof body !== "string")
        return invalid('"body" must be a string');
      const issue = this.newIssue(r, {
        title,
        body: typeof body === "string" ? body : null,
        user: this.botLogin(),
        ...(Array.isArray(labels) ? { labels: labels.map(String) } : {}),
      });
      const json = this.issueJson(this.fullName(r), issue.number);
      return { status: 201, body: json, headers: { location: String(json.url) } };
    });
    add("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "token", (ctx) => {
      const r = repoOf(ctx);
      const n = Number(ctx.params.issue_number);
      if (!r.issues.has(n)) return notFound();
      const since = ctx.query.since ? Date.parse(ctx.query.since) : Number.NaN;
      const all = this.liveComments(r, n)
        .filter((c) => Number.isNaN(since) || c.updatedAt.getTime() >= since)
        .map((c) => this.commentJson(c.id));
      return this.paginate(all, ctx);
    });
    add("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "token", (ctx) => {
      const r = repoOf(ctx);
      const issue = r.issues.get(Number(ctx.params.issue_number));
      if (!issue) return notFound();
      if (typeof ctx.body.body !== "string") return invalid('"body" wasn\'t supplied.');
      if (ctx.body.body.length > 65_536) {
        return unprocessable("Body is too long (maximum is 65536 characters)");
      }
      const c = this.newComment(r, issue, this.botLogin(), ctx.body.body);
      const json = this.commentJson(c.id);
      return { status: 201, body: json, headers: { location: String(json.url) } };
    });
    const commentIn = (ctx: RouteCtx): CommentState | undefined => {
      const c = this.commentsById.get(Number(ctx.params.comment_id));
      return c && !c.deleted && c.repoId === repoOf(ctx).id ? c : undefined;
    };
    add("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "token", (ctx) => {
      const c = commentIn(ctx);
      return c ? { status: 200, body: this.commentJson(c.id) } : notFound();
    });
    add("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "token", (ctx) => {
      const c = commentIn(ctx);
      if (!c) return notFound();
      if (typeof ctx.body.body !== "string") return invalid('"body" wasn\'t supplied.');
      if (ctx.body.body.length > 65_536) {
        return unprocessable("Body is too long (maximum is 65536 characters)");
      }
      c.body = ctx.body.body;
      c.updatedAt = this.now();
      return { status: 200, body: this.commentJson(c.id) };
    });
    add("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "token", (ctx) => {
      const c = commentIn(ctx);
      if (!c) return notFound();
      c.deleted = true;
      return { status: 204 };
    });
    const react = (list: ReactionState[], ctx: RouteCtx): Reply => {
      const content = ctx.body.content;
      if (!REACTION_CONTENTS.includes(content as ReactionContent)) {
        return invalid(`"content" must be one of ${REACTION_CONTENTS.join(", ")}`);
      }
      const user = this.botLogin();
      const existing = list.find((x) => x.user === user && x.content === content);
      const reaction = existing ?? {
        id: ++this.ids.reaction,
        user,
        content: content as ReactionContent,
        createdAt: this.now(),
      };
      if (!existing) list.push(reaction);
      return {
        status: existing ? 200 : 201,
        body: reactionJson(reaction.id, this.userJson(user), reaction.content, reaction.createdAt),
      };
    };
    add("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", "token", (ctx) => {
      const c = commentIn(ctx);
      return c ? react(c.reactions, ctx) : notFound();
    });
    add("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", "token", (ctx) => {
      const c = commentIn(ctx);
      if (!c) return notFound();
      return this.paginate(
        c.reactions.map((x) => reactionJson(x.id, this.userJson(x.user), x.content, x.createdAt)),
        ctx,
      );
    });
    add("POST", "/repos/{owner}/{repo}/issues/{issue_number}/reactions", "token", (ctx) => {
      const issue = repoOf(ctx).issues.get(Number(ctx.params.issue_number));
      return issue ? react(issue.reactions, ctx) : notFound();
    });
    add("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/comments", "token", (ctx) => {
      const pull = repoOf(ctx).issues.get(Number(ctx.params.pull_number))?.pull;
      if (!pull) return notFound();
      // `direction` only counts with `sort`, as on GitHub; both sorts agree here (no edits).
      const desc = ctx.query.sort !== undefined && ctx.query.direction === "desc";
      return this.paginate(desc ? [...pull.reviewComments].reverse() : pull.reviewComments, ctx);
    });
    const reviewCommentIn = (ctx: RouteCtx): Json | undefined => {
      const id = Number(ctx.params.comment_id);
      for (const issue of repoOf(ctx).issues.values()) {
        const c = issue.pull?.reviewComments.find((x) => x.id === id);
        if (c) return c;
      }
      return undefined;
    };
    add("GET", "/repos/{owner}/{repo}/pulls/comments/{comment_id}", "token", (ctx) => {
      const c = reviewCommentIn(ctx);
      return c ? { status: 200, body: c } : notFound();
    });
    add("POST", "/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions", "token", (ctx) => {
      const c = reviewCommentIn(ctx);
      if (!c) return notFound();
      const id = c.id as number;
      const list = this.reviewReactions.get(id) ?? [];
      this.reviewReactions.set(id, list);
      const reply = react(list, ctx);
      c.reactions = reactionsSummary(
        `${String(c.url)}/reactions`,
        list.map((x) => x.content),
      );
      return reply;
    });
    add("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "token", (ctx) => {
      const pull = repoOf(ctx).issues.get(Number(ctx.params.pull_number))?.pull;
      return pull ? this.paginate(pull.reviews, ctx) : notFound();
    });
    add("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files", "token", async (ctx) => {
      const r = repoOf(ctx);
      const issue = r.issues.get(Number(ctx.params.pull_number));
      if (!issue?.pull) return notFound();
      const full = this.fullName(r);
      const files = (await this.pullDiff(r, issue.pull)).map((f) => ({
        sha: f.sha,
        filename: f.filename,
        status: f.status,
        additions: f.additions,
        deletions: f.deletions,
        changes: f.additions + f.deletions,
        blob_url: `${this.url}/${full}/blob/${issue.pull!.headSha}/${f.filename}`,
        raw_url: `${this.url}/${full}/raw/${issue.pull!.headSha}/${f.filename}`,
        contents_url: `${this.apiUrl}/repos/${full}/contents/${f.filename}?ref=${issue.pull!.headSha}`,
        ...(f.patch !== undefined ? { patch: f.patch } : {}),
        ...(f.previousFilename ? { previous_filename: f.previousFilename } : {}),
      }));
      return this.paginate(files, ctx);
    });
    add("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "token", async (ctx) => {
      const r = repoOf(ctx);
      const n = Number(ctx.params.pull_number);
      const pull = r.issues.get(n)?.pull;
      if (!pull) return notFound();
      const { body, event, commit_id: commitId, comments } = ctx.body;
      const states: Record<string, "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED"> = {
        APPROVE: "APPROVED",
        REQUEST_CHANGES: "CHANGES_REQUESTED",
        COMMENT: "COMMENTED",
      };
      // A review without an event stays PENDING (a draft); Tether never leaves one.
      if (typeof event !== "string" || !states[event])
        return invalid('"event" must be one of APPROVE, REQUEST_CHANGES, COMMENT.');
      if (body !== undefined && typeof body !== "string")
        return invalid('"body" must be a string.');
      const list = Array.isArray(comments) ? (comments as Json[]) : [];
      if (event !== "APPROVE" && !String(body ?? "").trim())
        return {
          status: 422,
          body: {
            message: "Unprocessable Entity",
            errors: [
              `Review Can not ${event === "COMMENT" ? "comment" : "request changes"} without a body`,
            ],
            documentation_url: DOCS,
            status: "422",
          },
        };
      // Each comment's lines must be lines of the diff on its side, or GitHub refuses the
      // whole review.
      const diff = await this.pullDiff(r, pull);
      for (const c of list) {
        const f = diff.find((d) => d.filename === c.path);
        const side = c.side === "LEFT" ? "LEFT" : "RIGHT";
        const last = Number(c.line);
        const first =
          c.start_line === undefined || c.start_line === null ? last : Number(c.start_line);
        const on = f ? diffLines(f.patch ?? "")[side] : new Set<number>();
        const ok =
          typeof c.body === "string" &&
          Number.isInteger(last) &&
          Number.isInteger(first) &&
          first <= last &&
          Array.from({ length: last - first + 1 }, (_, i) => first + i).every((l) => on.has(l));
        if (!ok)
          return {
            status: 422,
            body: {
              message: "Unprocessable Entity",
              errors: ["Line could not be resolved"],
              documentation_url: DOCS,
              status: "422",
            },
          };
      }
      const review = reviewJson(this.bases(), this.fullName(r), {
        id: ++this.ids.comment,
        pullNumber: n,
        user: this.userJson(this.botLogin()),
        body: String(body ?? ""),
        state: states[event]!,
        commitId: typeof commitId === "string" ? commitId : pull.headSha,
        submittedAt: this.now(),
      });
      pull.reviews.push(review);
      for (const c of list) {
        pull.reviewComments.push(
          reviewCommentJson(this.bases(), this.fullName(r), {
            id: ++this.ids.comment,
            reviewId: review.id as number,
            pullNumber: n,
            user: this.userJson(this.botLogin()),
            body: String(c.body),
            path: String(c.path),
            line: Number(c.line),
            startLine: c.start_line === undefined ? null : Number(c.start_line),
            side: c.side === "LEFT" ? "LEFT" : "RIGHT",
            commitId: review.commit_id as string,
            createdAt: this.now(),
          }),
        );
      }
      return { status: 200, body: review };
    });
    add(
      "GET",
      "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments",
      "token",
      (ctx) => {
        const pull = repoOf(ctx).issues.get(Number(ctx.params.pull_number))?.pull;
        const id = Number(ctx.params.review_id);
        if (!pull?.reviews.some((r) => r.id === id)) return notFound();
        return this.paginate(
          pull.reviewComments.filter((c) => c.pull_request_review_id === id),
          ctx,
        );
      },
    );
    add("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", "token", async (ctx) => {
      const r = repoOf(ctx);
      const n = Number(ctx.params.pull_number);
      const issue = r.issues.get(n);
      if (!issue?.pull) return notFound();
      const json = this.pullJson(this.fullName(r), n);
      const baseSha =
        (await refSha(r.bare, `refs/heads/${issue.pull.baseRef}`, this.gitEnv())) ?? "";
      (json.base as Json).sha = baseSha;
      return { status: 200, body: json };
    });
    add("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission", "token", (ctx) => {
      const r = repoOf(ctx);
      const login = this.user(ctx.params.username ?? "").login;
      const role = this.permissionOf(r, login);
      // `permission` is the legacy four-level view; `role_name` the actual role.
      const legacy = role === "maintain" ? "write" : role === "triage" ? "read" : role;
      const rank = ["none", "read", "triage", "write", "maintain", "admin"].indexOf(role);
      return {
        status: 200,
        body: {
          permission: legacy,
          role_name: role === "none" ? "none" : role,
          user: {
            ...this.userJson(login),
            permissions: {
              admin: rank >= 5,
              maintain: rank >= 4,
              push: rank >= 3,
              triage: rank >= 2,
              pull: rank >= 1,
            },
            role_name: role,
          },
        },
      };
    });
    add("GET", "/repos/{owner}/{repo}/contents/{path}", "token", async (ctx) => {
      const r = repoOf(ctx);
      const ref = ctx.query.ref || r.defaultBranch;
      const filePath = ctx.params.path ?? "";
      const found = await readPath(r.bare, ref, filePath, this.gitEnv());
      if (!found) return notFound();
      const full = this.fullName(r);
      const entryJson = (e: {
        type: "file" | "dir";
        name: string;
        path: string;
        sha: string;
        size: number;
      }) => {
        const self = `${this.apiUrl}/repos/${full}/contents/${e.path}?ref=${ref}`;
        const html = `${this.url}/${full}/${e.type === "dir" ? "tree" : "blob"}/${ref}/${e.path}`;
        const git = `${this.apiUrl}/repos/${full}/git/${e.type === "dir" ? "trees" : "blobs"}/${e.sha}`;
        return {
          type: e.type,
          name: e.name,
          path: e.path,
          sha: e.sha,
          size: e.size,
          url: self,
          html_url: html,
          git_url: git,
          download_url: e.type === "file" ? `${this.url}/${full}/raw/${ref}/${e.path}` : null,
          _links: { self, git, html },
        };
      };
      if (found.type === "dir") {
        // A directory comes back as a JSON list even when raw was asked for (Probot's config
        // plugin recognises a directory by exactly that).
        return { status: 200, body: found.entries.map(entryJson) };
      }
      if (/raw/.test(ctx.accept)) {
        return {
          status: 200,
          raw: { contentType: "text/plain; charset=utf-8", data: found.content },
        };
      }
      const name = filePath.split("/").pop() ?? filePath;
      return {
        status: 200,
        body: {
          ...entryJson({ type: "file", name, path: filePath, sha: found.sha, size: found.size }),
          encoding: "base64",
          content: (found.content.toString("base64").match(/.{1,60}/g) ?? []).join("\n") + "\n",
        },
      };
    });
    add("DELETE", "/installation/token", "token", (ctx) => {
      (ctx.token as TokenState).revoked = true;
      return { status: 204 };
    });
    add("GET", "/users/{username}", "token", (ctx) => ({
      status: 200,
      // A public user: the summary plus the profile GitHub's description requires.
      body: {
        ...this.userJson(ctx.params.username ?? ""),
        name: null,
        company: null,
        blog: null,
        location: null,
        email: null,
        hireable: null,
        bio: null,
        public_repos: 0,
        public_gists: 0,
        followers: 0,
        following: 0,
        created_at: iso(new Date(0)),
        updated_at: iso(new Date(0)),
      },
    }));
    add("GET", "/repos/{owner}/{repo}/branches/{branch}", "token", async (ctx) => {
      const r = repoOf(ctx);
      const name = ctx.params.branch ?? "";
      const sha = await refSha(r.bare, `refs/heads/${name}`, this.gitEnv());
      if (!sha)
        return {
          status: 404,
          body: { message: "Branch not found", documentation_url: DOCS, status: "404" },
        };
      const full = this.fullName(r);
      return {
        status: 200,
        body: {
          name,
          // Dated by the commit, not the repository's last push: pushing one branch does not
          // change another's answer (nor its ETag).
          commit: commitJson(this.bases(), full, sha, r.commitDates.get(sha) ?? r.createdAt),
          _links: {
            self: `${this.apiUrl}/repos/${full}/branches/${name}`,
            html: `${this.url}/${full}/tree/${name}`,
          },
          protected: r.protectedBranches.has(name),
          protection: { enabled: r.protectedBranches.has(name) },
          protection_url: `${this.apiUrl}/repos/${full}/branches/${name}/protection`,
        },
      };
    });
    // The Git Data API (fake-github-gitdata.ts): real objects in the bare repository.
    const gitUrl = (r: RepoState, kind: string, sha: string) =>
      `${this.apiUrl}/repos/${this.fullName(r)}/git/${kind}/${sha}`;
    const gitCommitJson = async (r: RepoState, sha: string): Promise<Json | undefined> => {
      const c = await readCommit(r.bare, this.gitEnv(), sha);
      if (!c) return undefined;
      const signed = r.signedCommits.has(sha);
      const person = (p: { name: string; email: string; date: Date }) => ({
        name: p.name,
        email: p.email,
        date: iso(p.date),
      });
      return {
        sha,
        node_id: nodeId("Commit", Number.parseInt(sha.slice(0, 8), 16) || 0),
        url: gitUrl(r, "commits", sha),
        html_url: `${this.url}/${this.fullName(r)}/commit/${sha}`,
        author: person(c.author),
        committer: person(c.committer),
        tree: { sha: c.tree, url: gitUrl(r, "trees", c.tree) },
        message: c.message.replace(/\n$/, ""),
        parents: c.parents.map((p) => ({
          sha: p,
          url: gitUrl(r, "commits", p),
          html_url: `${this.url}/${this.fullName(r)}/commit/${p}`,
        })),
        verification: signed
          ? {
              verified: true,
              reason: "valid",
              signature: "-----BEGIN PGP SIGNATURE-----\n(stand-in)\n-----END PGP SIGNATURE-----",
              payload: `tree ${c.tree}\n`,
              verified_at: iso(c.committer.date),
            }
          : {
              verified: false,
              reason: "unsigned",
              signature: null,
              payload: null,
              verified_at: null,
            },
      };
    };
    const refJson = (r: RepoState, ref: string, sha: string) => ({
      ref,
      node_id: nodeId("Ref", sha.length),
      url: `${this.apiUrl}/repos/${this.fullName(r)}/git/${ref}`,
      object: { type: "commit", sha, url: gitUrl(r, "commits", sha) },
    });
    add("POST", "/repos/{owner}/{repo}/git/blobs", "token", async (ctx) => {
      const r = repoOf(ctx);
      const { content, encoding } = ctx.body;
      if (typeof content !== "string") return unprocessable("content is not a string");
      if (encoding !== undefined && encoding !== "utf-8" && encoding !== "base64")
        return unprocessable(`encoding ${JSON.stringify(encoding)} is not supported`);
      const data = Buffer.from(content, encoding === "base64" ? "base64" : "utf8");
      const sha = await writeBlob(r.bare, this.gitEnv(), data);
      return { status: 201, body: { url: gitUrl(r, "blobs", sha), sha } };
    });
    add("POST", "/repos/{owner}/{repo}/git/trees", "token", async (ctx) => {
      const r = repoOf(ctx);
      const { tree, base_tree: base } = ctx.body;
      if (!Array.isArray(tree)) return unprocessable("tree is not an array");
      const made = await writeTree(
        r.bare,
        this.gitEnv(),
        typeof base === "string" ? base : undefined,
        tree as TreeEntryIn[],
      );
      if (typeof made !== "string") return unprocessable(made.error);
      const entries = await treeEntries(r.bare, this.gitEnv(), made);
      return {
        status: 201,
        body: {
          sha: made,
          url: gitUrl(r, "trees", made),
          truncated: false,
          tree: entries.map((e) => ({
            ...e,
            url: gitUrl(
              r,
              e.type === "tree" ? "trees" : e.type === "blob" ? "blobs" : "commits",
              e.sha,
            ),
          })),
        },
      };
    });
    add("POST", "/repos/{owner}/{repo}/git/commits", "token", async (ctx) => {
      const r = repoOf(ctx);
      const { message, tree, parents, author, committer, signature } = ctx.body;
      if (typeof message !== "string" || typeof tree !== "string")
        return unprocessable("message and tree are required");
      if (!(await objectIs(r.bare, this.gitEnv(), tree, "tree")))
        return unprocessable("Tree SHA does not exist");
      const ps = Array.isArray(parents) ? parents.map(String) : [];
      for (const p of ps)
        if (!(await objectIs(r.bare, this.gitEnv(), p, "commit")))
          return unprocessable("Parent SHA does not exist or is not a commit object");
      // No author or committer given: GitHub writes the token's own account (the app's bot)
      // and signs the commit.
      const bot = this.botLogin();
      const who = (given: unknown) => {
        const g = given as { name?: string; email?: string } | undefined;
        return g?.name && g.email
          ? { name: g.name, email: g.email, date: this.now() }
          : {
              name: bot,
              email: `${this.userJson(bot).id as number}+${bot}@users.noreply.${new URL(this.url).hostname}`,
              date: this.now(),
            };
      };
      const sha = await writeCommit(r.bare, this.gitEnv(), {
        tree,
        parents: ps,
        message,
        author: who(author),
        committer: who(committer ?? author),
      });
      if (author === undefined && committer === undefined && signature === undefined)
        r.signedCommits.add(sha);
      r.commitDates.set(sha, this.now());
      return { status: 201, body: (await gitCommitJson(r, sha))! };
    });
    add("GET", "/repos/{owner}/{repo}/git/commits/{commit_sha}", "token", async (ctx) => {
      const body = await gitCommitJson(repoOf(ctx), ctx.params.commit_sha ?? "");
      return body ? { status: 200, body } : notFound();
    });
    const moveRef = async (
      ctx: RouteCtx,
      ref: string,
      sha: string,
      o: { create: boolean; force: boolean },
    ): Promise<Reply> => {
      const r = repoOf(ctx);
      if (!/^refs\/heads\/./.test(ref) || !isSafeRefName(ref))
        return unprocessable("Reference name is invalid");
      if (!(await objectIs(r.bare, this.gitEnv(), sha, "commit")))
        return unprocessable("Object does not exist");
      const before = await listRefs(r.bare, this.gitEnv());
      const old = before.get(ref);
      if (o.create && old) return unprocessable("Reference already exists");
      if (!o.create && !old) return unprocessable("Reference does not exist");
      if (old && !o.force) {
        if (!(await isAncestor(r.bare, this.gitEnv(), old, sha)))
          return unprocessable("Update is not a fast forward");
      }
      const branch = ref.slice("refs/heads/".length);
      if (r.protectedBranches.has(branch))
        return unprocessable(`Protected branch update failed for ${ref}.`);
      if (r.signaturesRequired.has(branch)) {
        const news = await newCommits(r.bare, this.gitEnv(), sha, old);
        if (news.some((c) => !r.signedCommits.has(c)))
          return unprocessable(
            "Repository rule violations found\n\nCommits must have verified signatures.\n\n",
          );
      }
      await updateRef(r.bare, ref, sha, this.gitEnv());
      await this.recordPush(r, before, ctx.token as TokenState, "api");
      return { status: o.create ? 201 : 200, body: refJson(r, ref, sha) };
    };
    add("POST", "/repos/{owner}/{repo}/git/refs", "token", (ctx) =>
      moveRef(ctx, String(ctx.body.ref ?? ""), String(ctx.body.sha ?? ""), {
        create: true,
        force: false,
      }),
    );
    add("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}", "token", (ctx) =>
      moveRef(ctx, `refs/${ctx.params.ref ?? ""}`, String(ctx.body.sha ?? ""), {
        create: false,
        force: ctx.body.force === true,
      }),
    );
    add("GET", "/repos/{owner}/{repo}/rules/branches/{branch}", "token", (ctx) => {
      const r = repoOf(ctx);
      const branch = ctx.params.branch ?? "";
      const rules = r.signaturesRequired.has(branch)
        ? [
            {
              type: "required_signatures",
              ruleset_source_type: "Repository",
              ruleset_source: this.fullName(r),
              ruleset_id: 1,
            },
          ]
        : [];
      return this.paginate(rules, ctx);
    });
    add("GET", "/repos/{owner}/{repo}/pulls", "token", (ctx) => {
      const r = repoOf(ctx);
      const state = ctx.query.state ?? "open";
      const head = ctx.query.head;
      let list = [...r.issues.values()].filter((i) => i.pull);
      if (state !== "all") list = list.filter((i) => i.state === state);
      if (head) {
        const [owner, ...rest] = head.split(":");
        const ref = rest.join(":");
        list = list.filter(
          (i) =>
            i.pull!.headRef === ref &&
            (i.pull!.fork ?? this.fullName(r)).split("/")[0]!.toLowerCase() ===
              owner!.toLowerCase(),
        );
      }
      const desc = ctx.query.direction !== "asc";
      list.sort((a, b) => (desc ? b.number - a.number : a.number - b.number));
      return this.paginate(
        list.map((i) => this.pullJson(this.fullName(r), i.number)),
        ctx,
      );
    });
    add("POST", "/repos/{owner}/{repo}/pulls", "token", async (ctx) => {
      const r = repoOf(ctx);
      const { title, head, base, body, draft } = ctx.body;
      if (typeof title !== "string" || typeof head !== "string" || typeof base !== "string")
        return invalid('"title", "head" and "base" are required.');
      const headRef = head.includes(":") ? head.split(":").slice(1).join(":") : head;
      const headSha = await refSha(r.bare, `refs/heads/${headRef}`, this.gitEnv());
      const baseSha = await refSha(r.bare, `refs/heads/${base}`, this.gitEnv());
      const problem = (field: string, message: string): Reply => ({
        status: 422,
        body: {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", field, code: "invalid", message }],
          documentation_url: DOCS,
          status: "422",
        },
      });
      if (!headSha) return problem("head", "head invalid");
      if (!baseSha) return problem("base", "base invalid");
      const open = [...r.issues.values()].find(
        (i) => i.pull && !i.pull.fork && i.pull.headRef === headRef && i.state === "open",
      );
      if (open)
        return {
          status: 422,
          body: {
            message: "Validation Failed",
            errors: [
              {
                resource: "PullRequest",
                code: "custom",
                message: `A pull request already exists for ${r.owner}:${headRef}.`,
              },
            ],
            documentation_url: DOCS,
            status: "422",
          },
        };
      if (headSha === baseSha) return problem("head", `No commits between ${base} and ${headRef}`);
      if (draft === true && r.private && (r.plan === "free" || r.plan === "pro"))
        return {
          status: 422,
          body: {
            message: "Validation Failed",
            errors: [
              {
                resource: "PullRequest",
                code: "custom",
                message: "Draft pull requests are not supported in this repository.",
              },
            ],
            documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
            status: "422",
          },
        };
      const issue = this.newIssue(r, {
        title,
        body: typeof body === "string" ? body : null,
        user: this.botLogin(),
      });
      issue.pull = {
        headRef,
        headSha,
        baseRef: base,
        draft: draft === true,
        reviewComments: [],
        reviews: [],
      };
      await updateRef(r.bare, `refs/pull/${issue.number}/head`, headSha, this.gitEnv());
      const json = this.pullJson(this.fullName(r), issue.number);
      return { status: 201, body: json, headers: { location: String(json.url) } };
    });

    // Checks and Actions (fake-github-checks.ts), as GitHub answers them.
    add("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs", "token", (ctx) => {
      const runs = this.checks.listForRef(
        this.fullName(repoOf(ctx)),
        ctx.params.ref ?? "",
        ctx.query,
      );
      const page = this.paginate(runs, ctx);
      return { ...page, body: { total_count: runs.length, check_runs: page.body } };
    });
    add("GET", "/repos/{owner}/{repo}/commits/{ref}/check-suites", "token", (ctx) => {
      const suites = this.checks.listSuitesForRef(this.fullName(repoOf(ctx)), ctx.params.ref ?? "");
      const page = this.paginate(suites, ctx);
      return { ...page, body: { total_count: suites.length, check_suites: page.body } };
    });
    add("GET", "/repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs", "token", (ctx) => {
      const runs = this.checks.listForSuite(
        this.fullName(repoOf(ctx)),
        Number(ctx.params.check_suite_id),
        ctx.query,
      );
      const page = this.paginate(runs, ctx);
      return { ...page, body: { total_count: runs.length, check_runs: page.body } };
    });
    add("GET", "/repos/{owner}/{repo}/actions/runs", "token", (ctx) => {
      const runs = this.checks.listWorkflowRuns(this.fullName(repoOf(ctx)), ctx.query);
      const page = this.paginate(runs, ctx);
      return { ...page, body: { total_count: runs.length, workflow_runs: page.body } };
    });
    add("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}", "token", (ctx) => {
      const run = this.checks.find(this.fullName(repoOf(ctx)), Number(ctx.params.check_run_id));
      return run ? { status: 200, body: this.checks.checkRunJson(run) } : notFound();
    });
    add("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", "token", (ctx) => {
      const run = this.checks.find(this.fullName(repoOf(ctx)), Number(ctx.params.check_run_id));
      if (!run) return notFound();
      return this.paginate(
        run.annotations.map((a) => this.checks.annotationJson(run, a)),
        ctx,
      );
    });
    add("GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs", "token", (ctx) => {
      const run = this.checks.find(this.fullName(repoOf(ctx)), Number(ctx.params.job_id));
      const to = run ? this.checks.logUrl(run) : null;
      // GitHub answers 302 to a short-lived storage URL; 404 for no such job (or a gone log).
      return to ? { status: 302, body: null, headers: { location: to } } : notFound();
    });
    return routes;
  }

  private paginate(items: Json[], ctx: RouteCtx): Reply {
    const perPage = Math.min(100, Math.max(1, Number.parseInt(ctx.query.per_page ?? "", 10) || 30));
    const page = Math.max(1, Number.parseInt(ctx.query.page ?? "", 10) || 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const link = (p: number) => {
      const u = new URL(`${this.url}${ctx.rec.path}`);
      for (const [k, v] of Object.entries(ctx.query)) u.searchParams.set(k, v);
      u.searchParams.set("per_page", String(perPage));
      u.searchParams.set("page", String(p));
      return u.toString();
    };
    const rels: string[] = [];
    if (page > 1) rels.push(`<${link(page - 1)}>; rel="prev"`);
    if (page < last) rels.push(`<${link(page + 1)}>; rel="next"`, `<${link(last)}>; rel="last"`);
    if (page > 1) rels.push(`<${link(1)}>; rel="first"`);
    return {
      status: 200,
      body: items.slice((page - 1) * perPage, page * perPage),
      headers: rels.length ? { link: rels.join(", ") } : {},
    };
  }
}

/** git smart HTTP paths: /<owner>/<repo>(.git)/info/refs, git-upload-pack, git-receive-pack. */
const GIT_PATH =
  /^\/([A-Za-z0-9-]+)\/([A-Za-z0-9._-]+?)(?:\.git)?(\/(?:info\/refs|git-upload-pack|git-receive-pack|HEAD))$/;

function repoKey(fullName: string): string {
  return fullName.toLowerCase();
}

/**
 * The lines of a file GitHub lets a review comment on, per side, from its patch: the stand-in's
 * own reading (not Tether's), so the two check each other.
 */
function diffLines(patch: string): { LEFT: Set<number>; RIGHT: Set<number> } {
  const out = { LEFT: new Set<number>(), RIGHT: new Set<number>() };
  let o = 0;
  let n = 0;
  for (const l of patch.split("\n")) {
    const h = /^@@ -(\d+)(?:,\d+)? \+(\d+)/.exec(l);
    if (h) [o, n] = [Number(h[1]), Number(h[2])];
    else if (l.startsWith("+")) out.RIGHT.add(n++);
    else if (l.startsWith("-")) out.LEFT.add(o++);
    else if (l.startsWith(" ")) {
      out.LEFT.add(o++);
      out.RIGHT.add(n++);
    }
  }
  return out;
}

/**
 * A GET's answer as GitHub gives it: with an ETag, which GitHub makes per token (an ETag another
 * token got does not match), and a Last-Modified where the resource has an `updated_at`. A
 * request whose If-None-Match names the ETag, or (without one) whose If-Modified-Since is no
 * older than Last-Modified, gets 304 Not Modified and no body, which GitHub does not count
 * against the rate limit.
 */
function conditional(req: IncomingMessage, rec: RecordedRequest, reply: Reply): Reply {
  if (reply.status !== 200) return reply;
  const text = reply.raw ? String(reply.raw.data) : JSON.stringify(reply.body ?? {});
  const etag = `W/"${createHash("sha256")
    .update(`${rec.token ?? ""}\n${text}`)
    .digest("hex")
    .slice(0, 40)}"`;
  const updatedAt = (reply.body as { updated_at?: unknown } | undefined)?.updated_at;
  const lastModified =
    !reply.raw && typeof updatedAt === "string" && !Number.isNaN(Date.parse(updatedAt))
      ? new Date(updatedAt).toUTCString()
      : undefined;
  const headers = {
    ...reply.headers,
    etag,
    ...(lastModified ? { "last-modified": lastModified } : {}),
  };
  const bare = (t: string) => t.trim().replace(/^W\//, "");
  const ifNoneMatch = req.headers["if-none-match"];
  const ifModifiedSince = req.headers["if-modified-since"];
  const unchanged =
    ifNoneMatch !== undefined
      ? ifNoneMatch.split(",").some((t) => t.trim() === "*" || bare(t) === bare(etag))
      : ifModifiedSince !== undefined &&
        lastModified !== undefined &&
        Date.parse(lastModified) <= Date.parse(ifModifiedSince);
  return unchanged ? { status: 304, headers } : { ...reply, headers };
}

function notFound(): Reply {
  return { status: 404, body: { message: "Not Found", documentation_url: DOCS, status: "404" } };
}

function invalid(message: string): Reply {
  return {
    status: 422,
    body: { message: `Invalid request.\n\n${message}`, documentation_url: DOCS, status: "422" },
  };
}

function unprocessable(message: string): Reply {
  return {
    status: 422,
    body: {
      message: "Validation Failed",
      errors: [{ resource: "IssueComment", code: "custom", field: "body", message }],
      documentation_url: DOCS,
      status: "422",
    },
  };
}

type Authorization =
  | { scheme: "token" | "bearer"; credential: string }
  | { scheme: "basic"; user: string; password: string };

function parseAuthorization(header: string | undefined): Authorization | undefined {
  if (!header) return undefined;
  const m = /^(\w+)\s+(\S+)\s*$/.exec(header);
  if (!m) return undefined;
  const scheme = (m[1] ?? "").toLowerCase();
  const value = m[2] ?? "";
  if (scheme === "token" || scheme === "bearer") return { scheme, credential: value };
  if (scheme === "basic") {
    const decoded = Buffer.from(value, "base64").toString("utf8");
    const i = decoded.indexOf(":");
    if (i < 0) return undefined;
    return { scheme, user: decoded.slice(0, i), password: decoded.slice(i + 1) };
  }
  return undefined;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY) throw new Error(`request body over ${MAX_BODY} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}
