#!/usr/bin/env bats
# gang.bats - gang semantics on a 3-node cluster: one failed task stops the
# step everywhere (fail_fast), an early clean exit does not, and fail_fast=off
# keeps Slurm's own behaviour.

load helpers/common

setup_file() {
    cluster_start 3
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$TOP"
    eval "$("$MINICLUSTER" env)"
    "$MINICLUSTER" start --nodes 3 --plugin "$PLUGIN_SO" >/dev/null 2>&1
    # a duration no other process on this machine sleeps, to find leftovers
    MARK=$((300 + RANDOM % 1000)).5
}

# Tasks of the step still alive anywhere (all nodes share this PID namespace).
leftovers() {
    local i
    for i in $(seq 50); do
        pgrep -f "sleep $MARK" >/dev/null || return 0
        sleep 0.2
    done
    pgrep -af "sleep $MARK" >&2
    return 1
}

# run_timed CMD...: $status, $output (stdout+stderr), $elapsed_ms
run_timed() {
    local t0=$(date +%s%N)
    run timeout 120 "$@"
    elapsed_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "$output"
    echo "elapsed: $elapsed_ms ms"
}

@test "one rank of 6 on 3 nodes exits 3: every rank stops at once, srun names it" {
    run_timed srun --dist-train -N3 -n6 bash -c \
        "if [ \$SLURM_PROCID = 5 ]; then sleep 1; exit 3; fi; exec sleep $MARK"
    [ "$status" -ne 0 ]
    ((elapsed_ms < 15000))
    # the first line from dist-train names the rank, its node and its status
    local first
    first=$(grep -m1 'dist-train: rank' <<<"$output")
    [[ $first == *"rank 5 on node3 exited with status 3: stopping every rank of step"* ]]
    leftovers
}

@test "a rank killed by SIGKILL stops the step too" {
    run_timed srun --dist-train -N3 -n6 bash -c \
        "if [ \$SLURM_PROCID = 2 ]; then sleep 1; kill -9 \$\$; fi; exec sleep $MARK"
    [ "$status" -ne 0 ]
    ((elapsed_ms < 15000))
    local first
    first=$(grep -m1 'dist-train: rank' <<<"$output")
    [[ $first == *"rank 2 on node"*" was killed by signal 9 (SIGKILL)"* ]]
    leftovers
}

@test "a rank that exits 0 early is not a failure" {
    run_timed srun --dist-train -N3 -n6 bash -c \
        'if [ $SLURM_PROCID = 1 ]; then exit 0; fi; sleep 2; echo "rank $SLURM_PROCID done"'
    [ "$status" -eq 0 ]
    [[ $(grep -c '^rank [0-9] done' <<<"$output") -eq 5 ]]
    [[ $output != *"dist-train: rank"* ]]
}

@test "fail_fast=off: the other ranks run to their end, as without the flag" {
    local prog='if [ $SLURM_PROCID = 1 ]; then exit 3; fi; sleep 3; echo "rank $SLURM_PROCID done"'
    run_timed srun --dist-train=fail_fast=off -N3 -n6 bash -c "$prog"
    [ "$status" -ne 0 ]
    ((elapsed_ms >= 3000))
    [[ $(grep -c '^rank [0-9] done' <<<"$output") -eq 5 ]]
    [[ $output != *"dist-train: rank"* ]]
    run_timed srun -N3 -n6 bash -c "$prog"
    [ "$status" -ne 0 ]
    [[ $(grep -c '^rank [0-9] done' <<<"$output") -eq 5 ]]
}

@test "the site's fail_fast=off turns it off" {
    printf 'required %s fail_fast=off\n' "$PLUGIN_SO" > "$BATS_TEST_TMPDIR/plugstack.conf"
    "$MINICLUSTER" start --nodes 3 --plugstack "$BATS_TEST_TMPDIR/plugstack.conf" >/dev/null 2>&1
    run_timed srun --dist-train -N3 -n3 bash -c \
        'if [ $SLURM_PROCID = 1 ]; then exit 3; fi; sleep 2; echo "rank $SLURM_PROCID done"'
    [ "$status" -ne 0 ]
    [[ $(grep -c '^rank [0-9] done' <<<"$output") -eq 2 ]]
}

@test "sbatch --dist-train: a failing step stops, the batch script goes on and is told why" {
    sbatch_wait -N3 --dist-train <<JOB
#!/bin/bash
srun -N3 -n3 bash -c 'if [ \$SLURM_PROCID = 0 ]; then sleep 1; exit 7; fi; exec sleep $MARK'
echo "after the step: \$?"
JOB
    echo "$output"
    [[ $output == *"rank 0 on node1 exited with status 7"* ]]
    # srun's status: the others were killed (128 + 9)
    [[ $output == *"after the step: 137"* ]]
    leftovers
}
