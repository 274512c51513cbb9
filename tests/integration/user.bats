#!/usr/bin/env bats
# user.bats - everything else runs as root on the test cluster; here an
# ordinary user runs the steps, so that nothing relies on root: slurmstepd
# drops privileges for user_init and task_init, and the tasks are the user's.

# shellcheck disable=SC2016 # the tasks expand the variables of these bash -c programs

load helpers/common

TEST_USER=dt-test-user

setup_file() {
    user_file_setup "$TEST_USER"
    install -m 644 "$PLUGIN_SO" "$USER_DIR/dist_train.so"
    install -m 644 "$GPU_XML" "$USER_DIR/topology.xml"
    PLUGIN_SO=$USER_DIR/dist_train.so gpu_cluster_plugstack 3 "topology=$USER_DIR/topology.xml"
}

teardown_file() {
    user_file_teardown "$TEST_USER"
}

setup() {
    eval "$("$MINICLUSTER" env)"
    cd /
}

# Run a command as the test user with the cluster's environment.
as_user() {
    runuser -u "$TEST_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@"
}

@test "as an ordinary user: the environment, the GPU order and the CPU binding" {
    run as_user timeout 60 srun --dist-train -N2 -n4 --gres=gpu:4 bash -c \
        'echo "$(id -un) RANK=$RANK MASTER_ADDR=$MASTER_ADDR CVD=$CUDA_VISIBLE_DEVICES aff=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -c "^$TEST_USER RANK=[0-3] MASTER_ADDR=$(node_addr node1) " <<<"$output") -eq 4 ]]
    [[ $(grep -c ' CVD=0,1,2,3 aff=0$' <<<"$output") -eq 2 ]]
    [[ $(grep -c ' CVD=0,2,3,1 aff=1$' <<<"$output") -eq 2 ]]
}

@test "as an ordinary user: fail fast stops the step and srun names the rank" {
    run as_user timeout 60 srun --dist-train -N3 -n3 bash -c \
        'if [ $SLURM_PROCID = 2 ]; then sleep 1; exit 3; fi; exec sleep 120'
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $(grep -m1 'dist-train: rank' <<<"$output") == *"rank 2 on node3 exited with status 3"* ]]
}

@test "as an ordinary user: the arbitrary layout from the user's own hostfile" {
    local hf=$MINICLUSTER_DIR/hostfile.user
    printf 'node2\nnode1\n' > "$hf"
    chmod 644 "$hf"
    run as_user env SLURM_HOSTFILE="$hf" timeout 60 srun --dist-train=tf -n2 -m arbitrary \
        bash -c 'echo "RANK=$RANK MASTER_ADDR=$MASTER_ADDR"'
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "^RANK=0 MASTER_ADDR=$(node_addr node2)$" <<<"$output"
}
