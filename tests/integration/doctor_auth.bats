#!/usr/bin/env bats
# doctor_auth.bats - dist-train-doctor's ranks on loopback, with others on
# rank 0's port: a forged record, idle connections, strangers churning
# connections, thousands of records claiming one node, file descriptors
# running out, an impostor listening in rank 0's place, a rank with another
# step's key.  No cluster: the ranks are the real doctor with the environment
# srun --dist-train gives a task.
#
# DOCTOR_UNDER_TEST=PATH runs the file against another build of the doctor
# (the forged record, both idle-connection tests, the 2,047 records and the
# descriptors running out with idle connections each fail against the one
# before the step key; the churn fails against the one whose new connections
# pushed out the oldest, whether it had shown the key or not).

load helpers/common

DOCTOR=${DOCTOR_UNDER_TEST:-$TOP/tools/dist-train-doctor}
PEER="$TOP/tests/integration/helpers/doctor_peer.py"

setup_file() {
    [[ -x $DOCTOR ]] || { echo "build first: $DOCTOR is missing" >&2; return 1; }
}

setup() {
    PIDS=()
    PORT=$("$TORCH_PYTHON" "$PEER" free-port)
    KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    OUT=$BATS_TEST_TMPDIR
}

teardown() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

# doctor RANK WORLD [VAR=VALUE...] -- ARGS...: one rank, as srun --dist-train
# starts it on node1 (no layout unless given), bounded above the longest
# --timeout a test gives it (120 s): 2,047 handshakes from Python took over
# 60 s beside the other lanes and a build; its CPU seconds into
# $CPU_FILE when set, under a file descriptor limit of $NOFILE when set
# (N for soft and hard, or SOFT:HARD).
doctor() {
    local rank=$1 world=$2
    shift 2
    local vars=()
    while (($# > 0)) && [[ $1 != -- ]]; do
        vars+=("$1")
        shift
    done
    shift
    local wrap=()
    [[ -z ${CPU_FILE:-} ]] || wrap=("$TORCH_PYTHON" "$PEER" cpu "$CPU_FILE")
    local nofile=${NOFILE:-}
    [[ -z $nofile || $nofile == *:* ]] || nofile=$nofile:$nofile
    [[ -z $nofile ]] || wrap+=(prlimit --nofile="$nofile")
    "${wrap[@]}" env -u NCCL_SOCKET_IFNAME -u GLOO_SOCKET_IFNAME -u SLURM_STEP_NODELIST \
        -u SLURM_STEP_TASKS_PER_NODE -u SLURM_DISTRIBUTION -u SLURM_PROCID \
        DIST_TRAIN_STEP_KEY="$KEY" RANK="$rank" LOCAL_RANK="$rank" WORLD_SIZE="$world" \
        MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" SLURMD_NODENAME=node1 "${vars[@]}" \
        timeout 150 "$DOCTOR" "$@"
}

# Rank 0 in the background, its report in $OUT/rank0; wait_rank0 waits for
# it and leaves its exit status in rc0.
rank0() {
    local world=$1
    shift
    doctor 0 "$world" "$@" >"$OUT/rank0" 2>&1 &
    PIDS+=($!)
    RANK0=$!
    # (listening: the others connect)
    local i
    for ((i = 0; i < 100; i++)); do
        ss -Hltn "sport = :$PORT" | grep -q . && return 0
        sleep 0.1
    done
    echo "rank 0 does not listen on $PORT" >&2
    return 1
}

# wait_ready FILE: until a helper made FILE (all its connections open), at
# most 60 s: under load, Python alone takes seconds to start.
wait_ready() {
    local i
    for ((i = 0; i < 600; i++)); do
        [[ -e $1 ]] && return 0
        sleep 0.1
    done
    echo "$1 was not made within 60 s" >&2
    return 1
}

# wait_line FILE TEXT: until FILE holds TEXT, at most 60 s.
wait_line() {
    local i
    for ((i = 0; i < 600; i++)); do
        grep -qF "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$1 did not say '$2' within 60 s" >&2
    return 1
}

wait_rank0() {
    rc0=0
    wait "$RANK0" || rc0=$?
    echo "--- rank 0 (exit $rc0):"
    cat "$OUT/rank0"
}

@test "a forged record claiming rank 1 does not take its place" {
    rank0 2 -- --timeout 10
    run "$TORCH_PYTHON" "$PEER" forge "$PORT" 1
    echo "$output"
    [ "$status" -eq 0 ]
    run doctor 1 2 -- --timeout 10
    echo "$output"
    wait_rank0
    [ "$status" -eq 0 ]
    [ "$rc0" -eq 0 ]
    grep -q 'ok: all 2 ranks on 1 node checked in, nothing wrong' "$OUT/rank0"
    grep -q 'note: 2 connections to MASTER_PORT closed without a record signed with this step.s key (from 127.0.0.1)' "$OUT/rank0"
    [[ -z $(grep forged "$OUT/rank0") ]]
}

@test "WORLD_SIZE + 64 idle connections do not shut the ranks out, and are counted" {
    rank0 2 -- --timeout 15
    "$TORCH_PYTHON" "$PEER" idle "$PORT" 66 12 "$OUT/idle.ready" >"$OUT/idle" &
    PIDS+=($!)
    local idle=$!
    # (rank 1 comes after all 66: the oldest of them gives way to it, not it to them)
    wait_ready "$OUT/idle.ready"
    run doctor 1 2 -- --timeout 10
    echo "$output"
    wait_rank0
    wait "$idle"
    cat "$OUT/idle"
    [ "$status" -eq 0 ]
    [ "$rc0" -eq 0 ]
    grep -q 'ok: all 2 ranks on 1 node checked in' "$OUT/rank0"
    grep -q 'note: 66 connections to MASTER_PORT closed without a record signed' "$OUT/rank0"
    grep -q '^idle: 66 of 66 closed by rank 0' "$OUT/idle"
}

# preflights WORLD N: N checks of WORLD ranks, one after another, each with a
# key of its own, as N steps would run them; fails at the first that does
# not pass on every rank, with what each rank said.
preflights() {
    local world=$1 n=$2 i r rc pids
    for ((i = 1; i <= n; i++)); do
        KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
        rank0 "$world" -- --timeout 20 || return 1
        pids=()
        for ((r = 1; r < world; r++)); do
            doctor "$r" "$world" -- --timeout 20 >"$OUT/rank$r" 2>&1 &
            pids+=($!)
        done
        rc=0
        for r in "${pids[@]}"; do
            wait "$r" || rc=1
        done
        wait_rank0 >"$OUT/rank0.all"
        if ((rc != 0 || rc0 != 0)); then
            echo "check $i of $n with $world ranks failed:"
            cat "$OUT/rank0.all"
            for ((r = 1; r < world; r++)); do
                echo "--- rank $r:" && cat "$OUT/rank$r"
            done
            return 1
        fi
    done
    echo "$n checks of $world ranks passed"
}

# churned_preflights PROCS: PROCS strangers churn connections to MASTER_PORT while 8
# checks of 2 ranks and 8 of 16 run.  (For what depends on no Slurm: once per run of
# the suite, on the host's generation.  The doctor that let strangers push out the
# oldest connection failed its first or second check.  The strangers run at the lowest
# priority: as fast as they can on an idle machine, and without taking the CPUs from
# the suite's other lanes, whose daemons and deadlines they starved at full speed.)
churned_preflights() {
    local procs=$1 j churners=()
    [[ ${SLURM_CHROOT_RUN:-} != 1 ]] || skip "the doctor's handshake is the same with every Slurm: run on the host's generation"
    for ((j = 0; j < procs; j++)); do
        nice -n 19 setpriv --reuid=nobody --regid=nogroup --clear-groups \
            "$TORCH_PYTHON" "$PEER" churn "$PORT" 100 300 >"$OUT/churn$j" &
        churners+=($!)
        PIDS+=($!)
    done
    for ((j = 0; j < procs; j++)); do
        wait_line "$OUT/churn$j" 'churn: started'
    done
    # (each waits for this, so that none takes the CPU from another's start)
    kill -USR1 "${churners[@]}"
    echo "# $procs stranger(s) churning"
    preflights 2 8
    preflights 16 8
    kill "${churners[@]}"
    wait "${churners[@]}" || true
    cat "$OUT"/churn*[0-9]
}

# (one test for each number of strangers: the three in one test took 273 to 300 s
# beside the other lanes and a build, against bats' 300-s bound)
@test "a stranger who churns connections to MASTER_PORT evicts no rank: 8 checks of 2 and of 16 ranks pass" {
    churned_preflights 1
}

@test "2 strangers who churn connections to MASTER_PORT evict no rank: 8 checks of 2 and of 16 ranks pass" {
    churned_preflights 2
}

@test "4 strangers who churn connections to MASTER_PORT evict no rank: 8 checks of 2 and of 16 ranks pass" {
    churned_preflights 4
}

@test "a connection that shows no signed record is closed within seconds" {
    rank0 2 -- --timeout 20
    run "$TORCH_PYTHON" "$PEER" idle "$PORT" 1 10
    echo "$output"
    # DOCTOR_HANDSHAKE_MS is 3 s: closed after it, long before rank 0's 20 s
    [[ $output =~ ^idle:\ 1\ of\ 1\ closed\ by\ rank\ 0,\ the\ first\ after\ ([0-9.]+)\ s ]]
    local after=${BASH_REMATCH[1]}
    [ "${after%.*}" -ge 2 ] && [ "${after%.*}" -le 5 ]
    run doctor 1 2 -- --timeout 10
    wait_rank0
    [ "$status" -eq 0 ]
    [ "$rc0" -eq 0 ]
    grep -q 'note: 1 connection to MASTER_PORT closed without a record signed' "$OUT/rank0"
}

@test "2,047 records that all claim one node: rank 0's checks stay cheap, and say so" {
    CPU_FILE=$OUT/rank0.cpu rank0 2048 SLURM_STEP_NODELIST='node[1-2]' \
        SLURM_STEP_TASKS_PER_NODE='1024(x2)' -- --timeout 120
    run "$TORCH_PYTHON" "$PEER" flood "$PORT" "$KEY" 2047 node1
    echo "$output"
    wait_rank0
    echo "rank 0's CPU: $(cat "$OUT/rank0.cpu") s"
    [ "$status" -eq 0 ]
    grep -q 'node1: 2048 tasks say they run here, but Slurm placed 1024 there' "$OUT/rank0"
    grep -q 'rank 1024 checked in from node1 (task 1024), but Slurm.s layout puts it on node2' \
        "$OUT/rank0"
    # (the pairs of 2,048 ranks took 19 s; 1,024's, parsed once, take well under one)
    awk '{ exit !($1 < 5) }' "$OUT/rank0.cpu"
}

@test "out of file descriptors with idle connections: rank 0 makes room, no busy loop" {
    CPU_FILE=$OUT/rank0.cpu NOFILE=20 rank0 2 -- --timeout 8
    "$TORCH_PYTHON" "$PEER" idle "$PORT" 40 6 "$OUT/idle.ready" >"$OUT/idle" &
    PIDS+=($!)
    # (the idle ones take every descriptor before rank 1 comes)
    wait_ready "$OUT/idle.ready"
    run doctor 1 2 -- --timeout 5
    echo "$output"
    wait_rank0
    echo "rank 0's CPU: $(cat "$OUT/rank0.cpu") s"
    [ "$status" -eq 0 ]
    [ "$rc0" -eq 0 ]
    awk '{ exit !($1 < 1) }' "$OUT/rank0.cpu"
}

@test "out of file descriptors with signed ranks only: accept pauses, no busy loop" {
    CPU_FILE=$OUT/rank0.cpu NOFILE=24 rank0 64 -- --timeout 3
    "$TORCH_PYTHON" "$PEER" hold "$PORT" "$KEY" 63 3.5 >"$OUT/hold" &
    PIDS+=($!)
    wait_rank0
    echo "rank 0's CPU: $(cat "$OUT/rank0.cpu") s"
    # not every rank fits: the check fails, after waiting quietly
    [ "$rc0" -eq 1 ]
    [[ $(cat "$OUT/rank0") =~ FAILED:\ [0-9]+\ problems?\;\ ([0-9]+)\ tasks\ of\ 64\ checked\ in ]]
    [ "${BASH_REMATCH[1]}" -ge 10 ] && [ "${BASH_REMATCH[1]}" -lt 64 ]
    awk '{ exit !($1 < 1) }' "$OUT/rank0.cpu"
}

@test "an impostor on MASTER_PORT learns nothing, and the rank does not run its program" {
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        "$TORCH_PYTHON" "$PEER" impostor "$PORT" 8 >"$OUT/heard" &
    PIDS+=($!)
    local i
    for ((i = 0; i < 100; i++)); do
        ss -Hltn "sport = :$PORT" | grep -q . && break
        sleep 0.1
    done
    run doctor 1 2 -- --timeout 6 --then touch "$OUT/ran"
    echo "$output"
    [ "$status" -eq 1 ]
    [ ! -e "$OUT/ran" ]
    [[ $output == *"rank 1 on node1: what answers at 127.0.0.1:$PORT did not prove it knows this step's key (DIST_TRAIN_STEP_KEY): something else listens on MASTER_PORT"*"nothing was sent to it"* ]]
    wait "${PIDS[-1]}" || true
    echo "the impostor heard: $(cat "$OUT/heard")"
    # the rank's hello, and nothing about it
    grep -q '^dist-train-doctor 3 hello [0-9a-f]\{32\} [0-9a-f]\{64\}$' "$OUT/heard"
    [[ -z $(grep 'node=\|cpus=\|rank=' "$OUT/heard") ]]
}

@test "a rank with another step's key: not counted, and both sides say why" {
    # (rank 0 waits out its deadline for the rank that is refused; 2 s was too short
    # for one exchange beside the other lanes)
    rank0 2 -- --timeout 6
    KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') run doctor 1 2 -- --timeout 6
    echo "$output"
    wait_rank0
    [ "$status" -eq 1 ]
    [[ $output == *"rank 0 at 127.0.0.1:$PORT refused our hello: this rank's DIST_TRAIN_STEP_KEY is not its step's key"*"nothing was sent to it"* ]]
    [ "$rc0" -eq 1 ]
    grep -q 'problem: rank 1 never checked in' "$OUT/rank0"
    grep -q 'note: 1 connection to MASTER_PORT closed without a record signed with this step.s key (from 127.0.0.1): not ranks of this step, or ranks with another step.s DIST_TRAIN_STEP_KEY' "$OUT/rank0"
}

@test "without DIST_TRAIN_STEP_KEY: the doctor says where the key comes from" {
    KEY='' run doctor 0 2 -- --timeout 5
    echo "$output"
    [ "$status" -eq 2 ]
    [[ $output == *"DIST_TRAIN_STEP_KEY is not set"*"srun --help | grep dist-train"*"openssl rand -hex 32"* ]]
    KEY=not-hex run doctor 1 2 -- --timeout 5
    [ "$status" -eq 2 ]
    [[ $output == *"DIST_TRAIN_STEP_KEY is not 64 hex digits"* ]]
}

@test "the program after --then gets the task's descriptor limit, not rank 0's raised one" {
    # shellcheck disable=SC2016 # the program after --then expands its own limits
    NOFILE=256:4096 run doctor 0 1 -- --timeout 5 --then sh -c 'echo "nofile $(ulimit -Sn):$(ulimit -Hn)"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"nofile 256:4096"* ]]
}
