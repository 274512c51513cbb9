#!/usr/bin/env bats
# contract.bats - the environment contract on a 3-node cluster: every
# distribution, steps inside jobs, sbatch/salloc, user overrides, names that
# do not resolve, the port check, and bad input.

# shellcheck disable=SC2016 # the tasks expand the variables of these bash -c programs

load helpers/common

setup_file() {
    cluster_start 3
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
}

@test "-N3 -n6: every rank checked" {
    step_env --dist-train -N3 -n6
    check_layout 3 6
}

@test "cyclic: rank 0 on node1, ranks round-robin" {
    step_env --dist-train -N3 -n5 -m cyclic
    check_layout 3 5
    [[ $(field "${lines[1]}" HOST) == node2 ]]
    [[ $(field "${lines[2]}" HOST) == node3 ]]
    [[ $(field "${lines[0]}" MASTER_ADDR) == "$(node_addr node1)" ]]
}

@test "plane=2: blocks of two ranks" {
    step_env --dist-train -N2 -n5 -m plane=2
    check_layout 2 5
    [[ $(field "${lines[1]}" HOST) == node1 ]]
    [[ $(field "${lines[2]}" HOST) == node2 ]]
}

@test "arbitrary: SLURM_HOSTFILE puts rank 0 on the last node" {
    local hf="$MINICLUSTER_DIR/hostfile.arbitrary"
    printf 'node3\nnode1\nnode2\nnode3\n' > "$hf"
    SLURM_HOSTFILE=$hf step_env --dist-train -n4 -m arbitrary
    check_layout 3 4
    [[ $(field "${lines[0]}" HOST) == node3 ]]
    [[ $(field "${lines[0]}" MASTER_ADDR) == "$(node_addr node3)" ]]
}

@test "arbitrary without a hostfile: rank 0's node is the one Slurm placed it on" {
    # srun reads the step's real layout from slurmctld: rank 0 runs on node3 here
    step_env --dist-train -n3 -w node3,node1,node2 -m arbitrary
    check_layout 3 3
    [[ $(field "${lines[0]}" HOST) == node3 ]]
    [[ $(field "${lines[0]}" MASTER_ADDR) == "$(node_addr node3)" ]]
}

@test "arbitrary, and an srun without the plugin: a message, no hostfile opened" {
    # srun reads a plugstack.conf without the plugin (a site that installed it
    # on the compute nodes only): the nodes cannot tell where rank 0 runs
    local d=$MINICLUSTER_DIR
    : > "$d/plugstack.empty"
    sed "s|^PlugStackConfig=.*|PlugStackConfig=$d/plugstack.empty|" "$d/slurm.conf" \
        > "$d/slurm.srun-without-plugin.conf"
    printf 'node3\nnode1\nnode2\n' > "$d/hostfile.without-plugin"
    DIST_TRAIN=torch SLURM_CONF=$d/slurm.srun-without-plugin.conf SLURM_HOSTFILE=$d/hostfile.without-plugin \
        run timeout 60 srun -n3 -w node3,node1,node2 -m arbitrary true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"the arbitrary distribution: which node runs each rank comes from srun, and this step's srun handed none over"* ]]
}

@test "rank_order=topology, and an srun without the plugin: a message, nothing started" {
    # only srun can read the network's groups from slurmctld
    local d=$MINICLUSTER_DIR
    : > "$d/plugstack.empty"
    sed "s|^PlugStackConfig=.*|PlugStackConfig=$d/plugstack.empty|" "$d/slurm.conf" \
        > "$d/slurm.srun-without-plugin.conf"
    DIST_TRAIN=rank_order=topology SLURM_CONF=$d/slurm.srun-without-plugin.conf \
        run timeout 60 srun -N2 -n2 bash -c 'echo "ran $RANK"'
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"rank_order=topology: the network's groups come from srun, and this step's srun handed none over"* ]]
    [[ $output != *"ran "* ]]
}

# tf TF_CONFIG lines "tf RANK HOST MASTER_ADDR TF_CONFIG" on stdin: every rank
# on the node the hostfile gave it ($1: the hosts in rank order).
check_tf_hosts() {
    "$TORCH_PYTHON" -c '
import json, sys
want = sys.argv[1].split()
rows = [l.split(" ", 4)[1:] for l in sys.stdin.read().splitlines() if l.startswith("tf ")]
assert len(rows) == len(want), rows
for rank, host, addr, tf in rows:
    cfg = json.loads(tf)
    workers = cfg["cluster"]["worker"]
    assert host == want[int(rank)], (rank, host, want)
    assert workers[int(rank)].split(":")[0] == host, (rank, host, workers)
' "$1"
}

@test "a FIFO as SLURM_HOSTFILE: srun reads it, the nodes never open it" {
    local hf=$MINICLUSTER_DIR/hostfile.fifo
    rm -f "$hf" && mkfifo "$hf"
    # a write for each time srun opens it (versions differ), for 30 s at most;
    # a node that opened it after srun would wait for one more
    (timeout 30 bash -c 'for i in 1 2 3; do printf "node2\nnode1\n" > "$0"; done' "$hf" &)
    SECONDS=0
    SLURM_HOSTFILE=$hf run timeout 60 srun -n2 -m arbitrary --dist-train=tf \
        bash -c 'echo "tf $SLURM_PROCID $(hostname) $MASTER_ADDR $TF_CONFIG"'
    local took=$SECONDS
    # release the writer if nobody read, then remove the FIFO
    for _ in 1 2 3; do timeout 1 cat "$hf" >/dev/null 2>&1 || true; done
    rm -f "$hf"
    echo "$output"
    [ "$status" -eq 0 ]
    check_tf_hosts "node2 node1" <<<"$output"
    ((took < 20))
    [[ $(settled_states node1 node2) == idle ]]
}

@test "a hostfile only srun can read (its own /tmp), under --export=NONE: the layout comes from srun" {
    # the nodes' /tmp is their own, as a login node's local disk is not the
    # compute nodes': they never read the file
    local hf
    hf=$(mktemp /tmp/dist-train-hostfile.XXXXXX)
    printf 'node3\nnode1\nnode2\n' > "$hf"
    SLURM_HOSTFILE=$hf run timeout 60 srun --export=NONE --dist-train=tf -n3 \
        -m arbitrary /bin/bash -c 'echo "tf $SLURM_PROCID $(hostname) $MASTER_ADDR $TF_CONFIG"
            echo "left:${SLURM_DIST_TRAIN_SRUN-}${SLURM_DIST_TRAIN_LAYOUT-}:"'
    rm -f "$hf"
    echo "$output"
    [ "$status" -eq 0 ]
    check_tf_hosts "node3 node1 node2" <<<"$output"
    # srun's notes to the nodes are not left in the tasks' environment
    [[ $(grep -c '^left::$' <<<"$output") -eq 3 ]]
    [[ $(grep -c "^tf [0-9] node[0-9] $(node_addr node3) " <<<"$output") -eq 3 ]]
}

@test "--relative: the step starts on the job's second node" {
    run timeout 60 salloc -N3 srun --dist-train -N2 -n2 --relative=1 "$TASK_ENV"
    [ "$status" -eq 0 ]
    mapfile -t lines < <(grep '^SLURM_PROCID' <<<"$output" | sort -t= -k2 -n)
    check_layout 2 2
    [[ $(field "${lines[0]}" HOST) == node2 ]]
    [[ $(field "${lines[0]}" MASTER_ADDR) == "$(node_addr node2)" ]]
}

@test "sbatch --dist-train: steps get it, the batch script does not, =off turns it off" {
    sbatch_wait -N3 --dist-train <<'JOB'
#!/bin/bash
echo "batch RANK=${RANK:-unset} MASTER_ADDR=${MASTER_ADDR:-unset}"
srun -N1 -n1 -w node2 bash -c 'echo "subset RANK=$RANK MASTER_ADDR=$MASTER_ADDR"'
srun -N3 -n3 bash -c 'echo "full RANK=$RANK MASTER_ADDR=$MASTER_ADDR PORT=$MASTER_PORT"'
srun --dist-train=off -N1 -n1 bash -c 'echo "off RANK=${RANK:-unset}"'
JOB
    echo "$output"
    [[ $output == *"batch RANK=unset MASTER_ADDR=unset"* ]]
    [[ $output == *"subset RANK=0 MASTER_ADDR=$(node_addr node2)"* ]]
    [[ $(grep -c "^full RANK=[0-2] MASTER_ADDR=$(node_addr node1) PORT=" <<<"$output") -eq 3 ]]
    [[ $output == *"off RANK=unset"* ]]
}

@test "--export=NONE: sbatch --dist-train and salloc --dist-train still reach the steps" {
    # (no PATH in the steps: full paths)
    sbatch_wait -N2 --export=NONE --dist-train <<'JOB'
#!/bin/bash
echo "batch RANK=${RANK:-unset}"
srun -N2 -n2 /bin/bash -c 'echo "full RANK=$RANK MASTER_ADDR=$MASTER_ADDR"'
JOB
    echo "$output"
    [[ $output == *"batch RANK=unset"* ]]
    [[ $(grep -c "^full RANK=[01] MASTER_ADDR=$(node_addr node1)$" <<<"$output") -eq 2 ]]
    run timeout 60 salloc -N2 --dist-train srun --export=NONE -N2 -n2 \
        /bin/bash -c 'echo "salloc RANK=$RANK MASTER_ADDR=$MASTER_ADDR"'
    echo "$output"
    [[ $(grep -c "^salloc RANK=[01] MASTER_ADDR=$(node_addr node1)$" <<<"$output") -eq 2 ]]
}

@test "two concurrent steps of one job: different ports, both finish" {
    sbatch_wait -N2 --dist-train <<'JOB'
#!/bin/bash
srun -N1 -n1 -w node1 --exact bash -c 'echo "a $MASTER_PORT"; sleep 2' &
srun -N1 -n1 -w node2 --exact bash -c 'echo "b $MASTER_PORT"; sleep 2' &
wait
echo done
JOB
    echo "$output"
    local a b
    a=$(sed -n 's/^a //p' <<<"$output")
    b=$(sed -n 's/^b //p' <<<"$output")
    [[ -n $a && -n $b && $a != "$b" ]]
    [[ $output == *done* ]]
}

@test "salloc --dist-train applies to srun steps, not to the shell" {
    run timeout 60 salloc -N2 --dist-train bash -c 'echo "shell RANK=${RANK:-unset}"; srun -N2 -n2 printenv RANK'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"shell RANK=unset"* ]]
    [[ $(grep -cx '[01]' <<<"$output") -eq 2 ]]
}

@test "DIST_TRAIN=torch in the environment turns it on without the flag" {
    DIST_TRAIN=torch step_env -N2 -n2
    check_layout 2 2
}

@test "variables the user set are kept; the layout's facts are not" {
    MASTER_PORT=4242 OMP_NUM_THREADS=7 GLOO_SOCKET_IFNAME=lo RANK=99 WORLD_SIZE=99 \
        step_env --dist-train -N2 -n2
    local line
    for line in "${lines[@]}"; do
        expect_eq "$line" MASTER_PORT 4242
        expect_eq "$line" OMP_NUM_THREADS 7
        expect_eq "$line" GLOO_SOCKET_IFNAME lo
        expect_eq "$line" WORLD_SIZE 2
    done
    [[ $(field "${lines[1]}" RANK) == 1 ]]
}

@test "the interface is the one that reaches rank 0's node" {
    step_env --dist-train -N3 -n3
    local line
    for line in "${lines[@]}"; do
        expect_eq "$line" GLOO_SOCKET_IFNAME eth0
    done
}

@test "a bad plugstack argument stops srun, naming the key" {
    local conf="$MINICLUSTER_DIR/plugstack.bad"
    echo "required $PLUGIN_SO port_range=30000-20000" > "$conf"
    # swap the cluster's plugstack for a moment
    cp "$MINICLUSTER_DIR/plugstack.conf" "$MINICLUSTER_DIR/plugstack.good"
    cp "$conf" "$MINICLUSTER_DIR/plugstack.conf"
    run timeout 30 srun --dist-train -N1 -n1 touch "$MINICLUSTER_DIR/bad-plugstack-ran"
    cp "$MINICLUSTER_DIR/plugstack.good" "$MINICLUSTER_DIR/plugstack.conf"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"port_range=30000-20000"* ]]
    [ ! -e "$MINICLUSTER_DIR/bad-plugstack-ran" ]
    # and the nodes are still fine
    [[ $(settled_states node1) == idle ]]
}

@test "a bad plugstack argument on the nodes only: the step fails, named, and no node drains" {
    # srun reads a good plugstack.conf, the nodes a broken one (an admin's
    # half-rolled-out change): only --dist-train steps fail, with the key
    local d=$MINICLUSTER_DIR
    cp "$d/plugstack.conf" "$d/plugstack.srun"
    sed "s|^PlugStackConfig=.*|PlugStackConfig=$d/plugstack.srun|" "$d/slurm.conf" > "$d/slurm.srun.conf"
    cp "$d/plugstack.conf" "$d/plugstack.good"
    echo "required $PLUGIN_SO fail_fast=maybe" > "$d/plugstack.conf"
    SLURM_CONF=$d/slurm.srun.conf run timeout 30 srun --dist-train -N2 -n2 true
    local bad_status=$status bad_output=$output
    SLURM_CONF=$d/slurm.srun.conf run timeout 30 srun -N2 -n2 true
    local plain_status=$status
    cp "$d/plugstack.good" "$d/plugstack.conf"
    echo "$bad_output"
    [ "$bad_status" -ne 0 ]
    [[ $bad_output == *"fail_fast=maybe"* ]]
    [ "$plain_status" -eq 0 ]
    [[ $(settled_states node1 node2) == idle ]]
}

@test "a busy port fails the step at once, naming the port and the node" {
    local conf="$MINICLUSTER_DIR/plugstack.oneport" HOLDER
    # something else listens on node1's port 29999
    hold_port node1 29999 30 || { kill "$HOLDER" 2>/dev/null; return 1; }
    echo "required $PLUGIN_SO port_range=29999-29999" > "$conf"
    cp "$MINICLUSTER_DIR/plugstack.conf" "$MINICLUSTER_DIR/plugstack.good"
    cp "$conf" "$MINICLUSTER_DIR/plugstack.conf"
    SECONDS=0
    run timeout 60 srun --dist-train -N2 -n2 true
    local took=$SECONDS
    kill "$HOLDER" 2>/dev/null || true
    cp "$MINICLUSTER_DIR/plugstack.good" "$MINICLUSTER_DIR/plugstack.conf"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"MASTER_PORT 29999 is already in use"* ]]
    [[ $output == *"node1"* ]]
    ((took < 20))
}

@test "a node whose own name resolves to 127.0.1.1 still gets its real address" {
    local saved
    saved=$(node_hosts_get node1)
    # shellcheck disable=SC2001 # a line of the hosts file, anchored at both ends
    sed 's/^[0-9.]* node1$/127.0.1.1 node1/' <<<"$saved" | node_hosts_set node1
    run "$MINICLUSTER" exec --node node1 -- getent hosts node1
    [[ $output == 127.0.1.1* ]]
    step_env --dist-train -N3 -n3
    printf '%s\n' "$saved" | node_hosts_set node1
    check_layout 3 3
    [[ $(field "${lines[0]}" MASTER_ADDR) == "$(node_addr node1)" ]]
}

@test "node names that resolve nowhere: Slurm's NodeAddr is used" {
    local n saved=()
    for n in 1 2 3; do
        saved[n]=$(node_hosts_get "node$n")
        grep -v ' node[0-9]*$' <<<"${saved[n]}" | node_hosts_set "node$n"
    done
    run "$MINICLUSTER" exec --node node2 -- getent hosts node1
    local resolved=$status
    step_env --dist-train -N3 -n3
    for n in 1 2 3; do printf '%s\n' "${saved[n]}" | node_hosts_set "node$n"; done
    [ "$resolved" -ne 0 ]
    check_layout 3 3
}

@test "PyTorch gloo DDP across 3 nodes, rank 0's name on 127.0.1.1, no interface set by the user" {
    local saved
    saved=$(node_hosts_get node1)
    # shellcheck disable=SC2001 # a line of the hosts file, anchored at both ends
    sed 's/^[0-9.]* node1$/127.0.1.1 node1/' <<<"$saved" | node_hosts_set node1
    run timeout 240 srun --dist-train -N3 -n3 "$TORCH_PYTHON" "$TOP/examples/ddp_train.py" --steps 10
    printf '%s\n' "$saved" | node_hosts_set node1
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(sed -n 's/.*final parameters //p' <<<"$output" | sort -u | wc -l) -eq 1 ]]
    [[ $(grep -c 'final parameters' <<<"$output") -eq 3 ]]
}

@test "jax profile: coordinator, process count and id, no torchrun variables" {
    run timeout 60 srun --dist-train=jax -N2 -n3 bash -c \
        'echo "$SLURM_PROCID $JAX_COORDINATOR_ADDRESS $JAX_NUM_PROCESSES $JAX_PROCESS_ID ${TORCHELASTIC_RUN_ID:-none} $RANK"'
    echo "$output"
    [ "$status" -eq 0 ]
    local want port
    port=$(awk '{print $2}' <<<"$output" | head -1)
    port=${port##*:}
    ((port >= 20000 && port <= 32767))
    for want in 0 1 2; do
        grep -qx "$want $(node_addr node1):$port 3 $want none $want" <<<"$output"
    done
}

@test "verbose: rank 0 says once what the step got" {
    run timeout 60 srun --dist-train=torch,verbose -N3 -n4 true
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -c 'dist-train: step' <<<"$output") -eq 1 ]]
    [[ $output == *"4 ranks on 3 nodes"* ]]
    # srun's own clock: what its two questions to slurmctld took
    grep -Eq "^dist-train: srun: the step's layout in [0-9.]+ ms \(slurmctld\), rank 0's NodeAddr in [0-9.]+ ms$" <<<"$output"
    [[ $output == *"MASTER_ADDR=$(node_addr node1) MASTER_PORT="* ]]
}

@test "--dist-train=help prints the SPEC list and starts nothing" {
    run timeout 30 srun --dist-train=help -N1 -n1 touch "$MINICLUSTER_DIR/help-ran"
    echo "$output"
    [[ $output == *"torch    set the torchrun environment"* ]]
    [ ! -e "$MINICLUSTER_DIR/help-ran" ]
}

@test "verbose: the rank table matches where srun really ran each rank" {
    local mode
    for mode in block cyclic plane=2; do
        run timeout 60 srun --dist-train=verbose -N3 -n5 -m "$mode" bash -c \
            'echo "at $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $(hostname)"'
        echo "$mode: $output"
        [ "$status" -eq 0 ]
        local real table
        real=$(sed -n 's/^at //p' <<<"$output" | sort -n)
        table=$(sed -n 's/^dist-train: *\([0-9].*\)/\1/p' <<<"$output" | awk '{print $1, $2, $3, $4}' | sort -n)
        [[ $(wc -l <<<"$real") -eq 5 ]]
        [[ $real == "$table" ]]
    done
}

@test "arbitrary: the verbose table, GROUP_RANK and TF_CONFIG follow SLURM_HOSTFILE, rank by rank" {
    local hf="$MINICLUSTER_DIR/hostfile.table"
    printf 'node3\nnode1*2 # two ranks\nnode2,node3\n' > "$hf"
    SLURM_HOSTFILE=$hf run timeout 60 srun --dist-train=verbose,tf -n5 -m arbitrary bash -c \
        'echo "at $SLURM_PROCID $SLURM_LOCALID $GROUP_RANK $(hostname)"; echo "tf $SLURM_PROCID $(hostname) $TF_CONFIG"'
    echo "$output"
    [ "$status" -eq 0 ]
    local real table
    real=$(sed -n 's/^at //p' <<<"$output" | sort -n)
    table=$(sed -n 's/^dist-train: *\([0-9].*\)/\1/p' <<<"$output" | awk '{print $1, $2, $3, $4}' | sort -n)
    [[ $(awk '{print $4}' <<<"$real" | paste -sd' ') == "node3 node1 node1 node2 node3" ]]
    # the nodes in the order of their first rank (SLURM_NODEID is name order here)
    [[ $(awk '{print $3}' <<<"$real" | paste -sd' ') == "0 1 1 2 0" ]]
    [[ $real == "$table" ]]
    grep '^tf ' <<<"$output" | "$TORCH_PYTHON" -c '
import json, sys
rows = [l.split(" ", 3)[1:] for l in sys.stdin.read().splitlines()]
assert len(rows) == 5, rows
for rank, host, tf in rows:
    cfg = json.loads(tf)
    workers = cfg["cluster"]["worker"]
    assert cfg["task"]["index"] == int(rank), (rank, cfg)
    assert workers[int(rank)].split(":")[0] == host, (rank, host, workers)
    assert len(set(workers)) == 5, workers
'
}

@test "tf profile: TF_CONFIG is valid JSON listing every task on its node, unique ports" {
    local mode
    for mode in block cyclic; do
        run timeout 60 srun --dist-train=tf -N3 -n5 -m "$mode" bash -c \
            'printf "%s %s %s\n" "$SLURM_PROCID" "$(hostname)" "$TF_CONFIG"'
        echo "$output"
        [ "$status" -eq 0 ]
        "$TORCH_PYTHON" -c '
import json, sys
rows = [l.split(" ", 2) for l in sys.stdin.read().splitlines() if l[:1].isdigit()]
assert len(rows) == 5, rows
host_of = {int(r): h for r, h, _ in rows}
for r, h, text in rows:
    cfg = json.loads(text)
    workers = cfg["cluster"]["worker"]
    assert len(workers) == 5, workers
    assert [w.rsplit(":", 1)[0] for w in workers] == [host_of[i] for i in range(5)], workers
    assert len({w.rsplit(":", 1)[1] for w in workers}) == 5, workers
    assert cfg["task"] == {"type": "worker", "index": int(r)}, cfg["task"]
' <<<"$output"
    done
}

@test "an OpenMPI program (mpi4py) under --mpi=pmix: the flag changes nothing MPI does" {
    require_pmix
    local prog=$TOP/tests/integration/helpers/mpi_hello.py
    run timeout 240 srun --mpi=pmix -N3 -n6 "$TORCH_PYTHON" "$prog"
    echo "$output"
    [ "$status" -eq 0 ]
    local plain
    plain=$(grep '^mpi ' <<<"$output" | sed 's/ | .*//' | sort)
    [[ $(wc -l <<<"$plain") -eq 6 ]]
    [[ $(grep -c ' | RANK=unset$' <<<"$output") -eq 6 ]]
    run timeout 240 srun --mpi=pmix --dist-train -N3 -n6 "$TORCH_PYTHON" "$prog"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep '^mpi ' <<<"$output" | sed 's/ | .*//' | sort) == "$plain" ]]
    # every MPI rank is the rank the flag gave it, on all three nodes
    local r
    for r in 0 1 2 3 4 5; do
        grep -q "^mpi rank=$r size=6 .* sum=21 .* | RANK=$r\$" <<<"$output"
    done
    [[ $(grep -o 'host=node[0-9]' <<<"$output" | sort -u | wc -l) -eq 3 ]]
}
