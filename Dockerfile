# syntax=docker/dockerfile:1
#
# Tether in one image: the GitHub App, a runner, git and the Claude Code CLI.
#   docker build -t tether .
#   docker run --env-file .env -e DATABASE_URL=postgres://… -p 3000:3000 \
#     --security-opt seccomp=deploy/seccomp/tether-runner.json --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined \
#     -v tether-data:/data -v tether-claude:/home/node/.claude tether [all|web|runner|migrate]
# docker-compose.yml runs it with Postgres. test/repo/dockerfile.test.ts checks this file.
#
# Builds for linux/amd64 or linux/arm64: @anthropic-ai/claude-code (pinned in package.json) brings
# the Claude CLI's native binary for the build platform as an optional dependency.

ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY migrations ./migrations
# The Claude CLI is the native binary of the platform package package-lock.json pins (it comes
# with a devDependency, so it is copied out before the prune): the same binary the tests ran.
RUN npm run build \
  && cp "node_modules/@anthropic-ai/claude-code-linux-$(node -p process.arch)/claude" /app/claude \
  && /app/claude --version \
  && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
# git: the runner clones and fetches. ca-certificates: HTTPS to GitHub and the Claude API.
# tini: PID 1 that forwards SIGTERM to Tether and reaps the agent's orphaned processes.
# bubblewrap and socat: the agent's sandbox and its one way out (docs/security.md, "Security model"); the
# container needs --security-opt seccomp=deploy/seccomp/tether-runner.json (or unconfined),
# apparmor=unconfined and systempaths=unconfined for bubblewrap to make its namespaces
# (docker-compose.yml sets them).
RUN apt-get update \
  && apt-get install -y --no-install-recommends git ca-certificates tini bubblewrap socat \
  && rm -rf /var/lib/apt/lists/*
COPY --from=build /app/claude /usr/local/bin/claude
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# package.json makes dist/ ES modules; app.yml is the manifest for Probot's setup page.
COPY package.json app.yml ./
COPY migrations ./migrations

# The image's node user (uid 1000). Running as root, the CLI refuses bypassPermissions.
# /data holds the workspaces, the mirrors, the sandboxed sessions (/data/sessions) and an
# embedded PostgreSQL when DATABASE_URL is unset; /home/node/.claude is the CLI's session store
# when agents run unsandboxed (TETHER_SANDBOX=off). Both are volumes: a session can only be
# resumed where its file is.
RUN mkdir -p /data /home/node/.claude && chown node:node /data /home/node/.claude
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    TETHER_DATA_DIR=/data \
    TETHER_CLAUDE_PATH=/usr/local/bin/claude
VOLUME ["/data", "/home/node/.claude"]
USER node
EXPOSE 3000

# Process up, database reachable, runner heartbeating (see src/web/health.ts). Slim images have
# no curl; node's fetch does it. The start period covers migrations on a first start.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# The role comes from TETHER_ROLE, or as the container's command: `docker run tether runner`.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--enable-source-maps", "dist/src/main.js"]
