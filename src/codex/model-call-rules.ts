/**
 * What a call to the OpenAI Responses API may ask for through the egress proxy (#38): the rules
 * for Codex (src/sandbox/model-call-rules.ts says why; docs/security.md lists them).
 */
import {
  absentFields,
  contentBlocks,
  headerValues,
  jsonObject,
  list,
  obj,
  toolTypes,
  type ModelCallRules,
} from "../sandbox/model-call-rules.js";

/**
 * Tools Codex 0.169.0 runs itself: `function`, `custom` (apply_patch), `namespace` (an MCP
 * server's functions, line-comment turns) and `tool_search` with `execution: "client"`.
 */
const OPENAI_CLIENT_TOOLS = new Set(["function", "custom", "namespace", "tool_search"]);

/** `x-codex-beta-features` values Codex 0.169.0 sends; `openai-beta` it does not send at all. */
export const CODEX_BETA_FEATURES = ["remote_compaction_v2"] as const;

export const OPENAI_RULES: ModelCallRules = [
  jsonObject,
  absentFields({
    background: "a response run in the background, stored on the provider's servers",
    conversation: "a conversation stored on the provider's servers",
  }),
  {
    name: "previous_response_id",
    refuse: (call, ctx) => {
      const id = obj(call.body)?.previous_response_id;
      if (id === undefined || id === null) return null;
      return typeof id === "string" && ctx.ownResponseIds.has(id)
        ? null
        : `Tether's sandbox refused this model call: \`previous_response_id\` ${JSON.stringify(id).slice(0, 80)} is not a response of this turn's own calls`;
    },
  },
  toolTypes(
    (tool) => {
      const type = typeof tool.type === "string" ? tool.type : "";
      // A hosted tool search runs on the provider's side: only the client's is the CLI's.
      if (type === "tool_search" && tool.execution !== "client") return ["tool_search (hosted)"];
      return [type];
    },
    OPENAI_CLIENT_TOOLS,
    (tool) => (tool.type === "namespace" ? list(tool.tools) : []),
  ),
  contentBlocks(
    (body) => list(body.input),
    (block) => {
      if (block.type === "item_reference")
        return "an `item_reference` input item (an item stored on the provider's servers)";
      const url = block.image_url ?? block.file_url;
      if (typeof url === "string" && !url.startsWith("data:"))
        return `an ${String(block.type)} part whose URL the provider would fetch`;
      if (
        obj(url) &&
        typeof obj(url)!.url === "string" &&
        !String(obj(url)!.url).startsWith("data:")
      )
        return `an ${String(block.type)} part whose URL the provider would fetch`;
      if (typeof block.file_id === "string")
        return "a part naming a file of the account's Files API";
      return null;
    },
  ),
  headerValues("openai-beta", [], "the pinned Codex"),
  headerValues("x-codex-beta-features", CODEX_BETA_FEATURES, "the pinned Codex"),
];
