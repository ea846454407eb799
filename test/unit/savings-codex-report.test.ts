/**
 * The Codex arm of the savings benchmark reads a Responses API request in cache order: tools,
 * instructions, then the input items, a message cut into its content parts (its per-thread id
 * left out, as the model never reads it), any other item one block.
 */
import { describe, expect, it } from "vitest";
import { accountRequests } from "../../bench/savings-accounting.js";
import { responsesAsPrompt } from "../../bench/savings-codex-report.js";

const tools = [{ type: "function", name: "exec_command", parameters: { type: "object" } }];
const developer = (id: string) => ({
  type: "message",
  id,
  role: "developer",
  content: [{ type: "input_text", text: "sandbox and approval rules ".repeat(40) }],
});
const user = (id: string, text: string) => ({
  type: "message",
  id,
  role: "user",
  content: [{ type: "input_text", text }],
});

describe("responsesAsPrompt", () => {
  it("orders tools, instructions, then input items; a message's parts are its blocks", () => {
    const p = responsesAsPrompt({
      model: "gpt-5.5",
      tools,
      instructions: "You are Codex.",
      input: [
        developer("msg_a"),
        { type: "reasoning", id: "rs_1", summary: [] },
        user("msg_b", "hi"),
      ],
    });
    expect(p.system).toBe("You are Codex.");
    expect(p.tools).toEqual(tools);
    expect(p.messages!.map((m) => m.role)).toEqual(["developer", "reasoning", "user"]);
    expect(p.messages![0]!.content).toEqual(developer("x").content);
    expect(p.messages![1]!.content).toEqual([{ type: "reasoning", id: "rs_1", summary: [] }]);
    expect(responsesAsPrompt({ input: "plain" }).messages).toEqual([
      { role: "user", content: "plain" },
    ]);
  });

  it("two fresh threads share their prefix although Codex gives their messages other ids", () => {
    const fresh = (thread: string, prompt: string) =>
      responsesAsPrompt({
        model: "gpt-5.5",
        tools,
        instructions: "You are Codex.",
        input: [developer(`msg_${thread}_1`), user(`msg_${thread}_2`, prompt)],
      });
    const [, second] = accountRequests([fresh("a", "first"), fresh("b", "second")]);
    // Everything but the new prompt is read from cache.
    expect(second!.readBytes).toBe(second!.priorBytes);
    expect(second!.newMessageBytes).toBeGreaterThan(0);
    expect(second!.billedBytes).toBeCloseTo(second!.floorBytes);
  });
});
