# common.bash - helpers for the integration tests on the local Slurm cluster.
# shellcheck shell=bash

TOP=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
MINICLUSTER="$TOP/scripts/minicluster"
PLUGIN_SO="$TOP/spank/.libs/dist_train.so"
TASK_ENV="$TOP/tests/integration/helpers/task-env"
# A rank's program in the usual bash wrapper (exits 143 when stopped).
# shellcheck disable=SC2034 # for the .bats files that load this
TERM_WRAPPER="$TOP/tests/integration/helpers/term-wrapper"
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}

# Start a cluster of $1 nodes with the plugin from the build tree; $2... are
# more options of minicluster start.
cluster_start() {
    [[ -f $PLUGIN_SO ]] || { echo "build first: $PLUGIN_SO is missing" >&2; return 1; }
    "$MINICLUSTER" stop >/dev/null 2>&1 || true
    "$MINICLUSTER" start --nodes "$1" --plugin "$PLUGIN_SO" "${@:2}" >&2
    eval "$("$MINICLUSTER" env)"
}

# The test cluster's GPU nodes: $1 nodes of this machine's 2 CPUs with 4
# placeholder GPUs each, described by tests/topologies/minicluster-4gpu.xml.
# shellcheck disable=SC2034 # for the .bats files that load this
GPU_XML="$TOP/tests/topologies/minicluster-4gpu.xml"

# Point plugstack.conf at the plugin with the arguments $2...; starts a GPU
# cluster of $1 nodes, or only replaces plugstack.conf when it runs.
gpu_cluster_plugstack() {
    local nodes=$1
    shift
    [[ -f $PLUGIN_SO ]] || { echo "build first: $PLUGIN_SO is missing" >&2; return 1; }
    printf 'required %s %s\n' "$PLUGIN_SO" "$*" > "$BATS_FILE_TMPDIR/plugstack.conf"
    "$MINICLUSTER" start --nodes "$nodes" --cpus 2 --gpus 4 \
        --plugstack "$BATS_FILE_TMPDIR/plugstack.conf" >&2
}

cluster_stop() {
    "$MINICLUSTER" stop >&2
}

# For the files whose steps an ordinary user runs: user_file_setup NAME makes
# the user NAME (unless it exists) and USER_DIR, a directory outside /tmp
# (each node has its own) that the user can read, with the cluster's state in
# it.  srun loads the plugin as the user, slurmstepd reads the topology as
# the user, and srun reads slurm.conf: all from there, since the checkout
# may not be readable (a clone under Debian 12's /root, which is 0700).
# user_file_teardown NAME stops the cluster and removes what setup made.
user_file_setup() {
    if ! id "$1" >/dev/null 2>&1; then
        useradd --no-create-home --shell /bin/bash "$1"
        echo 1 >"$BATS_FILE_TMPDIR/made_user"
    fi
    "$MINICLUSTER" stop >/dev/null 2>&1 || true
    USER_DIR=$(mktemp -d -p /var/tmp dist-train-test.XXXXXX)
    chmod 755 "$USER_DIR"
    export USER_DIR MINICLUSTER_DIR=$USER_DIR/cluster
}

user_file_teardown() {
    [[ -n ${USER_DIR:-} ]] || return 0
    "$MINICLUSTER" stop >&2 || true
    rm -rf --one-file-system "$USER_DIR"
    if [[ -f $BATS_FILE_TMPDIR/made_user ]]; then
        userdel "$1" || true
    fi
}

# Value of KEY in a task-env line.
field() {
    local line=$1 key=$2 kv
    for kv in $line; do
        [[ $kv == "$key="* ]] && { printf '%s\n' "${kv#*=}"; return 0; }
    done
    return 1
}

# The address Slurm knows for a node.
node_addr() {
    scontrol show node "$1" -o | tr ' ' '\n' | sed -n 's/^NodeAddr=//p'
}

# node_logs_on_failure [LINES]: in a teardown, after a test that failed, the last
# LINES (default 60) of slurmctld's log and of each node's slurmd log, for a
# failure that does not come back when the test runs alone.
# Cut node $1 off from the other nodes of a cluster of $2 (blackhole routes in
# its namespace to their addresses), and let it back (node_uncut, which may run
# when it was never cut).
node_cut() {
    local n
    for n in $(seq "$2"); do
        [[ node$n == "$1" ]] || ip -n "dt-$1" route add blackhole "$(node_addr "node$n")/32"
    done
}

node_uncut() {
    local n
    for n in $(seq "$2"); do
        ip -n "dt-$1" route del blackhole "$(node_addr "node$n")/32" 2>/dev/null || true
    done
}

node_logs_on_failure() {
    [[ -z ${BATS_TEST_COMPLETED:-} ]] || return 0
    local lines=${1:-60} log
    for log in "$MINICLUSTER_DIR"/slurmctld/slurmctld.log "$MINICLUSTER_DIR"/nodes/*/slurmd.log; do
        [[ -f $log ]] || continue
        echo "--- the last $lines lines of $log" >&2
        tail -n "$lines" -- "$log" >&2
    done
}

# hold_port NODE PORT SECONDS: a process on NODE that listens on PORT for SECONDS, its
# pid in HOLDER (the caller kills it); returns once it listens.  A step started before
# then would find the port free: a Python start takes seconds on a busy machine.
hold_port() {
    # (the cluster's directory: a node has a /tmp of its own)
    local node=$1 port=$2 seconds=$3 ready="$MINICLUSTER_DIR/listening-$2"
    rm -f "$ready"
    timeout $((seconds + 10)) "$MINICLUSTER" exec --node "$node" -- "$TORCH_PYTHON" -c '
import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen()
open(sys.argv[2], "w").close(); time.sleep(float(sys.argv[3]))' "$port" "$ready" "$seconds" &
    HOLDER=$!
    for _ in $(seq 300); do
        [[ -e $ready ]] && return 0
        kill -0 "$HOLDER" 2>/dev/null || break
        sleep 0.1
    done
    echo "nothing listens on $node's port $port after 30 s" >&2
    return 1
}

# Run task-env in a step; one line per task, sorted by rank, in $lines.
step_env() {
    local out
    out=$(timeout 60 srun "$@" "$TASK_ENV") || { echo "srun $* failed" >&2; return 1; }
    mapfile -t lines < <(sort -t= -k2 -n <<<"$out")
}

# run_lines CMD...: the lines of its tasks that start with RANK=, sorted by rank,
# in $lines; its stderr in $err.  Fails, showing stderr, when CMD fails.  (Its
# bound is twice the slowest such step on a busy machine: torchrun's nine
# PyTorch processes have taken 120 s.)
run_lines() {
    local out
    out=$(timeout 240 "$@" 2>"$BATS_TEST_TMPDIR/err") || {
        cat "$BATS_TEST_TMPDIR/err" >&2
        echo "failed: $*" >&2
        return 1
    }
    # shellcheck disable=SC2034 # for the caller, as $lines
    err=$(cat "$BATS_TEST_TMPDIR/err")
    mapfile -t lines < <(grep '^RANK=' <<<"$out" | sort -t= -k2 -n)
    printf '%s\n' "${lines[@]}"
}

# Check every task line of a step of $1 nodes and $2 tasks against Slurm's
# facts and the layout's invariants; print what is wrong and fail.
check_layout() {
    local nodes=$1 ntasks=$2 line host rank master_host="" port="" runid=""
    local -A per_host=() seen_rank=() local_ranks=()
    [[ ${#lines[@]} -eq $ntasks ]] || { echo "expected $ntasks tasks, got ${#lines[@]}" >&2; return 1; }
    for line in "${lines[@]}"; do
        host=$(field "$line" HOST)
        per_host[$host]=$(( ${per_host[$host]:-0} + 1 ))
    done
    [[ ${#per_host[@]} -eq $nodes ]] || { echo "expected $nodes nodes, got ${!per_host[*]}" >&2; return 1; }
    # GROUP_RANK numbers the nodes by the first rank each runs (torchrun's node 0 is rank 0's)
    local -A first_rank=() node_rank=()
    for line in "${lines[@]}"; do
        host=$(field "$line" HOST)
        rank=$(field "$line" SLURM_PROCID)
        if [[ -z ${first_rank[$host]:-} ]] || ((rank < first_rank[$host])); then first_rank[$host]=$rank; fi
    done
    local i=0
    while read -r _ host; do node_rank[$host]=$((i++)); done < <(for host in "${!first_rank[@]}"; do
        echo "${first_rank[$host]} $host"
    done | sort -n)
    for line in "${lines[@]}"; do
        host=$(field "$line" HOST)
        rank=$(field "$line" RANK)
        expect_eq "$line" RANK "$(field "$line" SLURM_PROCID)" || return 1
        expect_eq "$line" LOCAL_RANK "$(field "$line" SLURM_LOCALID)" || return 1
        expect_eq "$line" GROUP_RANK "${node_rank[$host]}" || return 1
        expect_eq "$line" NODE_RANK "${node_rank[$host]}" || return 1
        expect_eq "$line" WORLD_SIZE "$ntasks" || return 1
        expect_eq "$line" ROLE_WORLD_SIZE "$ntasks" || return 1
        expect_eq "$line" ROLE_RANK "$rank" || return 1
        expect_eq "$line" ROLE_NAME default || return 1
        expect_eq "$line" GROUP_WORLD_SIZE "$nodes" || return 1
        expect_eq "$line" LOCAL_WORLD_SIZE "${per_host[$host]}" || return 1
        [[ -z ${seen_rank[$rank]:-} ]] || { echo "rank $rank twice" >&2; return 1; }
        seen_rank[$rank]=1
        local_ranks[$host]+=" $(field "$line" LOCAL_RANK)"
        [[ $rank == 0 ]] && master_host=$host
        port=${port:-$(field "$line" MASTER_PORT)}
        expect_eq "$line" MASTER_PORT "$port" || return 1
        runid=${runid:-$(field "$line" TORCHELASTIC_RUN_ID)}
        expect_eq "$line" TORCHELASTIC_RUN_ID "$runid" || return 1
    done
    # ranks are 0..n-1; local ranks on each node are 0..k-1
    for ((rank = 0; rank < ntasks; rank++)); do
        [[ -n ${seen_rank[$rank]:-} ]] || { echo "rank $rank missing" >&2; return 1; }
    done
    for host in "${!local_ranks[@]}"; do
        local want
        want=$(seq 0 $(( per_host[$host] - 1 )) | tr '\n' ' ')
        [[ $(tr ' ' '\n' <<<"${local_ranks[$host]}" | sed '/^$/d' | sort -n | tr '\n' ' ') == "$want" ]] \
            || { echo "local ranks on $host: ${local_ranks[$host]}, want $want" >&2; return 1; }
    done
    ((port >= 20000 && port <= 32767)) || { echo "MASTER_PORT $port outside 20000-32767" >&2; return 1; }
    # MASTER_ADDR: the numeric address of the node that runs rank 0
    local addr
    addr=$(node_addr "$master_host")
    [[ -n $addr ]] || { echo "no NodeAddr for $master_host" >&2; return 1; }
    for line in "${lines[@]}"; do
        expect_eq "$line" MASTER_ADDR "$addr" || return 1
    done
}

# The version of the Slurm headers the build uses, from slurm/slurm_version.h, as
# slurm.pc's Version has it (22.05.8); the release (22.05); and the release after
# one (22.05 -> 22.06), the upper bound of the packages' pin.
slurm_header_version() {
    local v
    v=$(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\([0-9a-f]*\)$/\1/p' /usr/include/slurm/slurm_version.h)
    [[ -n $v ]] || { echo "no SLURM_VERSION_NUMBER in /usr/include/slurm/slurm_version.h" >&2; return 1; }
    v=$((16#$v))
    printf '%d.%02d.%d\n' $((v >> 16)) $(((v >> 8) & 0xff)) $((v & 0xff))
}
slurm_release() {
    local v
    v=$(slurm_header_version) || return 1
    echo "${v%.*}"
}
# The release as a number (22.05 -> 2205), for comparisons.
slurm_release_number() {
    local r
    r=$(slurm_release) && echo $((10#${r/./}))
}
next_release() { printf '%d.%02d\n' "${1%%.*}" $((10#${1#*.} + 1)); }

# leftovers_of PATTERN: fails, naming them, when processes whose command line
# has PATTERN are still alive 10 s on (the nodes share this PID namespace, so a
# step's leftovers on any node show here).
leftovers_of() {
    local i
    for i in $(seq 50); do
        pgrep -f "$1" >/dev/null || return 0
        sleep 0.2
    done
    pgrep -af "$1" >&2
    return 1
}

# refute CMD...: succeed only when CMD fails.  (In a bats test, a line `! CMD` never
# fails the test: errexit ignores a negated command.)
refute() {
    if "$@"; then
        echo "this should have failed: $*" >&2
        return 1
    fi
    return 0
}

expect_eq() {
    local line=$1 key=$2 want=$3 got
    got=$(field "$line" "$key") || got="(unset)"
    [[ $got == "$want" ]] && return 0
    echo "$key=$got, want $want in: $line" >&2
    return 1
}

# Replace a node's /etc/hosts for the rest of the file's tests.  The node
# sees the file through a bind mount, so write it in place (same inode).
node_hosts_set() {
    local node=$1 content
    content=$(cat)
    printf '%s\n' "$content" > "$MINICLUSTER_DIR/nodes/$node/hosts"
}

node_hosts_get() {
    cat "$MINICLUSTER_DIR/nodes/$1/hosts"
}

# Run a batch script (from stdin) in the cluster and wait; its output in $output.
# Fails when the job did not end with status 0, as sbatch --wait does; but it
# waits on the job itself, every 0.2 s, where sbatch --wait looks after 2 s, 10 s
# and then every 32 s (a job of 12 s would cost 42).  A job is over once its
# batch script is (COMPLETING too: a node whose slurmd is gone stays completing
# until slurmctld gives up on it).
sbatch_wait() {
    local script="$MINICLUSTER_DIR/job.$BATS_TEST_NUMBER.sh" out="$MINICLUSTER_DIR/job.$BATS_TEST_NUMBER.out"
    local job info state='' over='' deadline=$((SECONDS + 120))
    cat > "$script"
    rm -f "$out"
    job=$(cd "$MINICLUSTER_DIR" && timeout 30 sbatch --parsable -o "$out" "$@" "$script") || return 1
    job=${job%%;*}
    while [[ -z $over ]] && ((SECONDS < deadline)); do
        info=$(timeout 30 scontrol show job -o "$job" 2>/dev/null) || true
        state=$(sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p' <<<"$info")
        [[ -z $state || $state =~ ^(PENDING|CONFIGURING|RUNNING|SUSPENDED|REQUEUED|RESIZING)$ ]] || over=1
        [[ -n $over ]] || sleep 0.2
    done
    output=$(cat "$out" 2>/dev/null)
    [[ -n $over ]] || { echo "job $job not over after 120 s (${state:-no state})" >&2; return 1; }
    [[ $state =~ ^(COMPLETED|COMPLETING)$ && $info == *" ExitCode=0:0 "* ]] ||
        { echo "job $job: $state, $(grep -o 'ExitCode=[0-9:]*' <<<"$info")" >&2; return 1; }
}

# Skip the test where this Slurm has no mpi/$1 plugin (default pmix; Debian
# forky's 26.05 ships no mpi/pmix): what needs srun --mpi=pmix (PMIx clients,
# MPI programs, the shim over PMIx) cannot run there.  Asks srun --mpi=list
# once per bats run, with the cluster of $SLURM_CONF, else of $CLUSTER_DIR;
# when srun cannot answer, nothing is skipped and the test fails on its own.
# Whether this Slurm has mpi/$1; the list and version in $mpi_list.
has_mpi() {
    local cache=$BATS_RUN_TMPDIR/srun-mpi-list conf=${SLURM_CONF:-${CLUSTER_DIR:+$CLUSTER_DIR/slurm.conf}} out
    if [[ ! -s $cache ]]; then
        out=$(SLURM_CONF=$conf timeout 30 srun --mpi=list 2>&1) || return 0
        # srun --version (24.11 and later) also wants the cluster's slurm.conf
        printf '%s: %s\n' "$(SLURM_CONF=$conf timeout 10 srun --version 2>/dev/null)" \
            "$(grep -v '^MPI plugin' <<<"$out" | tr -s ' \t\n' ' ')" >"$cache"
    fi
    mpi_list=$(cat "$cache")
    grep -qw "$1" <<<"$mpi_list"
}

require_mpi() {
    local want=${1:-pmix}
    has_mpi "$want" || skip "no mpi/$want plugin in this Slurm, $mpi_list(srun --mpi=list)"
}

require_pmix() { require_mpi pmix; }

# The states of the nodes $@ (sorted, each once, comma-separated) once all
# are idle, or after 60 s: a node is still completing for a moment after its
# step's srun has returned.
settled_states() {
    local nodes states i
    nodes=$(IFS=,; echo "$*")
    for ((i = 0; i < 300; i++)); do
        states=$(timeout 30 sinfo -h -N -o %T -n "$nodes" | sort -u | paste -sd,)
        [[ $states == idle ]] && break
        sleep 0.2
    done
    echo "$states"
}

# The removal tests of both kinds of package (install.bats, rpm.bats). The admin enabled
# the plugin with $LINK; admin_leftovers SNIPPET leaves beside it what removal must name
# and leave alone: an edited copy of SNIPPET at $COPY (optional, so that Slurm skips the
# plugin once it is gone) and another package's link that dangles already at $DANGLING.
admin_leftovers() {
    sed 's/^required /optional /' "$1" >"$COPY"
    ln -sfn /usr/share/no-such-package/plugin.conf "$DANGLING"
}

# removal_checked: $output, the removal's, says it removed $LINK and names $COPY and
# $DANGLING, which are still there; $LINK is gone, and the cluster (2 nodes, the same
# plugstack.conf) runs plain steps and knows --dist-train no more.
removal_checked() {
    [[ ! -e $LINK && ! -L $LINK ]]
    [[ $output == *"removed $LINK, which enabled the plugin"* ]]
    [[ $output == *"$COPY still loads dist_train.so, which is gone"* ]]
    [[ $output == *"$DANGLING is a dangling link (to /usr/share/no-such-package/plugin.conf)"* ]]
    [[ -f $COPY && -L $DANGLING ]]
    run timeout 60 srun -N2 -n2 hostname
    echo "$output"
    # shellcheck disable=SC2154 # bats' run sets it
    [ "$status" -eq 0 ]
    # (and srun's complaint about the copy's optional plugin, which it skips)
    [[ $(grep -cx 'node[12]' <<<"$output") -eq 2 ]]
    run timeout 60 srun --dist-train -N1 -n1 true
    [ "$status" -ne 0 ]
}

# examples/ddp_train.py's $output: the loss at step $1 is under half the loss at step 0.
loss_halved_by() {
    local first last
    first=$(sed -n 's/^step *0 *loss //p' <<<"$output")
    last=$(sed -n "s/^step *$1 *loss //p" <<<"$output")
    [[ -n $first && -n $last ]] || { echo "no loss at step 0 or $1" >&2; return 1; }
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 2) }'
}
