#!/usr/bin/env bats
# hang.bats - dist-train-doctor hang on a running step of 4 nodes, 2 ranks
# each: a plain PyTorch gloo all_reduce loop (no shim), held in turn by a
# stopped rank, a rank asleep between two collectives, a node cut off from
# the others and a rank in another collective (in a step of its own: nothing
# releases it). Each must be named; the first two must let the step go on once
# released.

load helpers/common

DOCTOR="$TOP/tools/dist-train-doctor"

setup_file() {
    [[ -x $DOCTOR ]] || { echo "build first: $DOCTOR is missing" >&2; return 1; }
    cluster_start 4
    export CTL="$MINICLUSTER_DIR/hang-ctl"
    # the step runs through every test of the file but the last; teardown_file ends it
    start_hangloop
}

# The loop on 4 nodes, 2 ranks each, running: its step in $CTL/step.
start_hangloop() {
    rm -rf "$CTL" && mkdir -p "$CTL"
    timeout 600 srun --job-name=hangloop --dist-train -N4 --ntasks-per-node=2 \
        "$TORCH_PYTHON" "$TOP/tests/integration/helpers/hang_loop.py" "$CTL" \
        >"$CTL/step.log" 2>&1 &
    echo $! >"$CTL/srun.pid"
    for _ in $(seq 600); do
        [[ $(find "$CTL" -name 'pid.*' | wc -l) -eq 8 && -s $CTL/iter ]] && break
        sleep 0.2
    done
    [[ -s $CTL/iter ]] || { cat "$CTL/step.log" >&2; return 1; }
    STEP="$(squeue -h -n hangloop -o %i).0"
    echo "$STEP" >"$CTL/step"
}

# End the loop's step, however it is held.
stop_hangloop() {
    local pid
    [[ -f $CTL/srun.pid ]] || return 0
    pid=$(cat "$CTL/srun.pid")
    rm -f "$CTL"/sleep.*
    for p in "$CTL"/pid.*; do [[ -f $p ]] && kill -CONT "$(cat "$p")" 2>/dev/null; done
    node_uncut node4 4
    # (not a clean stop: after the cut, TCP's backoff holds the step a minute)
    scancel -n hangloop 2>/dev/null || true
    timeout 30 tail --pid="$pid" -f /dev/null || kill -TERM "$pid" 2>/dev/null || true
    rm -f "$CTL/srun.pid"
}

teardown_file() {
    stop_hangloop
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    STEP=$(cat "$CTL/step")
}

teardown() {
    node_logs_on_failure 20
}


# The loop goes on: rank 0's iteration moves within $1 seconds.
step_goes_on() {
    local before
    before=$(cat "$CTL/iter")
    for _ in $(seq $(($1 * 5))); do
        (($(cat "$CTL/iter") > before)) && return 0
        sleep 0.2
    done
    echo "the step made no progress in $1 s after it was released" >&2
    cat "$CTL/step.log" >&2
    return 1
}

# Rank 0 stops moving: the others wait on the held rank.
step_held() {
    local before
    for _ in $(seq 50); do
        before=$(cat "$CTL/iter")
        sleep 1
        (($(cat "$CTL/iter") == before)) && return 0
    done
    echo "the step went on: nothing held it" >&2
    return 1
}

@test "hang: a running step that makes progress is not called hung" {
    step_goes_on 30
    run timeout 90 "$DOCTOR" hang "$STEP" --window 3
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"step $STEP, 8 ranks found on 4 nodes"* ]]
    [[ $output == *"verdict: no hang seen"* ]]
}

@test "hang: a stopped rank is named, and the 7 others wait on it" {
    local pid
    pid=$(cat "$CTL/pid.5")
    kill -STOP "$pid"
    step_held
    run timeout 90 "$DOCTOR" hang "$STEP"
    kill -CONT "$pid"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ $output == *"verdict: rank 5 on node3 is stopped (SIGSTOP"*"; 7 ranks wait on it"* ]]
    # its line, and a waiting rank's
    grep -Eq '^5 +node3 +stopped ' <<<"$output"
    grep -Eq '^0 +node1 +sleeping ' <<<"$output"
    step_goes_on 30
}

@test "hang: a rank asleep between two collectives is named" {
    touch "$CTL/sleep.7"
    step_held
    run timeout 90 "$DOCTOR" hang "$STEP"
    rm -f "$CTL/sleep.7"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ $output == *"verdict: rank 7 on node4 waits in clock_nanosleep, where the 7 others wait in"* ]]
    step_goes_on 30
}

@test "hang: a node cut off from the others is named" {
    node_cut node4 4
    step_held
    # the connections retransmit after their first timeout
    sleep 2
    run timeout 90 "$DOCTOR" hang "$STEP"
    node_uncut node4 4
    echo "$output"
    [ "$status" -eq 1 ]
    [[ $output == *"verdict: node node4 is cut off: "*" to and from it retransmit"*"(ranks 6-7 on node4)"* ]]
    # (not waited on to go on: TCP's backoff after the cut takes a minute or more)
}

@test "hang: a step that is not running, and bad input, say so" {
    run timeout 30 "$DOCTOR" hang 12x
    [ "$status" -eq 2 ]
    [[ $output == *"'12x' is not a step: give it as JOBID.STEPID"* ]]
    run timeout 30 "$DOCTOR" hang 999999.0
    [ "$status" -eq 2 ]
    [[ $output == *"step 999999.0 is not running"* ]]
    run timeout 30 "$DOCTOR" hang "$STEP" --window 100
    [ "$status" -eq 2 ]
    [[ $output == *"--window takes seconds, 0.2 to 60"* ]]
}

# Last: nothing releases a rank from another collective, and the cut before it leaves
# the first step in TCP's backoff.  So a step of its own, where rank 3 broadcasts while
# the 7 others all-reduce: /proc shows all 8 alike, their stacks do not.
@test "hang: a rank in another collective than the others is named" {
    [[ -z ${DIST_TRAIN_GENERATION_ONLY:-} ]] ||
        skip "the stacks are read the same with every Slurm: the host's run has this case"
    stop_hangloop
    start_hangloop
    touch "$CTL/other.3"
    step_held
    run timeout 90 "$DOCTOR" hang "$STEP"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ $output == *"verdict: rank 3 on node2 is in gloo::broadcast, where the 7 others are in another collective: the ranks do not call the same collective"* ]]
    grep -Eq '^3 +node2 +sleeping .* gloo::broadcast ' <<<"$output"
}
