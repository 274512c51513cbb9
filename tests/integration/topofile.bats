#!/usr/bin/env bats
# topofile.bats - a site's topology file that never answers: on a hung mount
# (a FUSE file system that never replies, in a private mount namespace), or
# a FIFO.  dist-train-plan reads it as slurmstepd does, in a child that is
# stopped at the deadline; the file is never touched by the program itself.
# No cluster: the plugin's own path is in tests/unit/test_topocache.c.

load helpers/common

PLAN="$TOP/tools/dist-train-plan"
HUNG="$TOP/tests/integration/helpers/hung_mount.py"

setup_file() {
    [[ -x $PLAN ]] || { echo "build first: $PLAN is missing" >&2; return 1; }
    [[ -c /dev/fuse ]] || modprobe fuse 2>/dev/null || true
    [[ -c /dev/fuse ]] || { echo "no /dev/fuse: the kernel's fuse module is needed (modprobe fuse)" >&2; return 1; }
}

# on_hung_mount CMD...: CMD with $MNT a hung mount; its output in $output.
on_hung_mount() {
    MNT=$BATS_TEST_TMPDIR/hung
    run unshare -m --propagation private "$TORCH_PYTHON" "$HUNG" "$MNT" "$@"
    echo "$output"
}

@test "dist-train-plan --topology on a hung mount: stopped at the deadline, and named" {
    SECONDS=0
    on_hung_mount "$PLAN" --topology "$BATS_TEST_TMPDIR/hung/node.xml" --timeout 1
    [ "$status" -eq 1 ]
    [[ $output == "dist-train-plan: topology=$BATS_TEST_TMPDIR/hung/node.xml: reading it took longer than 1 s (a hung file system, or hwloc stuck): stopped" ]]
    ((SECONDS < 10))
}

@test "HWLOC_XMLFILE on a hung mount: the same child, never this process" {
    SECONDS=0
    on_hung_mount env HWLOC_XMLFILE="$BATS_TEST_TMPDIR/hung/node.xml" "$PLAN" --timeout 1
    [ "$status" -eq 1 ]
    [[ $output == "dist-train-plan: HWLOC_XMLFILE=$BATS_TEST_TMPDIR/hung/node.xml: reading it took longer than 1 s"* ]]
    ((SECONDS < 10))
}

@test "a FIFO as the topology file: refused at once" {
    mkfifo "$BATS_TEST_TMPDIR/node.xml"
    SECONDS=0
    run timeout 60 "$PLAN" --topology "$BATS_TEST_TMPDIR/node.xml"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ $output == "dist-train-plan: topology=$BATS_TEST_TMPDIR/node.xml: it is not a regular file" ]]
    ((SECONDS < 5))
}

@test "a good file is planned; a --timeout that is not whole seconds is refused" {
    run timeout 60 "$PLAN" --topology "$GPU_XML" --tasks 4
    echo "$output"
    [ "$status" -eq 0 ]
    [[ ${lines[0]} == "topology $GPU_XML: 2 PUs, 2 NUMA nodes, 4 GPUs, 1 RDMA NICs" ]]
    [[ $(grep -c '^[0-3] ' <<<"$output") -eq 4 ]]
    run "$PLAN" --topology "$GPU_XML" --timeout 0
    [ "$status" -eq 2 ]
    [[ $output == *"--timeout 0: expected whole seconds, 1 to 3600"* ]]
}
