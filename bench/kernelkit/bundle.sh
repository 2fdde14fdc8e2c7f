#!/usr/bin/env bash
# Prepares the KernelKit bundle for the GPU machine in the main checkout's ignored
# .device-bundle/kernelkit/ (the run tool sends the main checkout; name the bundle in `carry`):
#   lib/kernelkit/        KernelKit's source at a pinned commit (GPLv3; never committed here),
#                         from a git dir made by the search tool's fetch of
#                         github:adriaangraas/astra-kernelkit
#   lib/transforms3d/     Debian 12's pure-Python transforms3d, which KernelKit imports and the
#                         GPU machine lacks (its other needs, CuPy, NumPy, Jinja2 and tqdm, are
#                         there)
#   lib/KERNELKIT_COMMIT  the commit
#   *.py, device-run.sh   this folder's runner and the device script
#
#   bench/kernelkit/bundle.sh [--main DIR] [--kernelkit-git GITDIR] [--commit SHA]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
main_dir=/work/main
kernelkit_git=/work/.mirror/adriaangraas+astra-kernelkit/repo
commit=05b6ff9ec3bd23c001d69023d7b79b1d63a0644c  # main, release 1.0.0-alpha.2
while [ $# -gt 0 ]; do
  case "$1" in
    --main) main_dir=$2; shift 2 ;;
    --kernelkit-git) kernelkit_git=$2; shift 2 ;;
    --commit) commit=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bundle.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
dest="$main_dir/.device-bundle/kernelkit"
rm -rf "$dest"
mkdir -p "$dest/lib"
git --git-dir="$kernelkit_git" archive "$commit" kernelkit LICENSE.md | tar -x -C "$dest/lib"
echo "$commit" > "$dest/lib/KERNELKIT_COMMIT"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download python3-transforms3d >/dev/null 2>&1)
dpkg -x "$work"/python3-transforms3d_*.deb "$work/root"
cp -r "$work/root/usr/lib/python3/dist-packages/transforms3d" "$dest/lib/"
rm -rf "$dest/lib/transforms3d/tests"

cp "$here"/*.py "$here/device-run.sh" "$dest/"
du -sh "$dest"
echo
echo "run tool: carry [\".device-bundle/kernelkit\", \".device-bundle/<cuda_bench bundle>\"],"
echo "command:  .device-bundle/kernelkit/device-run.sh \\"
echo "            --cuda-bundle .device-bundle/<cuda_bench bundle>"
