/**
 * `/plan` then `/go` (#40, "a plan before acting"): the built app as a process, real Postgres,
 * the real Claude CLI in its sandbox against the fake Messages API, the GitHub stand-in. A plan
 * turn runs the CLI read-only and publishes nothing, even when the model asks to write; `/go`
 * resumes the same session (the plan is in the history the API receives) and its change lands
 * on the conversation's branch.
 */
import { describe, expect, it } from "vitest";
import { answerOf, fileAt, newIssue } from "../helpers/e2e-thread.js";
import { fileStack, REPO } from "../helpers/e2e-stack.js";
import { lastUserText, replies, type FakeRequest } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
    allowedTools: ["Bash"]
  careful:
    model: claude-sonnet-4-5
    allowedTools: ["Bash"]
    plan: always
`;

const { stack } = await fileStack({ config: CONFIG });

/** The task a comment made, once finished: a loaded machine gets minutes, not seconds. */
const finished = (commentId: number) => stack.finishedTask(commentId, 150_000);

/** The model tries to write two ways (a Write call, a shell redirect), then answers `plan`. */
function triesToWrite(plan: string) {
  return [
    replies.toolUse("Write", { file_path: "/workspace/PLAN_WRITE.md", content: "written\n" }),
    replies.toolUse("Bash", {
      command: "echo leaked > /workspace/viashell.txt",
      description: "Write a file",
    }),
    replies.text(plan),
  ];
}

/** Every text block of the assistant messages a request carried (its history). */
function assistantTexts(req: FakeRequest): string[] {
  return (req.body?.messages ?? [])
    .filter((m) => m.role === "assistant")
    .flatMap((m) =>
      typeof m.content === "string"
        ? [m.content]
        : m.content.map((b) => (typeof b.text === "string" ? b.text : "")),
    );
}

describe("/plan, then /go, in one session (real CLI)", { timeout: 300_000 }, () => {
  it("a plan turn writes nothing anywhere; /status says a plan waits; /go resumes it and publishes", async () => {
    const issue = newIssue(stack, "Add a cache");
    const branch = `tether/${issue}-tether`;
    const pushesBefore = stack.gh.pushes.length;
    stack.api.script(...triesToWrite("PLAN-7Q: 1. add src/cache.js 2. test it"));
    const planTask = await finished(await stack.comment(issue, "@tether /plan add a cache"));
    expect(planTask).toMatchObject({
      status: "succeeded",
      plan_turn: true,
      plan_request: "plan",
      publish_result: null,
    });
    // The CLI ran in plan mode, without the agent's allowed Bash.
    const planPrompt = stack.api
      .messageRequests()
      .map(lastUserText)
      .find((t) => t.includes("PLAN ONLY"));
    expect(planPrompt).toBeDefined();
    expect(stack.gh.pushes.length).toBe(pushesBefore);
    expect(await stack.gh.sha(REPO, branch)).toBeUndefined();
    const planAnswer = answerOf(stack, issue, planTask);
    expect(planAnswer).toContain("PLAN-7Q");
    expect(planAnswer).toContain("This is a plan");
    expect(planAnswer).toContain("📝 plan");

    // /status, answered at once by intake, says what the next turn will do with the plan.
    const before = stack.gh.comments(REPO, issue).length;
    await stack.comment(issue, "@tether /status");
    const deadline = Date.now() + 60_000;
    while (stack.gh.comments(REPO, issue).length === before + 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 150));
    const status = stack.gh.comments(REPO, issue).slice(before + 1);
    expect(status.map((c) => String(c.body)).join("\n")).toContain("a plan is waiting for `/go`");

    // `@tether go`: the same session, resumed, the plan in its history; the change lands.
    const sent = stack.api.messageRequests().length;
    stack.api.script(
      replies.toolUse("Write", {
        file_path: "/workspace/src/cache.js",
        content: "export const cache = new Map();\n",
      }),
      replies.text("Done: src/cache.js holds the cache."),
    );
    const goTask = await finished(await stack.comment(issue, "@tether go"));
    expect(goTask).toMatchObject({
      status: "succeeded",
      plan_turn: false,
      plan_request: "go",
      resume_decision: "resume",
      resume_session_id: planTask.session_id,
      publish_result: "published",
    });
    const goFirst = stack.api.messageRequests()[sent]!;
    expect(assistantTexts(goFirst).join("\n")).toContain("PLAN-7Q");
    expect(lastUserText(goFirst)).toContain("APPROVED");
    expect(fileAt(stack, `refs/heads/${branch}`, "src/cache.js")).toContain("new Map()");
    // Nothing the plan turn tried to write reached the branch.
    expect(fileAt(stack, `refs/heads/${branch}`, "PLAN_WRITE.md")).toBeUndefined();
    expect(fileAt(stack, `refs/heads/${branch}`, "viashell.txt")).toBeUndefined();
    expect(answerOf(stack, issue, goTask)).toContain("plan approved (/go)");
  });

  it("plan: always makes a conversation's first turn a plan; a follow-up without /go keeps planning", async () => {
    const issue = newIssue(stack, "Refactor the parser");
    stack.api.script(replies.text("PLAN-A: split parse() in two"));
    const first = await finished(await stack.comment(issue, "@careful refactor the parser"));
    expect(first).toMatchObject({ status: "succeeded", plan_turn: true, publish_result: null });
    expect(answerOf(stack, issue, first)).toContain("This is a plan");

    stack.api.script(...triesToWrite("PLAN-B: split it in three instead"));
    const second = await finished(await stack.comment(issue, "@careful make it three parts"));
    expect(second).toMatchObject({
      status: "succeeded",
      plan_turn: true,
      resume_decision: "resume",
      publish_result: null,
    });
    expect(await stack.gh.sha(REPO, `tether/${issue}-careful`)).toBeUndefined();
  });
});
