#!/usr/bin/env bats
# gang.bats - gang semantics on a 3-node cluster: one failed task stops the
# step everywhere (fail_fast), an early clean exit does not, fail_fast=off
# keeps Slurm's own behaviour; a PyTorch job that uses the shim stops together
# on a preemption signal and resumes, and the watchdog ends a wedged step.

# shellcheck disable=SC2016 # the tasks expand the variables of these bash -c programs

load helpers/common

setup_file() {
    cluster_start 3
}

teardown_file() {
    cluster_stop
}

PREEMPT_TRAIN="$TOP/examples/preempt_train.py"

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    "$MINICLUSTER" start --nodes 3 --plugin "$PLUGIN_SO" >/dev/null 2>&1
    # a duration no other process on this machine sleeps, to find leftovers
    MARK=$((300 + RANDOM % 1000)).5
}

teardown() {
    # (a step ended without a word from the shim or the plugin once, in a whole run
    # only: what the daemons said)
    node_logs_on_failure
    # an srun a test left in the background (under timeout, which passes
    # SIGTERM on to it), whatever became of the test
    [[ -n ${BG_SRUN:-} ]] || return 0
    kill -TERM "$BG_SRUN" 2>/dev/null || return 0
    timeout 30 tail --pid="$BG_SRUN" -f /dev/null || kill -KILL "$BG_SRUN" 2>/dev/null || true
}

# Tasks of the step still alive anywhere (all nodes share this PID namespace).
leftovers() {
    leftovers_of "sleep $MARK"
}


# run_timed CMD...: $status, $output (stdout+stderr), $elapsed_ms
run_timed() {
    local t0
    t0=$(date +%s%N)
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

@test "--error is a FIFO nobody reads, task 0 floods it: a failed rank still stops the step at once" {
    local fifo=$MINICLUSTER_DIR/stderr.$BATS_TEST_NUMBER.fifo i alive states reasons
    rm -f "$fifo"
    mkfifo "$fifo"
    # a reader that never reads: once the FIFO is full, a write to it waits
    exec {FIFO_FD}<>"$fifo"
    # node1 runs ranks 0 and 1: rank 0 (its task 0, whose stderr is
    # slurmstepd's fd 2) fills the FIFO, rank 1 fails
    timeout 200 srun --dist-train -N3 --ntasks-per-node=2 --error="$fifo" bash -c \
        "case \$SLURM_PROCID in 0) exec yes flood >&2 ;; 1) sleep 2; exit 1 ;; *) exec sleep $MARK ;; esac" \
        >/dev/null 3>&- {FIFO_FD}<&- &
    BG_SRUN=$!
    for ((i = 0; i < 100; i++)); do
        pgrep -f "^sleep $MARK\$" >/dev/null && break
        sleep 0.1
    done
    # fail fast: the other ranks are gone a few seconds after rank 1 fails
    for ((i = 0; i < 100; i++)); do
        alive=$(pgrep -fc "^sleep $MARK\$" || true)
        ((alive == 0)) && break
        sleep 0.2
    done
    # let the FIFO go: slurmstepd's own log of the cancel goes there too
    exec {FIFO_FD}<&-
    wait "$BG_SRUN" || true
    BG_SRUN=
    states=$(settled_states node1 node2 node3)
    reasons=$(timeout 30 sinfo -h -R)
    echo "ranks alive 20 s after the failure: $alive; nodes: $states; drained or down: ${reasons:-none}"
    ((alive == 0))
    [[ $states == idle ]]
    [[ -z $reasons ]]
    leftovers_of "yes flood"
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
    # srun's status: the others were stopped (128 + SIGTERM or SIGKILL)
    [[ $output == *"after the step: 143"* || $output == *"after the step: 137"* ]]
    # only the rank that failed is named, not those stopped because of it
    [[ $(grep -c 'dist-train: rank' <<<"$output") -eq 1 ]]
    leftovers
}

# The example training script under --dist-train and PMIx, in the background;
# its output in $RUN/out.  $RUN is shared with the nodes.
start_training() {
    RUN=$MINICLUSTER_DIR/train.$BATS_TEST_NUMBER
    mkdir -p "$RUN"
    DTSHIM_LIBRARY=$TOP/shim/.libs/libdtshim.so.0 PYTHONPATH=$TOP/python \
        timeout 240 srun --mpi=pmix "$@" "$TORCH_PYTHON" "$PREEMPT_TRAIN" --dir "$RUN" \
        >"$RUN/out" 2>&1 &
    TRAIN_PID=$!
}

# Wait until $1 lines of $RUN/out match $2 (at most 240 s, the step's own
# bound: three PyTorch starts take most of a minute on a busy machine, and
# CI's is slower).
wait_lines() {
    local i
    for ((i = 0; i < 2400; i++)); do
        [[ $(grep -c -- "$2" "$RUN/out" 2>/dev/null) -ge $1 ]] && return 0
        sleep 0.1
    done
    cat "$RUN/out" >&2
    return 1
}

@test "preemption: scancel --signal=USR2, every rank stops at the same step, exits 0, and resumes" {
    require_pmix
    start_training --dist-train -N3 -n3
    wait_lines 3 'starting at step 0'
    sleep 1 # some training steps
    local job
    job=$(squeue -h -o %i | head -1)
    scancel --signal=USR2 "$job"
    wait "$TRAIN_PID"
    local rc=$?
    cat "$RUN/out"
    [ "$rc" -eq 0 ]
    [[ $(grep -c 'stopped at step [0-9]* (preempted)' "$RUN/out") -eq 3 ]]
    local stops
    stops=$(grep -o 'stopped at step [0-9]*' "$RUN/out" | sort -u)
    [[ $(wc -l <<<"$stops") -eq 1 ]]
    local at=${stops##* }
    ((at > 0))
    # the next attempt (a requeue, or dist-train-restart) resumes from there
    DIST_TRAIN_RESTART_COUNT=1 start_training --dist-train -N3 -n3
    wait_lines 3 "restart 1, starting at step $at"
    kill "$TRAIN_PID" 2>/dev/null || true
    wait "$TRAIN_PID" || true
}

@test "requeue: TORCHELASTIC_RESTART_COUNT follows the job's requeue count" {
    local f=$MINICLUSTER_DIR/requeue.$BATS_TEST_NUMBER job i
    rm -f "$f"
    job=$(sbatch --parsable --requeue -o "$f.out" --open-mode=append -N1 --wrap "srun --dist-train -N1 -n1 \
        bash -c 'echo restart=\$TORCHELASTIC_RESTART_COUNT >> $f'
        [ \${SLURM_RESTART_COUNT:-0} = 0 ] && exec sleep $MARK")
    for ((i = 0; i < 300; i++)); do [[ -s $f ]] && break; sleep 0.2; done
    scontrol requeue "$job"
    # Slurm holds a requeued job for two minutes (its EligibleTime): once it is pending
    # and its node has let the old run go, it may start now.  Not within the second in
    # which the node revoked the old run's credential, though: the node refuses a launch
    # whose credential dates from that second as revoked, and the job fails.
    for ((i = 0; i < 150; i++)); do
        [[ $(squeue -h -j "$job" -o %T) == PENDING ]] && break
        sleep 0.2
    done
    [[ $(settled_states node1 node2 node3) == idle ]]
    local idle_at
    idle_at=$(date +%s)
    while (($(date +%s) <= idle_at)); do sleep 0.1; done
    scontrol update jobid="$job" StartTime=now
    # The bound is far above the time it takes: it only stops a run that never comes.
    local deadline=$((SECONDS + 240)) state
    for ((i = 1; SECONDS < deadline; i++)); do
        [[ $(wc -l <"$f") -ge 2 ]] && break
        state=$(scontrol show job -o "$job" | grep -o ' \(JobState\|Reason\|EligibleTime\|Restarts\)=[^ ]*' |
            paste -sd' ')
        # (a run that ended without its line: no use waiting on)
        [[ $state =~ JobState=(PENDING|CONFIGURING|RUNNING|COMPLETING)( |$) ]] || break
        # (again every 5 s, should Slurm still be requeuing the job at the first update;
        # it fails once the job runs, which is no failure of the test)
        if ((i % 25 == 0)); then
            scontrol update jobid="$job" StartTime=now 2>/dev/null || true
            echo "$state"
        fi
        sleep 0.2
    done
    echo "the requeued run wrote its line $((SECONDS - deadline + 240)) s after the requeue's StartTime=now"
    cat "$f.out" "$f"
    [[ $(cat "$f") == $'restart=0\nrestart=1' ]]
    leftovers
}

@test "watchdog: a wedged rank ends the step, named, instead of holding it (PMIx and PMI-2)" {
    local mpi t0 took ran=0
    for mpi in pmix pmi2; do
        has_mpi "$mpi" || continue
        t0=$(date +%s)
        # (the wedged rank never returns: without the watchdog, only timeout ends
        # the step; its bound is far over the 40 s a step took beside the suite's
        # lanes, where three PyTorch starts take most of that: CI's machine is slower)
        DTSHIM_LIBRARY=$TOP/shim/.libs/libdtshim.so.0 PYTHONPATH=$TOP/python \
            run timeout --verbose 240 srun --mpi=$mpi --dist-train=watchdog=4 -N3 -n3 "$TORCH_PYTHON" \
            "$PREEMPT_TRAIN" --dir "$MINICLUSTER_DIR" --hang 1 5
        took=$(( $(date +%s) - t0 ))
        echo "--mpi=$mpi: $output"
        echo "took $took s"
        [ "$status" -ne 0 ]
        # ended by the watchdog, not by timeout (whose status, 124, the wedged
        # rank's exit shares: timeout says when it sends its signal)
        [[ $output != *"timeout: sending signal"* ]]
        [[ $output == *"dtshim: rank "*" made no progress for "*" s (DIST_TRAIN_WATCHDOG=4): ending the step"* ]]
        leftovers_of "$PREEMPT_TRAIN"
        ran=$((ran + 1))
    done
    ((ran > 0))
}

@test "no watchdog by default: a slow rank is only slow" {
    require_pmix
    DTSHIM_LIBRARY=$TOP/shim/.libs/libdtshim.so.0 PYTHONPATH=$TOP/python \
        run timeout 240 srun --mpi=pmix --dist-train -N2 -n2 "$TORCH_PYTHON" \
        "$PREEMPT_TRAIN" --dir "$MINICLUSTER_DIR" --steps 3 --step-time 2
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -c 'stopped at step 3 (done)' <<<"$output") -eq 2 ]]
}
