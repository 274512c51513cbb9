#!/usr/bin/env bats
# node_order.bats - rank 0's address and GROUP_RANK under every order Slurm
# gives a step's nodes: names that sort differently as text and as numbers,
# -m arbitrary with a hostfile in reverse, and topology.conf switches that hold
# the nodes out of name order.  Scripts that take rank 0 from the first name of
# the node list break under the last two.

# shellcheck disable=SC2016 # the tasks expand the variables of this bash -c program

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

load helpers/common

# 12 nodes: node2 and node10 are both there.
setup_file() {
    cluster_start 12 --cpus 2
    cat >"$BATS_FILE_TMPDIR/topology.conf" <<'EOF'
# The leaf switches hold the nodes out of name order: node7..node12 first.
SwitchName=s1 Nodes=node[7-12]
SwitchName=s2 Nodes=node[1-6]
SwitchName=top Switches=s[1-2]
EOF
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
}

# order_step SRUN_ARGS...: a --dist-train step in which every task prints its
# rank, Slurm's index of its node, GROUP_RANK, MASTER_ADDR, its node and the
# node's own address; the lines, sorted by rank, in $lines.
order_step() {
    local task='echo "RANK=$RANK SLURM_PROCID=$SLURM_PROCID SLURM_NODEID=$SLURM_NODEID'
    task+=' GROUP_RANK=$GROUP_RANK MASTER_ADDR=$MASTER_ADDR NODE=$SLURMD_NODENAME'
    task+=' ADDR=$(hostname -I | cut -d" " -f1)"'
    run_lines srun --dist-train "$@" bash -c "$task" >/dev/null
}

# The step's nodes in the order of their first rank: the order in which Slurm
# handed out the ranks.
nodes_by_rank() {
    local line
    for line in "${lines[@]}"; do field "$line" NODE; done | awk '!seen[$0]++' | paste -sd' '
}

# The names $@ in the order of text, and in the order of numbers.
text_order() { printf '%s\n' "$@" | LC_ALL=C sort | paste -sd' '; }
number_order() { printf '%s\n' "$@" | sort -V | paste -sd' '; }

# check_rank0 NTASKS: ranks 0..NTASKS-1, each task's MASTER_ADDR the address
# that rank 0's node has (its own, and Slurm's NodeAddr for it), and
# GROUP_RANK the node's place in the order of the nodes' first ranks: 0 on
# rank 0's node, and rising with the ranks, as torchrun numbers its nodes
# (its node 0 hosts the rendezvous at MASTER_ADDR).  Says what the step showed.
check_rank0() {
    local ntasks=$1 line rank=0 node0 master node groups=0
    local -A group_of=()
    printf '%s\n' "${lines[@]}"
    [[ ${#lines[@]} -eq $ntasks ]] || { echo "expected $ntasks tasks, got ${#lines[@]}" >&2; return 1; }
    node0=$(field "${lines[0]}" NODE)
    master=$(field "${lines[0]}" ADDR)
    [[ -n $master && $master == "$(node_addr "$node0")" ]] ||
        { echo "rank 0's node $node0 has the address $master, Slurm says $(node_addr "$node0")" >&2; return 1; }
    for line in "${lines[@]}"; do
        expect_eq "$line" RANK "$rank" || return 1
        expect_eq "$line" SLURM_PROCID "$rank" || return 1
        expect_eq "$line" MASTER_ADDR "$master" || return 1
        node=$(field "$line" NODE)
        [[ -n ${group_of[$node]:-} ]] || group_of[$node]=$((groups++))
        expect_eq "$line" GROUP_RANK "${group_of[$node]}" || return 1
        rank=$((rank + 1))
    done
    echo "# Slurm's order: $(nodes_by_rank); rank 0 on $node0 ($master)" >&3
}

@test "node2..node10: Slurm orders the names as numbers, rank 0 on node2" {
    order_step -w 'node[2-10]' --ntasks-per-node=2
    check_rank0 18
    local order
    order=$(nodes_by_rank)
    [[ $order == "node2 node3 node4 node5 node6 node7 node8 node9 node10" ]]
    # shellcheck disable=SC2086 # one word per node
    [[ $order == "$(number_order $order)" && $order != "$(text_order $order)" ]]
}

@test "-m arbitrary, a hostfile from node12 down to node1: rank 0 on node12" {
    local hf=$BATS_FILE_TMPDIR/hostfile.reverse i
    for ((i = 12; i >= 1; i--)); do printf 'node%d\nnode%d\n' "$i" "$i"; done >"$hf"
    SLURM_HOSTFILE=$hf order_step -n24 -m arbitrary
    check_rank0 24
    [[ $(nodes_by_rank) == "$(seq -f 'node%g' 12 -1 1 | paste -sd' ')" ]]
}

# check_topology_steps ALL PART: a step over the 12 nodes and one over
# node2..node10, two ranks a node, each right, in the node orders ALL and PART.
check_topology_steps() {
    order_step -N12 --ntasks-per-node=2
    check_rank0 24
    [[ $(nodes_by_rank) == "$1" ]]
    order_step -w 'node[2-10]' --ntasks-per-node=2
    check_rank0 18
    [[ $(nodes_by_rank) == "$2" ]]
}

# Slurm 26.05 lays a step's tasks out in topology order whenever a topology
# plugin is configured (unless CR_NO_DIST_TOPO_BLOCK); earlier ones keep the
# node table's order, which is by name, unless told otherwise.
@test "topology.conf with switches out of name order: Slurm's default order" {
    cluster_start 12 --cpus 2 --topology "$BATS_FILE_TMPDIR/topology.conf"
    local release want_all want_part
    release=$(slurm_release_number)
    want_all="node1 node2 node3 node4 node5 node6 node7 node8 node9 node10 node11 node12"
    want_part="node2 node3 node4 node5 node6 node7 node8 node9 node10"
    if ((release >= 2605)); then
        want_all="node7 node8 node9 node10 node11 node12 node1 node2 node3 node4 node5 node6"
        want_part="node7 node8 node9 node10 node2 node3 node4 node5 node6"
    fi
    check_topology_steps "$want_all" "$want_part"
}

@test "topology.conf and TopologyParam=SwitchAsNodeRank: the leaf switches' order" {
    (($(slurm_release_number) >= 2302)) ||
        skip "Slurm $(slurm_release) has no TopologyParam=SwitchAsNodeRank (23.02 and later)"
    cluster_start 12 --cpus 2 --topology "$BATS_FILE_TMPDIR/topology.conf" \
        --topology-param SwitchAsNodeRank
    check_topology_steps "node7 node8 node9 node10 node11 node12 node1 node2 node3 node4 node5 node6" \
        "node7 node8 node9 node10 node2 node3 node4 node5 node6"
}

# The layout rank 0's task gets on the cluster, for the arguments $@: its text after
# "step=J.S ".
cluster_layout() {
    run timeout 120 srun --dist-train "$@" bash -c \
        '[ "$RANK" = 0 ] && echo "LAYOUT=$DIST_TRAIN_LAYOUT"; [ "$RANK" = 0 ] || echo "OTHER=${DIST_TRAIN_LAYOUT-}"'
    [ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
    [[ $(grep -c "^OTHER=$" <<<"$output") -eq 7 ]] || { echo "$output" >&2; return 1; }
    sed -n 's/^LAYOUT=step=[0-9]*\.[0-9]* //p' <<<"$output"
}

# What scripts/bench-sim's driver makes of the same step: 4 nodes, 2 ranks each (a node
# has 2 CPUs).
sim_layout() {
    BENCH_SIM_SHOW=1 timeout 60 tests/fuzz/bench_sim 4 2 "$1" 0 slurm 1 2>&1 >/dev/null |
        sed -n 's/^rank0_layout=step=[0-9]*\.[0-9]* //p'
}

@test "the simulation lays a step out as the cluster does: block, cyclic, plane, arbitrary" {
    timeout 300 make -s tests/fuzz/bench_sim >/dev/null
    local hf=$BATS_TEST_TMPDIR/hostfile dist sim real
    for n in 4 3 2 1; do printf 'node%s\n' "$n" "$n"; done >"$hf"
    for dist in block cyclic plane=2 arbitrary; do
        sim=$(sim_layout "$dist")
        if [[ $dist == arbitrary ]]; then
            real=$(SLURM_HOSTFILE=$hf cluster_layout -n8 -m arbitrary)
        else
            real=$(cluster_layout -w 'node[1-4]' -N4 --ntasks-per-node=2 -m "$dist")
        fi
        echo "$dist: cluster '$real', simulation '$sim'"
        [[ -n $real && $real == "$sim" ]]
    done
}
