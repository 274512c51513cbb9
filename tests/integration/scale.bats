#!/usr/bin/env bats
# scale.bats - slurmctld's work stays O(1) per step and per failure: on 16
# nodes (2 tasks each), counted by sdiag (reset before each measure).

load helpers/common

NODES=16

setup_file() {
    [[ -f $PLUGIN_SO ]] || { echo "build first: $PLUGIN_SO is missing" >&2; return 1; }
    "$MINICLUSTER" stop >/dev/null 2>&1 || true
    "$MINICLUSTER" start --nodes "$NODES" --cpus 2 --plugin "$PLUGIN_SO" >&2
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
}

# How many RPCs of type $1 slurmctld counted since the last sdiag -r.
rpc_count() {
    timeout 30 sdiag | sed -n "s/^[[:space:]]*$1[[:space:]]*([[:space:]]*[0-9]*)[[:space:]]*count:\([0-9]*\).*/\1/p" | head -n 1 | grep . || echo 0
}

@test "16 nodes: one failed rank costs one cancel RPC, no notify, and srun names only it" {
    timeout 30 sdiag -r >/dev/null
    run timeout 120 srun --dist-train -N"$NODES" -n$((2 * NODES)) bash -c \
        "if [ \$SLURM_PROCID = $((2 * NODES - 1)) ]; then sleep 1; exit 3; fi; exec sleep 300"
    local cancels notifies
    cancels=$(rpc_count REQUEST_CANCEL_JOB_STEP)
    notifies=$(rpc_count REQUEST_JOB_NOTIFY)
    echo "$output"
    echo "cancel RPCs: $cancels, notify RPCs: $notifies"
    [ "$status" -ne 0 ]
    # the bound: srun's one kill-on-bad-exit request (a second only if srun
    # is interrupted meanwhile), nothing from the nodes
    ((cancels >= 1 && cancels <= 2))
    ((notifies == 0))
    [[ $(grep -c 'dist-train: rank' <<<"$output") -eq 1 ]]
    [[ $(grep 'dist-train: rank' <<<"$output") == *"rank $((2 * NODES - 1)) on node$NODES exited with status 3"* ]]
}

@test "16 nodes, every rank in a bash wrapper that exits 143 when stopped: one line, the failed rank's" {
    local t0 elapsed_ms
    t0=$(date +%s%N)
    run timeout 120 srun --dist-train -N"$NODES" -n$((2 * NODES)) "$TERM_WRAPPER" bash -c \
        "if [ \$SLURM_PROCID = $((2 * NODES - 1)) ]; then sleep 1; exit 3; fi; exec sleep 300"
    elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
    echo "$output"
    echo "elapsed: $elapsed_ms ms (1 s of it before the failure)"
    [ "$status" -ne 0 ]
    [[ $(grep -c 'dist-train: rank' <<<"$output") -eq 1 ]]
    [[ $(grep 'dist-train: rank' <<<"$output") == *"rank $((2 * NODES - 1)) on node$NODES exited with status 3"* ]]
}

@test "16 nodes: the launch asks slurmctld twice per step, also when names resolve nowhere" {
    local saved n layout nodeinfo
    saved=$(node_hosts_get node1)
    for ((n = 1; n <= NODES; n++)); do
        grep -v ' node[0-9]*$' <<<"$saved" | node_hosts_set "node$n"
    done
    run "$MINICLUSTER" exec --node node2 -- getent hosts node1
    local resolved=$status
    timeout 30 sdiag -r >/dev/null
    for n in 1 2 3; do
        step_env --dist-train -N"$NODES" -n$((2 * NODES)) || break
    done
    layout=$(rpc_count REQUEST_STEP_LAYOUT)
    nodeinfo=$(rpc_count REQUEST_NODE_INFO_SINGLE)
    for ((n = 1; n <= NODES; n++)); do printf '%s\n' "$saved" | node_hosts_set "node$n"; done
    echo "3 steps: $layout step layout RPCs, $nodeinfo node info RPCs"
    [ "$resolved" -ne 0 ]
    check_layout "$NODES" $((2 * NODES))
    ((layout == 3))
    ((nodeinfo == 3))
}
