// The agent-CLI contract for `codex`: the one suite, in a file of its own so rows run side by side.
import { contractSuite } from "../helpers/cli-contract-suite.js";

contractSuite("codex");
