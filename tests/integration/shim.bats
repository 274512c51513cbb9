#!/usr/bin/env bats
# shim.bats - libdtshim and its Python module on a 3-node cluster with --mpi=pmix: facts,
# every collective for every root and size, preemption, deadlines, the error without PMIx,
# a world of one without Slurm, inside an MPI program and a PyTorch gloo job.
# DTSHIM_TEST_MPI=pmi2 runs the same over Slurm's PMI-2 (srun --mpi=pmi2); what is PMIx's
# alone (its tree fence, OpenMPI) skips there, and what needs no server runs under pmix only.
# shellcheck disable=SC2016 # the tasks expand the variables of these bash -c programs

load helpers/common

SHIM_LIB="$TOP/shim/.libs/libdtshim.so.0"

setup_file() {
    [[ -f $SHIM_LIB ]] || { echo "build first: $SHIM_LIB is missing" >&2; return 1; }
    cluster_start 3
    # Nodes have a private /tmp; the cluster's state directory is shared with them.
    cc -Wall -Wextra -Wno-unused-parameter -Werror -o "$MINICLUSTER_DIR/shim_check" \
        "$BATS_TEST_DIRNAME/helpers/shim_check.c" -I"$TOP/shim" \
        -L"$TOP/shim/.libs" -Wl,-rpath,"$TOP/shim/.libs" -ldtshim
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
    CHECK=$MINICLUSTER_DIR/shim_check
    export DTSHIM_LIBRARY=$SHIM_LIB PYTHONPATH=$TOP/python
    export DTSHIM_TIMEOUT=60
    MPI=${DTSHIM_TEST_MPI:-pmix}
}

# The test needs the step's server: the plugin under test.
require_server() { require_mpi "$MPI"; }

# What only PMIx has.
pmix_only() {
    [[ $MPI == pmix ]] || skip "PMIx's alone: not over $MPI"
    require_mpi pmix
}

# What needs no server at all: once, in the pmix run (which 26.05, without mpi/pmix, still
# runs for these).
no_server() {
    [[ $MPI == pmix ]] || skip "needs no server: runs under DTSHIM_TEST_MPI=pmix"
}

# Lines of $output that start with $1, counted.
count() { grep -c "^$1" <<<"$output" || true; }

@test "facts from the server: ranks, local ranks, node ranks and the chief on 3 nodes" {
    require_server
    run timeout 60 srun --mpi="$MPI" -N3 -n6 --ntasks-per-node=2 "$CHECK" facts
    echo "$output"
    [ "$status" -eq 0 ]
    local addr r
    addr=$(node_addr node1)
    pmix=0
    [[ $MPI == pmix ]] && pmix=1
    for ((r = 0; r < 6; r++)); do
        grep -qx "rank=$r size=6 local_rank=$((r % 2)) local_size=2 node_rank=$((r / 2)) node_count=3 chief=node1 addr=$addr pmix=$pmix backend=$MPI" <<<"$output"
    done
}

@test "every collective, every rank as root, 0 B, 1 B, 4 KiB and 4 MiB (1 MiB over PMI-2), on 3 nodes" {
    require_server
    run timeout 120 srun --mpi="$MPI" -N3 -n6 --ntasks-per-node=2 "$CHECK" collectives 3
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: ok, 10 rounds')" -eq 6 ]
}

@test "30 rounds of every collective in a row on 2 nodes" {
    require_server
    run timeout 120 srun --mpi="$MPI" -N2 -n4 "$CHECK" collectives 10
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-3]: ok, 31 rounds')" -eq 4 ]
}

# What srun --dist-train=rank_order=topology sets, without the plugin: each task exports
# DIST_TRAIN_RANK_ORDER=topology and what the assignments $1 (of RANK and GROUP_RANK, from
# SLURM_PROCID and SLURM_NODEID) make, then runs the rest; srun takes "${ORDERED[@]}" first.
ordered() {
    ORDERED=(bash -c 'eval "$1"; export DIST_TRAIN_RANK_ORDER=topology RANK GROUP_RANK; shift; exec "$@"' ordered "$1")
}

# The order mode on $2 nodes of 2 tasks under the assignments $1: on every rank r, the tasks
# in rank order $3, the chief $4, and r's task and node rank the arithmetic $5 and $6 of r.
check_order() {
    local r n=$(($2 * 2))
    ordered "$1"
    # (the nodes named: a node still completing the last step would leave its place to
    # the next, and the chief expected is a name)
    run timeout 60 srun --mpi="$MPI" -w "node[1-$2]" -N"$2" -n"$n" --ntasks-per-node=2 "${ORDERED[@]}" \
        "$CHECK" order
    echo "$output"
    [ "$status" -eq 0 ] || return 1
    for ((r = 0; r < n; r++)); do
        grep -qx "rank $r task $(($5)): tasks in rank order $3, node $(($6)), chief $4" <<<"$output" || return 1
    done
}

@test "the plugin's rank order (DIST_TRAIN_RANK_ORDER=topology): rank, node rank, chief and every collective follow RANK" {
    require_server
    local pmix=0 addr r p
    [[ $MPI == pmix ]] && pmix=1
    # Tasks 0, 1 on node1 and 2, 3 on node2; RANK 3 - SLURM_PROCID puts rank 0 on node2,
    # which becomes node 0 and the chief. Local ranks keep their meaning (SLURM_LOCALID).
    ordered 'RANK=$((3 - SLURM_PROCID))'
    run timeout 60 srun --mpi="$MPI" -w "node[1-2]" -N2 -n4 --ntasks-per-node=2 "${ORDERED[@]}" "$CHECK" facts
    echo "$output"
    [ "$status" -eq 0 ]
    addr=$(node_addr node2)
    for ((r = 0; r < 4; r++)); do
        p=$((3 - r))
        grep -qx "rank=$r size=4 local_rank=$((p % 2)) local_size=2 node_rank=$((p < 2)) node_count=2 chief=node2 addr=$addr pmix=$pmix backend=$MPI" <<<"$output"
    done
    check_order 'RANK=$((3 - SLURM_PROCID))' 2 3,2,1,0 node2 '3 - r' 'r >= 2'
    # 3 nodes, ranks rotated: tasks 4, 5 (node3) hold ranks 0, 1; then every collective, every
    # root, in the same order.
    check_order 'RANK=$(((SLURM_PROCID + 2) % 6))' 3 4,5,0,1,2,3 node3 '(r + 4) % 6' 'r / 2'
    run timeout 120 srun --mpi="$MPI" -N3 -n6 --ntasks-per-node=2 "${ORDERED[@]}" "$CHECK" collectives 1
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: ok, 4 rounds')" -eq 6 ]
}

@test "the plugin's rank order: GROUP_RANK is taken as the plugin set it; Python sees the same order" {
    require_server
    # node1 (ranks 2, 3) says node 0: the plugin's word, though rank 0 is on node2
    check_order 'RANK=$((3 - SLURM_PROCID)) GROUP_RANK=$SLURM_NODEID' 2 3,2,1,0 node2 '3 - r' 'r < 2'
    local r
    run timeout 60 srun --mpi="$MPI" -w "node[1-2]" -N2 -n4 --ntasks-per-node=2 "${ORDERED[@]}" "$TORCH_PYTHON" -c '
import os, dtshim
ctx = dtshim.DistributedContext()
tasks = [int(b) for b in dtshim.allgather(os.environ["SLURM_PROCID"].encode())]
root = dtshim.broadcast(os.environ["SLURM_PROCID"].encode() if ctx.rank == 1 else None, 1)
print(f"python rank {ctx.rank} cross {ctx.cross_rank} tasks {tasks} root1 {root.decode()} chief {ctx.chief_host}")'
    echo "$output"
    [ "$status" -eq 0 ]
    for ((r = 0; r < 4; r++)); do
        grep -qx "python rank $r cross $((r < 2)) tasks \[3, 2, 1, 0\] root1 2 chief node2" <<<"$output"
    done
}

# Every task's dtshim_init fails at once with the same error, which names the problem and
# the fix: RANK given by $1 for each task.
check_bad_order() {
    local t0=$SECONDS
    ordered "$1"
    DTSHIM_TIMEOUT=30 run timeout 60 srun --mpi="$MPI" -K0 -N2 -n4 --ntasks-per-node=2 "${ORDERED[@]}" "$CHECK" init
    echo "$output"
    [ "$status" -ne 0 ] || return 1
    ((SECONDS - t0 < 20)) || { echo "took $((SECONDS - t0)) s"; return 1; }
    [ "$(count "dtshim_init: under DIST_TRAIN_RANK_ORDER=topology the tasks' RANK (and GROUP_RANK) must give each task its own rank and each node its own node rank: launch with srun --dist-train=rank_order=topology, which sets them, or unset DIST_TRAIN_RANK_ORDER: $2\$")" -eq 4 ]
}

@test "a rank order that is no permutation (a RANK twice, out of range, not a number): every task fails init with the fix, at once" {
    require_server
    check_bad_order 'RANK=$((SLURM_PROCID % 2))' "RANK=0 is claimed by tasks 0 and 2 (SLURM_PROCID)"
    check_bad_order 'RANK=$((SLURM_PROCID + 1))' "task 3 (SLURM_PROCID) has a RANK that is not a number in 0..3"
    check_bad_order 'RANK=$SLURM_PROCID; ((SLURM_PROCID == 1)) && RANK=one' "task 1 (SLURM_PROCID) has a RANK that is not a number in 0..3"
    check_bad_order 'RANK=$SLURM_PROCID GROUP_RANK=0' "GROUP_RANK=0 is claimed by two nodes (task 2, SLURM_PROCID, is on the second)"
}

@test "a 128-byte unique id (as an ncclUniqueId) reaches every rank; a failed one is an error everywhere" {
    require_server
    run timeout 60 srun --mpi="$MPI" -N3 -n6 "$CHECK" unique-id 1
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: same id')" -eq 6 ]
    [ "$(grep -o 'same id [0-9a-f]*' <<<"$output" | sort -u | wc -l)" -eq 1 ]
    run timeout 60 srun --mpi="$MPI" -N3 -n6 "$CHECK" unique-id 0
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: no id, as expected')" -eq 6 ]
}

@test "several ids from several roots (ncclCommInitRankScalable's); a failed root is an error everywhere" {
    require_server
    run timeout 60 srun --mpi="$MPI" -N3 -n6 "$CHECK" unique-ids 3 -1
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: 3 ids from their roots')" -eq 6 ]
    # roots are spread: ranks 0, 2 and 4
    [ "$(count 'rank [024]: 3 ids from their roots (one is mine)')" -eq 3 ]
    run timeout 60 srun --mpi="$MPI" -N3 -n6 "$CHECK" unique-ids 3 2
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: no ids, as expected')" -eq 6 ]
}

@test "ranks that pass different sizes or call different collectives all get an error, and go on" {
    require_server
    run timeout 60 srun --mpi="$MPI" -N3 -n6 "$CHECK" misuse
    echo "$output"
    [ "$status" -eq 0 ]
    # DTSHIM_ERR_SIZE (-7), DTSHIM_ERR_MISMATCH (-8), then a correct call succeeds
    [ "$(count 'rank [0-5]: size=-7 op=-8 after=0$')" -eq 6 ]
}

# Start a preempt step in the background, wait for every task's pid, send $1 to rank $2
# (or with scancel to the whole step when $2 is "step"); the words after it run the program.
preempt_one_task() {
    local sig=$1 victim=$2 dir=$MINICLUSTER_DIR/preempt.$BATS_TEST_NUMBER i
    shift 2
    rm -rf "$dir" && mkdir -p "$dir"
    timeout 120 srun --mpi="$MPI" -N3 -n6 "$@" "$CHECK" preempt "$dir" >"$dir/out" 2>&1 &
    local srun_pid=$!
    for ((i = 0; i < 300; i++)); do
        [[ $(find "$dir" -name 'pid.*' | wc -l) -eq 6 ]] && break
        sleep 0.1
    done
    sleep 0.5 # a few training steps
    if [[ $victim == step ]]; then
        scancel --signal="$sig" "$(squeue -h -s -o %i | grep -v '\.extern$' | head -1)"
    else
        kill "-$sig" "$(cat "$dir/pid.$victim")"
    fi
    wait "$srun_pid"
    status=$?
    output=$(cat "$dir/out")
}

@test "SIGUSR2 to one task: every rank stops at the same step; the program's own handler ran" {
    require_server
    preempt_one_task USR2 4
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: stopped at step')" -eq 6 ]
    [ "$(grep -o 'stopped at step [0-9]*' <<<"$output" | sort -u | wc -l)" -eq 1 ]
    grep -q '^rank 4: stopped at step [0-9]* requested=1 chained=1$' <<<"$output"
    [ "$(count 'rank [0-5]: .*requested=0 chained=0$')" -eq 5 ]
}

@test "the plugin's rank order: SIGUSR2 to one task, every rank stops at the same step" {
    require_server
    # Each rank looks for the others' requests by the transport's ranks, all but its own:
    # rank 4 (task 1) asks, and rank 1 (task 4) must see it.
    ordered 'RANK=$((5 - SLURM_PROCID))'
    preempt_one_task USR2 4 "${ORDERED[@]}"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: stopped at step')" -eq 6 ]
    [ "$(grep -o 'stopped at step [0-9]*' <<<"$output" | sort -u | wc -l)" -eq 1 ]
    grep -q '^rank 4: stopped at step [0-9]* requested=1 chained=1$' <<<"$output"
}

@test "2000 preemption decisions in a row (600 over PMI-2): the right answer at every call on every rank" {
    require_server
    # A PMI-2 fence costs far more than a PMIx one (scripts/bench-shim measures both):
    # fewer calls, the same checks.
    local calls=2000 at=1500
    [[ $MPI == pmi2 ]] && calls=600 at=450
    run timeout 240 srun --mpi="$MPI" -N3 -n6 "$TORCH_PYTHON" \
        "$TOP/tests/integration/helpers/shim_votes.py" "$calls" 4 "$at"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count "rank [0-5]: first true at $at\$")" -eq 6 ]
}

@test "300 decisions under stress (150 over PMI-2): a random rank signals at a random step, mixed and ring fences (PMIx), 2 and 3 nodes" {
    require_server
    # the short form of scripts/stress-preempt (2,000 and more outside the suite); over
    # PMI-2, whose fence costs 30 times PMIx's here, 150
    local decisions=300
    [[ $MPI == pmi2 ]] && decisions=150
    run timeout 280 "$TOP/scripts/stress-preempt" --running --mpi "$MPI" "$decisions" 2 3
    echo "$output"
    [ "$status" -eq 0 ]
    local cases='fence \(mixed\|ring\)' want=4
    [[ $MPI == pmi2 ]] && cases=pmi2 want=2
    [ "$(grep -c "^[23] nodes, $cases: [0-9]* runs, [0-9]* decisions, 0 disagreements, 0 failed runs, " <<<"$output")" -eq "$want" ]
}

@test "scancel --signal=USR2 of the step: every rank stops at the same step" {
    require_server
    preempt_one_task USR2 step
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: stopped at step [0-9]* requested=1 chained=1$')" -eq 6 ]
    [ "$(grep -o 'stopped at step [0-9]*' <<<"$output" | sort -u | wc -l)" -eq 1 ]
}

@test "SIGTERM to one task: recorded, every rank stops at the same step and exits 0" {
    require_server
    preempt_one_task TERM 1
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'rank [0-5]: stopped at step')" -eq 6 ]
    [ "$(grep -o 'stopped at step [0-9]*' <<<"$output" | sort -u | wc -l)" -eq 1 ]
    grep -q '^rank 1: stopped at step [0-9]* requested=1' <<<"$output"
}

@test "the first SIGTERM is recorded, a second ends the program as SIG_DFL would" {
    no_server
    local dir=$BATS_TEST_TMPDIR i
    env -u PMIX_NAMESPACE -u SLURM_STEP_NUM_TASKS "$CHECK" idle "$dir" >"$dir/out" 2>&1 &
    local pid=$!
    for ((i = 0; i < 100; i++)); do [[ -f $dir/pid.0 ]] && break; sleep 0.1; done
    kill -TERM "$pid"
    sleep 0.5
    kill -0 "$pid" # still running after the first
    kill -TERM "$pid"
    local rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 143 ] # 128 + SIGTERM: killed by the signal, as without the shim
}

@test "a killed peer: no hang; the others time out within the deadline unless Slurm ends the step first" {
    require_server
    local t0=$SECONDS
    DTSHIM_TIMEOUT=5 run timeout 60 srun --mpi="$MPI" -K0 -N3 -n6 "$CHECK" deadline 4 kill
    echo "$output"
    ((SECONDS - t0 < 20))
    # Slurm's PMIx plugin may cancel the step when a client dies before PMIx_Finalize.
    if [[ $output != *"CANCELLED"* ]]; then
        [ "$(count 'rank [0-5]: allgather returned -4 .* after [5-9]\.[0-9] s; then -5$')" -eq 5 ]
    fi
    [ "$(count 'rank [0-5]: allgather returned 0')" -eq 0 ]
}

@test "a stopped peer: the others get a timeout within the deadline" {
    require_server
    local t0=$SECONDS
    DTSHIM_TIMEOUT=5 run timeout 60 srun --mpi="$MPI" -K0 -W5 -N3 -n6 "$CHECK" deadline 2 stop
    echo "$output"
    ((SECONDS - t0 < 30))
    [ "$(count 'rank [0-5]: allgather returned -4 .* after [5-9]\.[0-9] s; then -5$')" -eq 5 ]
}

# A late rank alone on its node (-n3: ranks 0-1 on node1, rank 2 on node2), then sharing
# its node (-n4: rank 3 with rank 2): $1 runs as "$1 VICTIM MS" in every task. The steps run
# Slurm's default fence, "mixed" (the cluster's mpi.conf says ring): there a fence without
# data is Slurm's tree fence, which on a step of fewer nodes than TreeWidth does not wait.
late_layouts() {
    local layout victim
    for layout in 3 4; do
        victim=$((layout - 1))
        SLURM_PMIX_FENCE=mixed run timeout 60 srun --mpi="$MPI" -K0 -N2 -n"$layout" "$@" "$victim" "$LATE_MS"
        echo "-n$layout: $output"
        check_late "$victim" "$layout" || return 1
    done
}

# Every rank but the late one (rank $1 of $2, 3 s late) returned from the barrier when it
# arrived: a fence without data collection may complete at once on every rank (Slurm's
# tree fence, above), and a barrier must not.  (Not before 2.5 s; and within 2 s of the
# late rank, far from the 300-s deadline a barrier that missed it would wait for: the
# ranks' starts differ, and the last fence took 0.5 s beside the other lanes.)
check_late_wait() {
    local r t others=0
    for ((r = 0; r < $2; r++)); do
        ((r == $1)) && continue
        t=$(sed -n "s/^rank $r: barrier returned 0 after \([0-9.]*\) s; then 0\$/\1/p" <<<"$output")
        [[ -n $t ]] || { echo "rank $r: no OK barrier"; return 1; }
        awk -v t="$t" 'BEGIN { exit !(t >= 2.5 && t <= 5) }' || { echo "rank $r waited $t s"; return 1; }
        others=$((others + 1))
    done
    ((others == $2 - 1))
}

check_late_timeout() {
    local r t others=0
    for ((r = 0; r < $2; r++)); do
        ((r == $1)) && continue
        # DTSHIM_ERR_TIMEOUT (-4) within the 2 s deadline, then DTSHIM_ERR_BROKEN (-5)
        t=$(sed -n "s/^rank $r: barrier returned -4 after \([0-9.]*\) s; then -5\$/\1/p" <<<"$output")
        [[ -n $t ]] || { echo "rank $r: no timeout"; return 1; }
        awk -v t="$t" 'BEGIN { exit !(t >= 1.9 && t <= 2.5) }' || { echo "rank $r: timeout after $t s"; return 1; }
        others=$((others + 1))
    done
    ((others == $2 - 1))
}

@test "a late rank, alone on its node and sharing it: dtshim_barrier waits for it" {
    require_server
    LATE_MS=3000
    check_late() { check_late_wait "$@"; }
    late_layouts "$CHECK" late
    # The Python module makes the same C calls: once, over PMIx.
    [[ $MPI == pmi2 ]] && return
    late_layouts "$TORCH_PYTHON" "$TOP/tests/integration/helpers/shim_late.py"
}

@test "a rank later than the deadline: the others' barrier times out within it, then BROKEN" {
    require_server
    LATE_MS=4000
    check_late() { check_late_timeout "$@"; }
    DTSHIM_TIMEOUT=2 late_layouts "$CHECK" late
    [[ $MPI == pmi2 ]] && return
    DTSHIM_TIMEOUT=2 late_layouts "$TORCH_PYTHON" "$TOP/tests/integration/helpers/shim_late.py"
}

@test "Slurm's tree fence (SLURM_PMIX_FENCE or mpi.conf): dtshim_init refuses it with the fix, on several nodes only" {
    pmix_only
    local msg="dtshim_init: Slurm's PMIx tree fence does not wait for the other nodes of this step: run it with SLURM_PMIX_FENCE=ring (or mixed, Slurm's default)"
    SLURM_PMIX_FENCE=tree run timeout 60 srun --mpi="$MPI" -K0 -N2 -n3 "$CHECK" init
    echo "$output"
    [ "$status" -ne 0 ]
    [ "$(count "$msg: SLURM_PMIX_FENCE=tree$")" -eq 3 ]
    # The same from mpi.conf beside the slurm.conf the tasks are told of (Slurm itself still
    # runs the cluster's ring: only the shim reads this one).
    mkdir -p "$MINICLUSTER_DIR/treeconf"
    printf '# a site that chose the tree\nPMIxCollFence = tree\n' >"$MINICLUSTER_DIR/treeconf/mpi.conf"
    run timeout 60 srun --mpi="$MPI" -K0 -N2 -n2 env SLURM_CONF="$MINICLUSTER_DIR/treeconf/slurm.conf" "$CHECK" init
    echo "$output"
    [ "$status" -ne 0 ]
    [ "$(count "$msg: PMIxCollFence=tree in $MINICLUSTER_DIR/treeconf/mpi.conf$")" -eq 2 ]
    # From Python: DtshimError with the same text.
    SLURM_PMIX_FENCE=tree run timeout 60 srun --mpi="$MPI" -K0 -N2 -n2 "$TORCH_PYTHON" -c '
import dtshim
try:
    dtshim.init()
except dtshim.DtshimError as e:
    print("python:", e.status, e)'
    echo "$output"
    [ "$(count "python: -16 dtshim_init: Slurm's PMIx tree fence does not wait")" -eq 2 ]
    # One node has no fence to miss; ring and mixed are what Slurm's fence waits with.
    SLURM_PMIX_FENCE=tree run timeout 60 srun --mpi="$MPI" -N1 -n2 "$CHECK" init
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'dtshim_init: success$')" -eq 2 ]
    for f in ring mixed; do
        SLURM_PMIX_FENCE=$f run timeout 60 srun --mpi="$MPI" -N2 -n2 "$CHECK" init
        [ "$status" -eq 0 ] && [ "$(count 'dtshim_init: success$')" -eq 2 ]
    done
}

@test "DTSHIM_ABORT_ON_TIMEOUT=1: a timeout ends the whole step" {
    require_server
    local t0=$SECONDS
    DTSHIM_TIMEOUT=5 DTSHIM_ABORT_ON_TIMEOUT=1 run timeout 60 \
        srun --mpi="$MPI" -K0 -N3 -n6 "$CHECK" deadline 2 stop
    echo "$output"
    [ "$status" -ne 0 ]
    ((SECONDS - t0 < 30))
}

@test "dtshim_abort on one rank ends every task of the step, at once" {
    require_server
    local t0=$SECONDS
    run timeout 60 srun --mpi="$MPI" -K0 -N3 -n6 "$CHECK" abort 4
    echo "$output"
    [ "$status" -ne 0 ]
    ((SECONDS - t0 < 30))
    [ "$(count 'rank [0-5]: ready$')" -eq 6 ]
    [ "$(count 'FAIL')" -eq 0 ]
}

@test "--mpi=none with several tasks: an error that names srun --mpi=pmix and --mpi=pmi2" {
    no_server
    run timeout 60 srun --mpi=none -N2 -n2 "$CHECK" init
    echo "$output"
    [ "$status" -ne 0 ]
    [ "$(count 'dtshim_init: no PMIx or PMI-2 server in this Slurm step: launch it with srun --mpi=pmix or srun --mpi=pmi2 (or set MpiDefault=pmix in slurm.conf)')" -eq 2 ]
}

@test "no Slurm at all: a world of one where every collective works" {
    no_server
    run env -u PMIX_NAMESPACE -u SLURM_STEP_NUM_TASKS "$CHECK" facts
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == "rank=0 size=1 local_rank=0 local_size=1 node_rank=0 node_count=1 chief=$(hostname) addr="*" pmix=0 backend=none" ]]
    run env -u PMIX_NAMESPACE -u SLURM_STEP_NUM_TASKS "$CHECK" collectives 2
    [ "$status" -eq 0 ]
    run env -u PMIX_NAMESPACE -u SLURM_STEP_NUM_TASKS "$TORCH_PYTHON" -c '
import dtshim
dtshim.init()
assert (dtshim.rank(), dtshim.size()) == (0, 1)
assert dtshim.allgather(b"x") == [b"x"] and dtshim.broadcast(b"y") == b"y"
assert dtshim.gather(b"") == [b""] and dtshim.should_preempt() is False
print("world of one")'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "world of one" ]
}

@test "inside an OpenMPI (mpi4py) program: dtshim and MPI share PMIx and agree" {
    pmix_only
    run timeout 240 srun --mpi="$MPI" -N3 -n6 "$TORCH_PYTHON" "$TOP/tests/integration/helpers/shim_mpi.py"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'ok rank=[0-5] size=6')" -eq 6 ]
}

@test "the Python module in a PyTorch gloo job: port shared over the server, preemption at the same step" {
    require_server
    run timeout 240 srun --mpi="$MPI" -N2 -n4 "$TORCH_PYTHON" "$TOP/tests/integration/helpers/shim_torch.py"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(count 'ok rank=[0-3] sum=10 stopped=3 nodes=2')" -eq 4 ]
}
