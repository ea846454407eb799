/** Kept for tests that still import the fakes from here; they live in test/helpers/runner-fakes.ts. */
export { GatedAgent, fakeThread, fakeWorkspace } from "../../helpers/runner-fakes.js";
