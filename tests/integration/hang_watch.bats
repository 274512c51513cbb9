#!/usr/bin/env bats
# hang_watch.bats - --dist-train=hang=SECONDS: the step watches itself. A
# plain PyTorch gloo all_reduce loop (no shim) on 4 nodes, 2 ranks each,
# under hang=20, held in turn by a stopped rank, a rank asleep between two
# collectives and a node cut off: each step must be stopped within
# SECONDS + 10 s of the hang, with one line that names the rank or node. A
# rank that writes a checkpoint, or computes, for 60 s while the others wait
# is progress, and the step goes on.

load helpers/common

HANG=20

DOCTOR="$TOP/tools/dist-train-doctor"

setup_file() {
    [[ -x $DOCTOR ]] || { echo "build first: $DOCTOR is missing" >&2; return 1; }
    cluster_start 4
    # the watchers are the doctor, from the build tree
    printf 'required %s doctor=%s\n' "$PLUGIN_SO" "$DOCTOR" >"$MINICLUSTER_DIR/plugstack.conf"
}

teardown_file() {
    node_uncut node4 4
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    CTL="$MINICLUSTER_DIR/hang-watch-ctl.$BATS_TEST_NUMBER"
    rm -rf "$CTL" && mkdir -p "$CTL"
}

teardown() {
    node_logs_on_failure 20
    if [[ -f $CTL/srun.pid ]]; then
        for p in "$CTL"/pid.*; do [[ -f $p ]] && kill -CONT "$(cat "$p")" 2>/dev/null; done
        node_uncut node4 4
        scancel -n hangwatch 2>/dev/null || true
        timeout 30 tail --pid="$(cat "$CTL/srun.pid")" -f /dev/null || true
    fi
}

host_only() {
    [[ -z ${DIST_TRAIN_GENERATION_ONLY:-} ]] ||
        skip "the watcher is the same in every Slurm generation: the host's run has this case, each chroot one stop"
}


# Start the loop under hang=$HANG, and wait until every rank is in it.
start_loop() {
    timeout 400 srun --job-name=hangwatch --dist-train=hang=$HANG -N4 --ntasks-per-node=2 \
        "$TORCH_PYTHON" "$TOP/tests/integration/helpers/hang_loop.py" "$CTL" \
        >"$CTL/step.log" 2>&1 &
    echo $! >"$CTL/srun.pid"
    for _ in $(seq 900); do
        [[ $(find "$CTL" -name 'pid.*' | wc -l) -eq 8 && -s $CTL/iter ]] && break
        sleep 0.2
    done
    [[ -s $CTL/iter ]] || { cat "$CTL/step.log" >&2; return 1; }
}

# Wait for srun to end (within $1 s); its status in $srun_status.
srun_ends_within() {
    local pid
    pid=$(cat "$CTL/srun.pid")
    timeout "$1" tail --pid="$pid" -f /dev/null || {
        echo "srun still runs $1 s later" >&2
        cat "$CTL/step.log" >&2
        return 1
    }
    wait "$pid" && srun_status=0 || srun_status=$?
}

# The hang began at $1 (epoch s): the watcher's line is in within HANG + 10 s,
# once, and names what $2 matches; the step ends.
stopped_naming() {
    local t0=$1 want=$2 line
    for _ in $(seq $(((HANG + 10) * 5))); do
        grep -q 'no rank made progress' "$CTL/step.log" && break
        sleep 0.2
    done
    echo "the line came $(($(date +%s) - t0)) s after the hang"
    line=$(grep 'no rank made progress' "$CTL/step.log") || {
        echo "no line from the watcher $((HANG + 10)) s after the hang" >&2
        cat "$CTL/step.log" >&2
        return 1
    }
    echo "$line"
    [[ $(grep -c 'no rank made progress' "$CTL/step.log") -eq 1 ]]
    [[ $line == *"dist-train: step "*": no rank made progress for "*" s (hang=$HANG): "$want*"; stopping every rank (--dist-train=hang=off lets it run)" ]]
    srun_ends_within 60
    [ "$srun_status" -ne 0 ]
}

@test "hang=20: a stopped rank is named and the step stopped" {
    local t0
    start_loop
    t0=$(date +%s)
    kill -STOP "$(cat "$CTL/pid.5")"
    stopped_naming "$t0" "rank 5 on node3 is stopped (SIGSTOP"
}

@test "hang=20: a rank asleep between two collectives is named and the step stopped" {
    local t0
    host_only
    start_loop
    t0=$(date +%s)
    touch "$CTL/sleep.7"
    stopped_naming "$t0" "rank 7 on node4 waits in clock_nanosleep, where the 7 others wait in"
}

@test "hang=20: a rank in another collective than the others is named and the step stopped" {
    local t0
    host_only
    start_loop
    t0=$(date +%s)
    touch "$CTL/other.3"
    stopped_naming "$t0" "rank 3 on node2 is in gloo::broadcast, where the 7 others are in another collective"
}

@test "hang=20: a node cut off from the others is named and the step stopped" {
    local t0
    host_only
    start_loop
    t0=$(date +%s)
    node_cut node4 4
    # (the probe on node4 cannot answer the decider's srun either)
    stopped_naming "$t0" "node node4 did not answer, and 6 ranks wait on ranks 6-7: cut off from the others, or down"
    node_uncut node4 4
}

@test "hang=20: a 60 s checkpoint on rank 0, then 60 s of compute on rank 3, are no hang" {
    host_only
    start_loop
    echo 60 >"$CTL/checkpoint.0"
    for _ in $(seq 400); do [[ -f $CTL/checkpoint.0 ]] || break; sleep 0.2; done
    [[ ! -f $CTL/checkpoint.0 ]]
    echo 60 >"$CTL/compute.3"
    for _ in $(seq 400); do [[ -f $CTL/compute.3 ]] || break; sleep 0.2; done
    [[ ! -f $CTL/compute.3 ]]
    touch "$CTL/stop"
    srun_ends_within 60
    cat "$CTL/step.log"
    [ "$srun_status" -eq 0 ]
    run grep -c 'no rank made progress' "$CTL/step.log"
    [ "$output" = 0 ]
}

@test "hang=: a value under 10 s, and the tf profile, are refused before launch" {
    host_only
    run timeout 60 srun --dist-train=hang=5 -N2 true
    [ "$status" -ne 0 ]
    [[ $output == *"hang= takes seconds, 10 to 10000000, or off"* ]]
    run timeout 60 srun --dist-train=tf,hang=60 -N2 true
    [ "$status" -ne 0 ]
    [[ $output == *"hang= needs the port after MASTER_PORT"*"use the torch profile, or --dist-train=tf,hang=off"* ]]
}
