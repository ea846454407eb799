/**
 * What a call to the Gemini API may ask for through the egress proxy (#38): the rules for Gemini
 * CLI (src/sandbox/model-call-rules.ts says why; docs/security.md lists them).
 */
import {
  absentFields,
  contentBlocks,
  has,
  jsonObject,
  list,
  obj,
  snake,
  toolTypes,
  type ModelCallRules,
} from "../sandbox/model-call-rules.js";

/** A tool's fields the CLI sends (Gemini CLI 0.61.0): its own functions, in either spelling. */
const GEMINI_CLIENT_TOOLS = new Set(["function_declarations"]);

export const GEMINI_RULES: ModelCallRules = [
  jsonObject,
  absentFields({
    cachedContent: "a cached content stored on the provider's servers",
    cached_content: "a cached content stored on the provider's servers",
  }),
  // A Gemini tool is an object with one field per kind (`functionDeclarations`, `googleSearch`,
  // `urlContext`, `codeExecution`, …): each field is a type.
  toolTypes((tool) => Object.keys(tool).map(snake), GEMINI_CLIENT_TOOLS),
  contentBlocks(
    (body) => [
      ...list(body.contents),
      ...list(obj(body.systemInstruction ?? body.system_instruction)?.parts),
    ],
    (part) =>
      has(part, "fileData") || has(part, "file_data")
        ? "a `fileData` part (a file the provider would fetch, or one of the account's files)"
        : null,
  ),
];
