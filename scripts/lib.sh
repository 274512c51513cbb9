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
# (with the clock, so that a log shows where a long run spends its time)
step() { printf '\n==> %s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# For the benchmarks: "median, mean, min, max" of the millisecond figures given.
stats() {
    printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "median %d ms, mean %.1f ms, min %d ms, max %d ms", a[int((NR+1)/2)], s/NR, a[1], a[NR]}'
}

# The Slurm generation this system installs, from its Debian release: 22.05
# (Debian 12), 24.11 (Debian 13 "trixie") or 26.05 ("forky"); fails elsewhere.
slurm_generation_here() {
    local codename
    # shellcheck source=/dev/null # the running system's, not ours
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    case $codename in
    bookworm) echo 22.05 ;;
    trixie) echo 24.11 ;;
    forky) echo 26.05 ;;
    *) return 1 ;;
    esac
}

# The Debian release whose Slurm is generation $1.
debian_suite_of() {
    case $1 in
    22.05) echo bookworm ;;
    24.11) echo trixie ;;
    26.05) echo forky ;;
    *) return 1 ;;
    esac
}

# The directory holding the release archives of pyxis and enroot that the
# container tests build (they are not part of this repository):
# $DIST_TRAIN_THIRDPARTY, else shared/thirdparty beside the checkout; fails
# when neither has both.
thirdparty_dir() {
    local d
    for d in ${DIST_TRAIN_THIRDPARTY:+"$DIST_TRAIN_THIRDPARTY"} "$top/../shared/thirdparty"; do
        if [[ -f $d/pyxis-0.9.1.tar.gz && -f $d/enroot-4.1.2.tar.gz ]]; then
            (cd "$d" && pwd)
            return 0
        fi
    done
    return 1
}

# The host's Debian mirror, from its apt configuration: the first URI that is
# not the security archive (deb822 .sources first, then sources.list).
host_mirror() {
    local uri
    uri=$(
        {
            cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk 'tolower($1) == "uris:" {for (i = 2; i <= NF; i++) print $i}'
            cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
                awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/ && $i !~ /=/) {print $i; break}}'
        } | grep -v security | head -n 1
    )
    [[ -n $uri ]] || die "no Debian mirror in /etc/apt/sources.list{,.d/*.sources}"
    echo "$uri"
}

# The host's own leniency for its archive (an archive snapshot whose Release
# files have expired) holds for the chroot's too: mmdebstrap --aptopt lines.
apt_leniency() {
    timeout 30 apt-config dump | sed -n 's/^\(Acquire::Check-\(Valid-Until\|Date\)\) "\(.*\)";$/--aptopt=\1 "\3"/p'
}

builder_version() { mmdebstrap --version 2>/dev/null | head -n 1; }

# need_commands CMD:PACKAGE...: apt-get install the packages of the commands
# that are missing.
need_commands() {
    local pair missing=()
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
    done
    ((${#missing[@]} == 0)) && return 0
    say "installing ${missing[*]}"
    timeout 600 apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
}
