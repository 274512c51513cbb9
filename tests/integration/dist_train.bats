#!/usr/bin/env bats
# dist_train.bats - srun --dist-train on a real 2-node Slurm cluster: the
# variables every task gets, nothing without the flag, and a PyTorch DDP run.

load helpers/common

setup_file() {
    cluster_start 2
}

teardown_file() {
    cluster_stop
}

setup() {
    # tasks start in srun's directory; nodes have a private /tmp, so not there
    cd "$TOP" || return 1
}

@test "srun --help lists --dist-train" {
    run timeout 30 srun --help
    [ "$status" -eq 0 ]
    [[ $output == *"--dist-train"* ]]
}

@test "-N1 -n1: one task gets the variables" {
    step_env --dist-train -N1 -n1
    check_layout 1 1
    [[ $(field "${lines[0]}" RANK) == 0 ]]
}

@test "-N2 -n4: block layout, rank 0 on the first node" {
    step_env --dist-train -N2 -n4
    check_layout 2 4
    [[ $(field "${lines[0]}" HOST) == node1 ]]
    [[ $(field "${lines[3]}" HOST) == node2 ]]
    [[ $(field "${lines[3]}" GROUP_RANK) == 1 ]]
    [[ $(field "${lines[0]}" MASTER_ADDR) == "$(node_addr node1)" ]]
}

@test "-N2 --ntasks-per-node=2: two ranks on each node" {
    step_env --dist-train -N2 --ntasks-per-node=2
    check_layout 2 4
    [[ $(field "${lines[2]}" HOST) == node2 ]]
    [[ $(field "${lines[2]}" LOCAL_RANK) == 0 ]]
    [[ $(field "${lines[3]}" LOCAL_RANK) == 1 ]]
    [[ $(field "${lines[3]}" LOCAL_WORLD_SIZE) == 2 ]]
    [[ $(field "${lines[3]}" GROUP_RANK) == 1 ]]
}

@test "-N2 -n3: uneven tasks per node" {
    step_env --dist-train -N2 -n3
    check_layout 2 3
    [[ $(field "${lines[0]}" LOCAL_WORLD_SIZE) == 2 ]]
    [[ $(field "${lines[2]}" LOCAL_WORLD_SIZE) == 1 ]]
}

@test "two steps of one job, and two jobs, get different ports, NCCL's RAS port too" {
    local ports line
    # shellcheck disable=SC2016 # the task expands them
    ports=$(timeout 60 salloc -N1 bash -c \
        'for s in 1 2; do srun --dist-train -n1 sh -c "echo \$MASTER_PORT \$NCCL_RAS_ADDR"; done')
    echo "ports of two steps: $ports"
    [[ $(wc -l <<<"$ports") -eq 2 ]]
    # each step's RAS port is the one after its MASTER_PORT; the four differ
    while read -r line; do
        [[ ${line#* } == "localhost:$((${line%% *} + 1))" ]]
    done <<<"$ports"
    local numbers=${ports//[ :]/$'\n'}
    [[ $(grep -c '^[0-9]' <<<"$numbers") -eq 4 ]]
    [[ $(grep '^[0-9]' <<<"$numbers" | sort -u | wc -l) -eq 4 ]]
    local a b
    a=$(timeout 60 srun --dist-train -N1 -n1 printenv MASTER_PORT)
    b=$(timeout 60 srun --dist-train -N1 -n1 printenv MASTER_PORT)
    echo "ports of two jobs: $a $b"
    [[ -n $a && -n $b && $a != "$b" ]]
    # the user's is kept; the tf profile's tasks take the ports after MASTER_PORT: none
    [[ $(NCCL_RAS_ADDR=localhost:4242 timeout 60 srun --dist-train -N1 -n1 printenv NCCL_RAS_ADDR) == localhost:4242 ]]
    # shellcheck disable=SC2016 # the task expands it
    run timeout 60 srun --dist-train=tf -N1 -n1 sh -c 'echo "ras=${NCCL_RAS_ADDR:-none}"'
    echo "$output"
    [[ $output == *"ras=none"* ]]
}

@test "without the flag the plugin sets nothing" {
    step_env -N2 -n4
    local line v
    for line in "${lines[@]}"; do
        for v in RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR \
                 MASTER_PORT TORCHELASTIC_RUN_ID GLOO_SOCKET_IFNAME; do
            [[ $(field "$line" "$v") == - ]] || { echo "$v set without the flag: $line"; return 1; }
        done
    done
}

@test "--dist-train=off sets nothing" {
    step_env --dist-train=off -N2 -n2
    [[ $(field "${lines[0]}" RANK) == - ]]
    [[ $(field "${lines[1]}" MASTER_ADDR) == - ]]
}

@test "a bad SPEC stops srun before any task runs, naming the token" {
    local marker="$MINICLUSTER_DIR/bad-spec-ran"
    rm -f "$marker"
    run timeout 30 srun --dist-train=torch,bogus -N1 -n1 touch "$marker"
    [ "$status" -ne 0 ]
    [[ $output == *"'bogus'"* ]]
    [[ $output == *"valid: torch, jax, tf, off"* ]]
    [ ! -e "$marker" ]
}

@test "PyTorch DDP trains on 2 nodes and ends with identical parameters" {
    run timeout 240 srun --dist-train -N2 -n4 "$TORCH_PYTHON" "$TOP/examples/ddp_train.py" --steps 30
    echo "$output"
    [ "$status" -eq 0 ]
    # the loss went down
    loss_halved_by 29
    # every rank reports, on both nodes, the same final parameters
    local digests
    [[ $(grep -c 'final parameters' <<<"$output") -eq 4 ]]
    grep 'final parameters' <<<"$output" | grep -q ' on node1:'
    grep 'final parameters' <<<"$output" | grep -q ' on node2:'
    digests=$(sed -n 's/.*final parameters //p' <<<"$output" | sort -u)
    [[ $(wc -l <<<"$digests") -eq 1 ]]
}
