# scripts/lib.sh - shared by the scripts: messages, the repository root,
# and the Python that has PyTorch (Debian's, not the first on PATH).
# shellcheck shell=bash

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Debian's python3-torch lives in /usr/bin/python3; another python3 may
# come first on PATH.
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
# shellcheck disable=SC2034 # used by the scripts that source this
PLUGIN_SO="$top/spank/.libs/dist_train.so"

say() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
die() { say "error: $*"; exit 1; }
step() { printf '\n==> %s\n' "$*" >&2; }

# For the benchmarks: "median, mean, min, max" of the millisecond figures given.
stats() {
    printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "median %d ms, mean %.1f ms, min %d ms, max %d ms", a[int((NR+1)/2)], s/NR, a[1], a[NR]}'
}

# The Slurm generation this system installs, from its Debian release: 22.05
# (Debian 12), 24.11 (Debian 13 "trixie") or 26.05 ("forky"); fails elsewhere.
slurm_generation_here() {
    local codename
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    case $codename in
    bookworm) echo 22.05 ;;
    trixie) echo 24.11 ;;
    forky) echo 26.05 ;;
    *) return 1 ;;
    esac
}
