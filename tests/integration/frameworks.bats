#!/usr/bin/env bats
# frameworks.bats - every way users launch: one task per node that runs
# torchrun (--dist-train=launcher), and the frameworks that read or write the
# same variables (Lightning, submitit, DeepSpeed), on a 3-node cluster of
# this machine's 2 CPUs and 4 placeholder GPUs each.  torchrun is Debian's
# (helpers/torchrun); the frameworks Debian does not package are reproduced from their
# source by helpers/frameworks.py.

# shellcheck disable=SC2016 # the tasks expand the variables of these bash -c programs

load helpers/common

DDP="$TOP/tests/integration/helpers/ddp_env.py"
FRAMEWORKS="$TOP/tests/integration/helpers/frameworks.py"
# Debian's torchrun, with Debian 12's crash on its default --redirects=0 mended
TORCHRUN=$TOP/tests/integration/helpers/torchrun

setup_file() {
    "$MINICLUSTER" stop >/dev/null 2>&1 || true
    gpu_cluster_plugstack 3 "topology=$GPU_XML"
}

teardown_file() {
    cluster_stop
    rm -f /run/slurm-dist-train/site-topology-node[123].xml
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
}

# Run a step: its RANK= lines sorted by rank in $lines, srun's stderr in $err.
ranks() {
    run_lines srun "$@"
}

# Check the world that $1 nodes of $2 processes each saw through torchrun.
check_torchrun_world() {
    local nodes=$1 nproc=$2 world=$(($1 * $2)) line rank group host port=""
    local -A host_of_group=() seen=()
    [[ ${#lines[@]} -eq $world ]] || { echo "expected $world ranks, got ${#lines[@]}" >&2; return 1; }
    for line in "${lines[@]}"; do
        rank=$(field "$line" RANK) group=$(field "$line" GROUP) host=$(field "$line" HOST)
        [[ -z ${seen[$rank]:-} ]] || { echo "rank $rank twice" >&2; return 1; }
        seen[$rank]=1
        expect_eq "$line" WORLD "$world" || return 1
        expect_eq "$line" LWS "$nproc" || return 1
        expect_eq "$line" SUM $((world * (world + 1) / 2)) || return 1
        # torchrun numbers the ranks node by node: node rank times processes
        expect_eq "$line" GROUP $((rank / nproc)) || return 1
        expect_eq "$line" LOCAL_RANK $((rank % nproc)) || return 1
        [[ -z ${host_of_group[$group]:-} || ${host_of_group[$group]} == "$host" ]] ||
            { echo "node rank $group on two hosts" >&2; return 1; }
        host_of_group[$group]=$host
        expect_eq "$line" MASTER_ADDR "$(node_addr node1)" || return 1
        port=${port:-$(field "$line" MASTER_PORT)}
        expect_eq "$line" MASTER_PORT "$port" || return 1
        # the one task's CPUs, which its launcher's processes inherit
        expect_eq "$line" AFFINITY "$(field "$line" CPUS)" || return 1
        [[ $(field "$line" RUN_ID) == slurm-* ]] || { echo "RUN_ID: $line" >&2; return 1; }
    done
    [[ ${#host_of_group[@]} -eq $nodes ]] || { echo "ranks on ${#host_of_group[@]} nodes" >&2; return 1; }
    ((port >= 20000 && port <= 32767)) || { echo "MASTER_PORT $port outside 20000-32767" >&2; return 1; }
}

@test "launcher: torchrun on 2 nodes, no flags, 2 processes each" {
    # (USE_LIBUV=0: Debian's PyTorch 2.x lacks libuv, which torchrun's store asks for)
    # (2 nodes, not 3: nine PyTorch processes at once, beside the suite's other lanes on
    # 2 CPUs, took up to 105 s of the step's 240)
    USE_LIBUV=0 ranks -N2 --ntasks-per-node=1 --dist-train=launcher,nproc=2 "$TORCHRUN" "$DDP"
    check_torchrun_world 2 2
}

@test "launcher: one process per GPU of the node, and the GPUs in PCI order" {
    # what the launcher is told, from the node's 4 GPUs
    local show='echo "$SLURM_NODEID $PET_NNODES $PET_NODE_RANK $PET_NPROC_PER_NODE $WORLD_SIZE'
    show+=' $LOCAL_WORLD_SIZE $BASE_RANK $NODE_RANK $PET_MASTER_ADDR:$PET_MASTER_PORT'
    show+=' ${RANK:-none} ${CUDA_VISIBLE_DEVICES:-none}"'
    run timeout 60 srun -N2 --ntasks-per-node=1 --gres=gpu:4 --dist-train=launcher,verbose \
        sh -c "$show"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"launcher profile, one launcher on each of 2 nodes (node[1-2]) starting 4 processes each"* ]]
    local addr
    addr=$(node_addr node1)
    [[ $output == *"0 2 0 4 8 4 0 0 $addr:"*" none 0,1,2,3"* ]]
    [[ $output == *"1 2 1 4 8 4 4 1 $addr:"*" none 0,1,2,3"* ]]
}

@test "launcher: more than one task on a node is refused before launch" {
    local marker=$BATS_TEST_TMPDIR/ran
    run timeout 60 srun -N2 -n4 --dist-train=launcher touch "$marker"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"--dist-train=launcher runs one task per node"* ]]
    [[ $output == *"4 tasks on 2 nodes: add --ntasks-per-node=1"* ]]
    [[ ! -e $marker ]]
    # and the nodes stay in service
    run timeout 30 srun -N3 --ntasks-per-node=1 --dist-train=launcher true
    [ "$status" -eq 0 ]
}

@test "launcher: nproc= outside the launcher profile is refused, naming it" {
    run timeout 30 srun -N1 --dist-train=torch,nproc=2 true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"nproc= is for the launcher profile"* ]]
}

@test "Lightning: --dist-train=lightning keeps SLURMEnvironment and its auto-requeue" {
    ranks -N2 --ntasks-per-node=2 --dist-train=lightning "$TORCH_PYTHON" "$FRAMEWORKS" lightning
    [[ ${#lines[@]} -eq 4 ]]
    local line
    for line in "${lines[@]}"; do
        expect_eq "$line" ENV SLURMEnvironment
        expect_eq "$line" REQUEUE SIGUSR1
        expect_eq "$line" SUM 10
        [[ $(field "$line" MASTER) == "$(node_addr node1)":* ]]
    done
}

@test "Lightning: the torch profile makes it TorchElastic, without auto-requeue" {
    # what the lightning profile is for: TORCHELASTIC_RUN_ID wins over Slurm
    ranks -N2 --ntasks-per-node=1 --dist-train "$TORCH_PYTHON" "$FRAMEWORKS" lightning
    [[ ${#lines[@]} -eq 2 ]]
    expect_eq "${lines[0]}" ENV TorchElasticEnvironment
    expect_eq "${lines[0]}" REQUEUE none
}

@test "submitit: export() does not raise under --dist-train=submitit" {
    ranks -N2 --ntasks-per-node=2 --gres=gpu:4 --dist-train=submitit \
        "$TORCH_PYTHON" "$FRAMEWORKS" submitit export
    [[ ${#lines[@]} -eq 4 ]]
    local line
    for line in "${lines[@]}"; do
        expect_eq "$line" EXPORT ok
        expect_eq "$line" WORLD 4
    done
}

@test "submitit: the user guide's recipe trains with rank 0's address and the GPU order" {
    ranks -N2 --ntasks-per-node=2 --gres=gpu:4 --dist-train=submitit \
        "$TORCH_PYTHON" "$FRAMEWORKS" submitit recipe
    [[ ${#lines[@]} -eq 4 ]]
    local line
    for line in "${lines[@]}"; do
        expect_eq "$line" EXPORT ok
        expect_eq "$line" SUM 10
        [[ $(field "$line" MASTER) == "$(node_addr node1)":* ]]
        # the plugin's order stays: the rank's own GPU at LOCAL_RANK
        expect_eq "$line" CVD "$(field "$line" CVD_BEFORE)"
        [[ $(field "$line" CVD) != unset ]]
    done
}

@test "submitit: under the torch profile export() raises (what the profile avoids)" {
    ranks -N1 -n1 --dist-train "$TORCH_PYTHON" "$FRAMEWORKS" submitit export
    [[ ${lines[0]} == *"EXPORT=raised (Cannot export environment variables as MASTER_ADDR is already set)"* ]]
}

@test "DeepSpeed: init_distributed skips its discovery under --dist-train" {
    ranks -N2 --ntasks-per-node=2 --dist-train "$TORCH_PYTHON" "$FRAMEWORKS" deepspeed
    [[ ${#lines[@]} -eq 4 ]]
    local line
    for line in "${lines[@]}"; do
        expect_eq "$line" DISCOVERY skipped
        expect_eq "$line" SUM 10
    done
    # without the plugin it would need mpi4py
    run timeout 240 srun -N1 -n1 "$TORCH_PYTHON" "$FRAMEWORKS" deepspeed
    [[ $output == *"DISCOVERY=mpi4py MISSING=RANK,WORLD_SIZE,MASTER_ADDR,MASTER_PORT,LOCAL_RANK"* ]]
}
