#!/bin/bash
# chroot_key.sh - a test chroot is a pure function of its recipe: the key that
# scripts/slurm-chroot caches a tree under changes with every package list
# and with the code that builds a tree, and with nothing else; and a cached
# tree with a mount under it is never removed.  Works on a copy of the
# scripts, so the source tree (read-only under distcheck) is not touched.
#   chroot_key.sh    (make check sets TOP_SRCDIR; else the checkout above)
set -u

src=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v apt-config >/dev/null 2>&1 || { echo "SKIP: no apt-config (not Debian)"; exit 77; }

failed=0
work=$(mktemp -d) || exit 2
trap 'rm -rf --one-file-system -- "$work"' EXIT
fail() { echo "FAIL: $*"; failed=1; }
ok() { echo "ok: $*"; }

mkdir -p "$work/tree/scripts"
cp "$src"/scripts/{slurm-chroot,lib.sh,deps,packages-cluster.txt,packages-chroot.txt} "$work/tree/scripts/"
chroot_cmd=$work/tree/scripts/slurm-chroot
key() { "$chroot_cmd" key "${1:-24.11}"; }
# (each edit is made on a fresh copy of the originals)
restore() { cp "$src"/scripts/{slurm-chroot,deps,packages-cluster.txt,packages-chroot.txt} "$work/tree/scripts/"; }

base=$(key) || { echo "FAIL: slurm-chroot key 24.11 failed"; exit 1; }
[[ $base =~ ^[0-9a-f]{16}$ ]] || fail "the key is not 16 hex digits: '$base'"
if [[ $(key) == "$base" ]]; then ok "the key is the same twice: $base"; else fail "the key changed between two runs"; fi
if [[ $(key 26.05) != "$base" ]]; then ok "24.11 and 26.05 have different keys"; else fail "24.11 and 26.05 share a key"; fi

# changed/same DESCRIPTION: the key after an edit differs from (is) the base;
# then the copy is restored.
changed() {
    local now
    now=$(key)
    if [[ $now != "$base" ]]; then ok "$1 changes the key ($now)"; else fail "$1 left the key at $base"; fi
    restore
}
same() {
    local now
    now=$(key)
    if [[ $now == "$base" ]]; then ok "$1 keeps the key"; else fail "$1 changed the key to $now"; fi
    restore
}

echo less >>"$work/tree/scripts/packages-chroot.txt"
changed "a package added to packages-chroot.txt"

sed -i '/^python3$/d' "$work/tree/scripts/packages-chroot.txt"
changed "a package taken out of packages-chroot.txt"

echo ltrace >>"$work/tree/scripts/packages-cluster.txt"
changed "a package added to packages-cluster.txt"

sed -i 's/^\(    libcmocka-dev bats procps\)$/\1 strace/' "$work/tree/scripts/deps"
grep -q 'procps strace$' "$work/tree/scripts/deps" || fail "the edit of scripts/deps did not apply"
changed "a package added to scripts/deps"

sed -i 's/--variant=minbase/--variant=buildd/' "$chroot_cmd"
changed "another mmdebstrap variant in build_tree"

# (the $ are the script's own text, not this shell's)
# shellcheck disable=SC2016
sed -i 's/^\(    chmod 0755 "\$dir"\)$/\1; touch "$dir\/x"/' "$chroot_cmd"
# shellcheck disable=SC2016
grep -q 'touch "$dir/x"' "$chroot_cmd" || fail "the edit of build_tree did not apply"
changed "a line added to build_tree"

printf '# a comment\n\n' >>"$work/tree/scripts/packages-chroot.txt"
same "a comment in packages-chroot.txt"

# shellcheck disable=SC2016
sed -i 's/^run_timeout=\${SLURM_CHROOT_TIMEOUT:-[0-9]*}$/run_timeout=${SLURM_CHROOT_TIMEOUT:-60}/' "$chroot_cmd"
grep -q 'TIMEOUT:-60}$' "$chroot_cmd" || fail "the edit of run_timeout did not apply"
same "a change to how a tree is run (not built)"

sed -i 's/^\(# VERSION: .*\)$/\1 (edited)/' "$chroot_cmd"
same "a comment in scripts/slurm-chroot"

# Removal: refused while anything is mounted under the tree.  Needs root
# and a private mount namespace, so that the mount is seen by nobody else.
if [[ $(id -u) -ne 0 ]] || ! unshare --mount true 2>/dev/null; then
    echo "skip: removal with a mount under the tree (needs root and unshare --mount)"
else
    cache=$work/cache
    mkdir -p "$cache/trixie/dev" && echo keep >"$cache/trixie/dev/file"
    # (the inner bash expands $1 and $2: the arguments after -)
    # shellcheck disable=SC2016
    out=$(SLURM_CHROOT_CACHE=$cache unshare --mount --propagation private bash -c '
        mount -t tmpfs slurm-chroot-test "$1/trixie/dev" || exit 3
        "$2" remove 24.11 2>&1 && echo "REMOVED"
        umount "$1/trixie/dev"' - "$cache" "$chroot_cmd")
    if [[ $out == *REMOVED* || ! -f $cache/trixie/dev/file ]]; then
        fail "a tree with a mount under it was removed: $out"
    elif [[ $out != *"still mounted under it: $cache/trixie/dev"* ]]; then
        fail "the refusal does not name the mount: $out"
    else
        ok "a tree with a mount under it is refused: ${out#*error: }"
    fi
    if SLURM_CHROOT_CACHE=$cache "$chroot_cmd" remove 24.11 >/dev/null 2>&1 && [[ ! -e $cache/trixie ]]; then
        ok "the tree is removed once nothing is mounted under it"
    else
        fail "the tree was not removed with nothing mounted under it"
    fi
fi

# Runs: each sees its tree through an overlay whose writes go to a directory
# of its own, removed when it ends, and a directory that a killed run left
# (its lock free) goes at the next run's start.  Shown on this machine's own
# system (run-host), which needs no chroot: root, a checkout (a run copies what
# git lists) and overlayfs.
probe=/etc/dt-chroot-key-probe.$$
if [[ $(id -u) -ne 0 ]] || ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1 ||
    ! "$src/scripts/slurm-chroot" can-run-host >/dev/null 2>&1; then
    echo "skip: runs on an overlay (needs root, a git checkout and an overlay of /)"
else
    cache=$work/runcache
    mkdir -p "$cache/runs/host.stale" "$cache/runs/host.held"
    # a run in progress holds its directory's lock (the holder is the process
    # that holds it, so that killing it lets go)
    # shellcheck disable=SC2016
    bash -c 'exec 9<"$1" && flock 9 && exec sleep 120' - "$cache/runs/host.held" >/dev/null 2>&1 &
    holder=$!
    for _ in $(seq 50); do flock -n "$cache/runs/host.held" true || break; sleep 0.1; done
    # (the inner bash expands its own $1)
    # shellcheck disable=SC2016
    out=$(SLURM_CHROOT_CACHE=$cache timeout 120 "$src/scripts/slurm-chroot" run-host -- \
        bash -c 'touch "$1" && echo "inside: / is $(findmnt -n -o FSTYPE /), $(ls /run/netns | wc -l) netns"' - "$probe" 2>&1)
    kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
    if [[ $out == *"inside: / is overlay, 0 netns"* ]]; then
        ok "a run sees / through an overlay, with a /run of its own"
    else
        fail "the run did not see an overlay of its own: $out"
    fi
    if [[ -e $probe ]]; then
        rm -f -- "$probe"
        fail "a file the run wrote in /etc reached this machine's /etc"
    else
        ok "what the run wrote stayed in its own directory"
    fi
    left=$(find "$cache/runs" -mindepth 1 -maxdepth 1 -name 'host.*' -printf '%f\n' | sort | paste -sd' ')
    if [[ $left == host.held ]]; then
        ok "the run removed its directory and a killed run's, and kept a running one's"
    else
        fail "run directories after the run: '$left' (want host.held alone): $out"
    fi
fi

exit "$failed"
