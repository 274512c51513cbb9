#!/usr/bin/env bats
# topology.bats - the network groups every task learns from topology.conf
# (DIST_TRAIN_TOPOLOGY_*), and rank_order=topology: ranks consecutive within
# a leaf switch, the switches in the topology's order, a ring in rank order
# that crosses a switch boundary once per switch, and the DDP job trained
# under it.  The switches hold the nodes out of name order, so Slurm's order
# (by name before 26.05) differs from the topology's.

# shellcheck disable=SC2016 # the tasks expand the variables of this bash -c program

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

load helpers/common

# The leaf switches in topology order: s1 (node2, node5), s2 (node1, node4),
# s3 (node3, node6); the index of each node's switch follows.
setup_file() {
    cat >"$BATS_FILE_TMPDIR/topology.conf" <<'EOF'
SwitchName=s1 Nodes=node[2,5]
SwitchName=s2 Nodes=node[1,4]
SwitchName=s3 Nodes=node[3,6]
SwitchName=top Switches=s[1-3]
EOF
    cluster_start 6 --cpus 2 --topology "$BATS_FILE_TMPDIR/topology.conf"
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
    declare -gA switch_of=([node2]=0 [node5]=0 [node1]=1 [node4]=1 [node3]=2 [node6]=2)
}

# group_step SRUN_ARGS...: a --dist-train step in which every task prints its
# ranks, its node and the network group variables; the lines, sorted by RANK,
# in $lines, srun's stderr in $err.
group_step() {
    local task='echo "RANK=$RANK SLURM_PROCID=$SLURM_PROCID SLURM_LOCALID=$SLURM_LOCALID'
    task+=' LOCAL_RANK=$LOCAL_RANK GROUP_RANK=$GROUP_RANK NODE_RANK=$NODE_RANK'
    task+=' MASTER_ADDR=$MASTER_ADDR NODE=$SLURMD_NODENAME ORDER=${DIST_TRAIN_RANK_ORDER:--}'
    task+=' GROUP=${DIST_TRAIN_TOPOLOGY_GROUP:--} GROUPS=${DIST_TRAIN_TOPOLOGY_GROUPS:--}'
    task+=' TRANK=${DIST_TRAIN_TOPOLOGY_RANK:--} TSIZE=${DIST_TRAIN_TOPOLOGY_SIZE:--}"'
    run_lines srun "$@" bash -c "$task" >/dev/null
}

# The step's nodes in the order of their first RANK.
nodes_by_rank() {
    local line
    for line in "${lines[@]}"; do field "$line" NODE; done | awk '!seen[$0]++' | paste -sd' '
}

# The groups of the ranks, in RANK order, one word each.
groups_by_rank() {
    local line
    for line in "${lines[@]}"; do field "$line" GROUP; done | paste -sd' '
}

# ring_crossings G...: the hops i -> i+1 (mod the ranks) of a ring in RANK
# order whose two ranks sit in different groups.
ring_crossings() {
    local g=("$@") i n=$# crossings=0
    for ((i = 0; i < n; i++)); do
        [[ ${g[i]} == "${g[(i + 1) % n]}" ]] || crossings=$((crossings + 1))
    done
    echo "$crossings"
}

# check_groups NTASKS: every task's group variables against topology.conf:
# the step's switches numbered 0.. in the topology's order, the count of
# them, the rank's index among its group's ranks in RANK order, and the
# ranks of its group; and the ranks 0..NTASKS-1, each once.
check_groups() {
    local ntasks=$1 line node rank=0 s index=0
    local -A present=() group_of=() size=() seen=()
    printf '%s\n' "${lines[@]}"
    [[ ${#lines[@]} -eq $ntasks ]] || { echo "expected $ntasks tasks, got ${#lines[@]}" >&2; return 1; }
    for line in "${lines[@]}"; do present[${switch_of[$(field "$line" NODE)]}]=1; done
    for s in 0 1 2; do [[ -z ${present[$s]:-} ]] || group_of[$s]=$((index++)); done
    for line in "${lines[@]}"; do
        s=${switch_of[$(field "$line" NODE)]}
        size[$s]=$((${size[$s]:-0} + 1))
    done
    for line in "${lines[@]}"; do
        node=$(field "$line" NODE)
        s=${switch_of[$node]}
        expect_eq "$line" RANK "$rank" || return 1
        expect_eq "$line" GROUP "${group_of[$s]}" || return 1
        expect_eq "$line" GROUPS "$index" || return 1
        expect_eq "$line" TRANK "${seen[$s]:-0}" || return 1
        expect_eq "$line" TSIZE "${size[$s]}" || return 1
        expect_eq "$line" LOCAL_RANK "$(field "$line" SLURM_LOCALID)" || return 1
        seen[$s]=$((${seen[$s]:-0} + 1))
        rank=$((rank + 1))
    done
}

# check_slurm_order: RANK is SLURM_PROCID, and the variables of the order stay unset.
check_slurm_order() {
    local line
    for line in "${lines[@]}"; do
        expect_eq "$line" RANK "$(field "$line" SLURM_PROCID)" || return 1
        expect_eq "$line" ORDER - || return 1
    done
}

# check_topology_order: the groups never decrease with RANK (so each group's
# ranks are consecutive and the groups follow the topology), each group's
# ranks keep Slurm's order, GROUP_RANK numbers the nodes by their first RANK,
# and MASTER_ADDR is the address of RANK 0's node.
check_topology_order() {
    local line node group prev_group=0 procid nodes=0 master
    local -A last_procid=() node_rank=()
    master=$(node_addr "$(field "${lines[0]}" NODE)")
    [[ -n $master ]] || { echo "no NodeAddr for RANK 0's node" >&2; return 1; }
    for line in "${lines[@]}"; do
        node=$(field "$line" NODE)
        group=$(field "$line" GROUP)
        procid=$(field "$line" SLURM_PROCID)
        ((group >= prev_group)) || { echo "group $group after group $prev_group: $line" >&2; return 1; }
        ((procid > ${last_procid[$group]:--1})) ||
            { echo "Slurm's rank $procid after ${last_procid[$group]} in group $group" >&2; return 1; }
        [[ -n ${node_rank[$node]:-} ]] || node_rank[$node]=$((nodes++))
        expect_eq "$line" GROUP_RANK "${node_rank[$node]}" || return 1
        expect_eq "$line" NODE_RANK "${node_rank[$node]}" || return 1
        expect_eq "$line" MASTER_ADDR "$master" || return 1
        expect_eq "$line" ORDER topology || return 1
        prev_group=$group last_procid[$group]=$procid
    done
}

# Slurm 26.05 lays a step's tasks out in topology order whenever a topology
# plugin is configured; earlier ones keep the node table's order, by name.
slurm_orders_by_topology() { (($(slurm_release_number) >= 2605)); }

@test "Slurm's order: every task's group, group count, index and size in its switch" {
    group_step -N6 --ntasks-per-node=2 --dist-train
    check_groups 12
    check_slurm_order
    local want="node1 node2 node3 node4 node5 node6" want_groups="1 1 0 0 2 2 1 1 0 0 2 2"
    if slurm_orders_by_topology; then
        want="node2 node5 node1 node4 node3 node6" want_groups="0 0 0 0 1 1 1 1 2 2 2 2"
    fi
    [[ $(nodes_by_rank) == "$want" ]]
    [[ $(groups_by_rank) == "$want_groups" ]]
}

@test "Slurm's order, a step that leaves out switch s1: groups 0..1 among the step's" {
    group_step -w 'node[1,3,4,6]' --ntasks-per-node=2 --dist-train
    check_groups 8
    check_slurm_order
    local want_groups="0 0 1 1 0 0 1 1"
    slurm_orders_by_topology && want_groups="0 0 0 0 1 1 1 1"
    [[ $(groups_by_rank) == "$want_groups" ]]
}

@test "rank_order=topology: ranks consecutive per switch, a ring crosses 3 switch boundaries" {
    group_step -N6 --ntasks-per-node=2 --dist-train
    local slurm_crossings
    # shellcheck disable=SC2046 # one word per rank
    slurm_crossings=$(ring_crossings $(groups_by_rank))
    group_step -N6 --ntasks-per-node=2 --dist-train=rank_order=topology
    check_groups 12
    check_topology_order
    [[ $(nodes_by_rank) == "node2 node5 node1 node4 node3 node6" ]]
    [[ $(groups_by_rank) == "0 0 0 0 1 1 1 1 2 2 2 2" ]]
    [[ $(field "${lines[0]}" MASTER_ADDR) == 10.213.7.12 ]]
    local crossings
    # shellcheck disable=SC2046 # one word per rank
    crossings=$(ring_crossings $(groups_by_rank))
    echo "# ring crossings: Slurm's order $slurm_crossings, rank_order=topology $crossings" >&3
    [ "$crossings" -eq 3 ]
    if slurm_orders_by_topology; then
        [ "$slurm_crossings" -eq 3 ]
    else
        [ "$slurm_crossings" -eq 6 ]
    fi
}

@test "rank_order=topology on a step that leaves out switch s1: node1 node4, then node3 node6" {
    group_step -w 'node[1,3,4,6]' --ntasks-per-node=2 --dist-train=rank_order=topology
    check_groups 8
    check_topology_order
    [[ $(nodes_by_rank) == "node1 node4 node3 node6" ]]
    [[ $(groups_by_rank) == "0 0 0 0 1 1 1 1" ]]
}

@test "rank_order=topology,verbose: the table has the GROUP column, in RANK order" {
    group_step -N6 --ntasks-per-node=2 --dist-train=rank_order=topology,verbose
    # shellcheck disable=SC2154 # run_lines sets it
    echo "$err"
    [[ $err == *"3 network groups (Slurm's leaf switches or blocks); RANK in the topology's order"* ]]
    grep -Eq '^dist-train: +RANK +LOCAL_RANK +NODE_RANK +GROUP +NODE$' <<<"$err"
    # the rows, as "RANK GROUP NODE", against what the tasks got
    local rows want line
    rows=$(sed -n 's/^dist-train: *\([0-9][0-9]*\) *[0-9][0-9]* *[0-9][0-9]* *\([0-9][0-9]*\) *\(node[0-9]*\)$/\1 \2 \3/p' <<<"$err")
    want=$(for line in "${lines[@]}"; do
        echo "$(field "$line" RANK) $(field "$line" GROUP) $(field "$line" NODE)"
    done)
    [[ $rows == "$want" ]]
}

@test "the DDP job trains under rank_order=topology, with the plugin's ranks" {
    run timeout 120 srun --dist-train=rank_order=topology -w 'node[1-2,4-5]' --ntasks-per-node=1 \
        "$TORCH_PYTHON" "$TOP/examples/ddp_train.py" --steps 20
    echo "$output"
    [ "$status" -eq 0 ]
    loss_halved_by 19
    # PyTorch's ranks are the plugin's: s1's node2 and node5 first, then s2's
    [[ $output == *"master 10.213.7.12:"* ]]
    local rank node=(node2 node5 node1 node4)
    for rank in 0 1 2 3; do
        grep -q "^rank $rank on ${node[rank]}: final parameters" <<<"$output"
    done
    [[ $(sed -n 's/.*final parameters //p' <<<"$output" | sort -u | wc -l) -eq 1 ]]
}

@test "libdtshim under rank_order=topology: its ranks, node ranks, chief and allgather follow RANK" {
    local check=$MINICLUSTER_DIR/shim_check line task rank want
    cc -Wall -Wextra -Wno-unused-parameter -Werror -o "$check" \
        "$BATS_TEST_DIRNAME/helpers/shim_check.c" -I"$TOP/shim" \
        -L"$TOP/shim/.libs" -Wl,-rpath,"$TOP/shim/.libs" -ldtshim
    # (PMI-2: every generation has it; the shim's own tests cover PMIx)
    DTSHIM_TIMEOUT=60 run timeout 120 srun --mpi=pmi2 -N6 --ntasks-per-node=2 \
        --dist-train=rank_order=topology bash -c \
        'echo "env $SLURM_PROCID $RANK $GROUP_RANK $SLURMD_NODENAME"; exec "$0" order' "$check"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -c '^env ' <<<"$output") -eq 12 ]]
    # the tasks in the plugin's RANK order, as the environment says; RANK 0 on s1's node2
    want=$(grep '^env ' <<<"$output" | sort -k3n | awk '{print $2}' | paste -sd,)
    [[ $(awk '$1 == "env" && $3 == 0 {print $5}' <<<"$output") == node2 ]]
    local chief=node2
    # Known, and left: 26.05 deals tasks out in topology order, and over PMI-2 the shim
    # names the chief's node by its PMI-2 node id's place in SLURM_STEP_NODELIST, which
    # stays in name order there: it says node1.  (Over PMIx the chief is PMIX_HOSTNAME.)
    slurm_orders_by_topology && chief='node[0-9]*'
    while read -r _ task rank node _; do
        grep -q "^rank $rank task $task: tasks in rank order $want, node $node, chief $chief$" \
            <<<"$output"
    done < <(grep '^env ' <<<"$output")
    [[ $(grep -c ': tasks in rank order ' <<<"$output") -eq 12 ]]
}

@test "rank_order=topology without a topology: srun says so, the ranks keep Slurm's order" {
    cluster_start 3 --cpus 2
    group_step -N3 --ntasks-per-node=2 --dist-train=rank_order=topology
    echo "$err"
    [[ $err == *"rank_order=topology: Slurm gives no network topology for this step's nodes"* ]]
    [[ ${#lines[@]} -eq 6 ]]
    check_slurm_order
    [[ $(nodes_by_rank) == "node1 node2 node3" ]]
    [[ $(groups_by_rank) == "- - - - - -" ]]
}
