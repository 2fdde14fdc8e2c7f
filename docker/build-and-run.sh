#!/usr/bin/env bash
# Proves, on a machine without a container registry, that the image builds and that the compose
# stack runs a scan: builds a Debian 12 base image from Debian packages (debootstrap, then
# `tar | podman import`), builds docker/Dockerfile with podman on it, runs the binaries in the
# image, then the stack of docker/compose.yaml (podman-compose) and checks that the detector's
# scan was confirmed, the viewer saved slices and the server captured the scan. Each step says
# what it proved; the first that cannot run stops the script with the reason (docs/operations.md,
# "Deployment", records what this sandbox could and could not do).
#   docker/build-and-run.sh [--skip-stack | --stack-only]
# --stack-only runs the stack on the image built before (no rebuild after a change to the sources).
# Environment: MIRROR (Debian mirror, default http://deb.debian.org/debian), JOBS (build jobs,
# default 2), WORK (scratch directory, default /var/tmp/slicestream-docker), KEEP=1 keeps the
# stack's containers and volumes for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."

mirror=${MIRROR:-http://deb.debian.org/debian}
jobs=${JOBS:-2}
work=${WORK:-/var/tmp/slicestream-docker}
base=localhost/debian:bookworm
image=localhost/slicestream:latest
skip_stack=0
stack_only=0
[[ ${1:-} == --skip-stack ]] && skip_stack=1
[[ ${1:-} == --stack-only ]] && stack_only=1
mkdir -p "$work"

step() { echo; echo "==== $*"; }
proved() { echo "PROVED: $*"; }
blocked() { echo "BLOCKED: $*" >&2; exit 2; }

step "tools (Debian packages)"
need=()
for tool in podman:podman buildah:buildah debootstrap:debootstrap podman-compose:podman-compose; do
  command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
done
# podman-compose resolves service names through CNI's dnsname plugin.
[[ -e /usr/lib/cni/dnsname ]] || need+=(golang-github-containernetworking-plugin-dnsname)
if ((${#need[@]})); then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${need[@]}" uidmap fuse-overlayfs slirp4netns
fi
podman --version
podman info --format '{{.Host.CgroupsVersion}} cgroups, {{.Store.GraphDriverName}} storage, {{.Host.NetworkBackend}} network' || true

step "base image $base from Debian packages"
if podman image exists "$base"; then
  echo "$base exists (podman rmi $base to rebuild it)"
else
  mkdir -p "$work"
  rootfs=$work/rootfs
  if [[ ! -x $rootfs/usr/bin/apt-get ]]; then
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
      || { tail -20 "$work/debootstrap.log"; blocked "debootstrap from $mirror failed"; }
  fi
  # The image's apt: the same mirror, with updates and security (as debian:bookworm-slim has).
  security=${mirror%/debian}/debian-security
  cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
SOURCES
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" --numeric-owner -c . | podman import --change 'CMD ["/bin/bash"]' - "$base" \
    || blocked "podman import of the root file system failed"
fi
proved "a Debian 12 base image made from Debian packages: $(podman image inspect "$base" --format '{{.Id}}' | cut -c1-12)"

step "a container starts"
if ! podman run --rm "$base" true 2>"$work/run-error.txt"; then
  echo "with podman's defaults: $(cat "$work/run-error.txt")"
  echo "retrying with docker/sandbox-containers.conf (runc, explicit ulimits)"
  export CONTAINERS_CONF=$PWD/docker/sandbox-containers.conf
  podman run --rm "$base" true || blocked "no container can start here: $(cat "$work/run-error.txt")"
fi
proved "containers start${CONTAINERS_CONF:+ (with $CONTAINERS_CONF)}"

step "image $image (docker/Dockerfile: build stage, slim runtime stage)"
if ((stack_only)); then
  podman image exists "$image" || blocked "--stack-only needs $image: run without it first"
  echo "using $image built $(podman image inspect "$image" --format '{{.Created}}')"
else
  start=$(date +%s)
  nice -n 19 podman build --isolation chroot -f docker/Dockerfile --build-arg BASE="$base" \
    --build-arg JOBS="$jobs" -t "$image" . || blocked "podman build failed"
  echo "built in $(($(date +%s) - start)) s; runtime image $(podman image inspect "$image" --format '{{.Size}}') bytes"
  proved "the multi-stage image builds"
fi

step "the binaries in the image"
podman run --rm "$image" --version || blocked "podman run cannot start a container"
podman run --rm --entrypoint slicestream-ctl "$image" --help >/dev/null
podman run --rm --entrypoint slicestream-detector "$image" --help >/dev/null
proved "slicestream-server, slicestream-ctl and slicestream-detector run in the runtime image"

if ((skip_stack)); then exit 0; fi

step "the compose stack: server + simulated detector + viewer (docker/compose.yaml)"
export SLICESTREAM_IMAGE=$image
cd docker
podman-compose -p slicestream down -v >/dev/null 2>&1 || true
podman-compose -p slicestream up -d server viewer || blocked "podman-compose cannot start the stack"
for _ in $(seq 60); do
  podman exec slicestream_server_1 slicestream-ctl --timeout 1 status >/dev/null 2>&1 && break
  sleep 1
done
# Started detached and waited for: podman-compose 1.0.3's attached `up` ignores --no-deps and
# stays attached to the server, which never exits.
podman-compose -p slicestream up -d detector >/dev/null 2>&1 || true
podman container exists slicestream_detector_1 || blocked "podman-compose cannot start the detector"
detector_exit=$(podman wait slicestream_detector_1)
podman logs slicestream_detector_1 2>&1 | tee "$work/detector.log"
[[ $detector_exit == 0 ]] || blocked "the detector container failed (exit $detector_exit)"
grep -q "confirmed: the server ended scan" "$work/detector.log" \
  || blocked "the detector's scan was not confirmed by the server"
proved "the detector's scan reached the server in another container and was confirmed"
podman exec slicestream_server_1 slicestream-ctl capture status | tee "$work/capture.txt"
grep -q "files finished 1" "$work/capture.txt" || blocked "the scan was not captured"
podman logs slicestream_viewer_1 2>&1 | tail -5
# The viewer writes one folder per scan (scan_<id>/), each slice's latest image as a PNG.
viewer_files=$(podman run --rm -v slicestream_viewer:/v --entrypoint ls "$image" -R /v | grep -c png || true)
((viewer_files > 0)) || blocked "the viewer saved no slices"
proved "the viewer container saved $viewer_files PNG images of the scan's slices"
if [[ ${KEEP:-0} != 1 ]]; then podman-compose -p slicestream down -v >/dev/null; fi
echo
echo "build-and-run: the image builds and the compose stack ran a scan"
