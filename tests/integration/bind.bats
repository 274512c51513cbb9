#!/usr/bin/env bats
# bind.bats - GPU, CPU and NIC binding on the test cluster: 2 nodes of this
# machine's 2 CPUs, 4 placeholder GPUs each (gres), and the topology
# tests/topologies/minicluster-4gpu.xml: PU 0 on NUMA 0 with GPUs 0000:1b and
# 0000:3d, PU 1 on NUMA 1 with GPUs 0000:89 and 0000:b2 and the NIC mlx5_0.
# The affinity each task reports comes from /proc/self/status.  It runs under
# both cluster profiles (MINICLUSTER_PROFILE=site: task/affinity and
# ConstrainDevices).

load helpers/common

BIND_ENV="$TOP/tests/integration/helpers/bind-env"
# Slurm's global GPU index (PCI order) -> bus id
BUS=(0000:1b:00.0 0000:3d:00.0 0000:89:00.0 0000:b2:00.0)

# Point plugstack.conf at the plugin with these arguments.
plugstack() {
    gpu_cluster_plugstack 2 "$@" 2>/dev/null
}

setup_file() {
    "$MINICLUSTER" stop >/dev/null 2>&1 || true
    gpu_cluster_plugstack 2 "topology=$GPU_XML"
}

teardown_file() {
    cluster_stop
    rm -f /run/slurm-dist-train/site-topology-node[12].xml
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    plugstack "topology=$GPU_XML"
}

# Run bind-env in a step; lines sorted by rank in $lines, srun's stderr in $err.
bind_step() {
    run_bind_env srun "$@"
}

# The same inside an allocation: bind_alloc SALLOC_ARGS... -- SRUN_ARGS...
# (Slurm 22.05 refuses srun -O with --gres outside one).
bind_alloc() {
    local alloc=()
    while [[ $1 != -- ]]; do alloc+=("$1") && shift; done
    shift
    run_bind_env salloc "${alloc[@]}" srun "$@"
}

run_bind_env() {
    local out
    out=$(timeout 60 "$@" "$BIND_ENV" 2>"$BATS_TEST_TMPDIR/err") || {
        cat "$BATS_TEST_TMPDIR/err" >&2
        echo "srun $* failed" >&2
        return 1
    }
    err=$(cat "$BATS_TEST_TMPDIR/err")
    mapfile -t lines < <(sort -t= -k2 -n <<<"$out")
    printf '%s\n' "${lines[@]}"
}

# The bus id of the GPU that CUDA takes for position $2 of a task line's
# CUDA_VISIBLE_DEVICES: CUDA numbers the GPUs the task may open (DEVS) in PCI
# order, and CUDA_VISIBLE_DEVICES indexes that list.  Without a device cgroup
# that is every GPU; under ConstrainDevices (the site profile), Slurm's local
# indices.
visible_bus() {
    local line=$1 pos=$2 tok devs
    IFS=, read -r -a tok <<<"$(field "$line" CVD)"
    IFS=, read -r -a devs <<<"$(field "$line" DEVS)"
    echo "${BUS[${devs[${tok[$pos]}]}]}"
}

# What Slurm itself binds local rank $1 of a 2-task step on one node to: nothing
# without a task plugin (the default profile); its own core under task/affinity
# (the site profile).
slurm_affinity() {
    if [[ ${MINICLUSTER_PROFILE:-} == site ]]; then echo "$1"; else echo 0-1; fi
}

@test "-N2 -n4, 4 GPUs per node: each rank gets the GPUs of one NUMA node and its CPU" {
    bind_step --dist-train -N2 -n4 --gres=gpu:4
    [ "${#lines[@]}" -eq 4 ]
    local line lr
    for line in "${lines[@]}"; do
        lr=$(field "$line" LOCAL_RANK)
        if [[ $lr == 0 ]]; then
            [[ $(field "$line" GPUS) == "${BUS[0]},${BUS[1]}" ]]
            [[ $(field "$line" CPUS) == 0 && $(field "$line" MEMS) == 0 ]]
        else
            [[ $(field "$line" GPUS) == "${BUS[2]},${BUS[3]}" ]]
            [[ $(field "$line" CPUS) == 1 && $(field "$line" MEMS) == 1 ]]
        fi
        # cudaSetDevice(LOCAL_RANK) lands on the rank's first GPU, all 4 stay visible
        [[ $(visible_bus "$line" "$lr") == "$(field "$line" GPUS | cut -d, -f1)" ]]
        [[ $(tr ',' '\n' <<<"$(field "$line" CVD)" | sort -n | paste -sd,) == 0,1,2,3 ]]
        [[ $(field "$line" ORDER) == PCI_BUS_ID ]]
        # the shim's NCCL setup takes this device: the rank's first GPU
        [[ $(field "$line" DEVICE) == "$lr" ]]
        # the kernel agrees with the plan
        [[ $(field "$line" AFFINITY) == "$(field "$line" CPUS)" ]]
        [[ $(field "$line" OMP) == 1 ]]
        [[ $(field "$line" NIC) == mlx5_0 ]]
        # nic=auto is off by default
        [[ $(field "$line" IB_HCA) == unset && $(field "$line" UCX) == unset ]]
    done
}

@test "tasks = GPUs: one GPU each, neighbours share their NUMA node's only CPU, and verbose says so" {
    bind_alloc -N1 --exclusive --gres=gpu:4 -- --dist-train -n4 -O
    [[ $err != *"more ranks than CPUs"* ]]
    bind_alloc -N1 --exclusive --gres=gpu:4 -- --dist-train=verbose -n4 -O
    local r
    for r in 0 1 2 3; do
        [[ $(field "${lines[r]}" GPUS) == "${BUS[r]}" ]]
        [[ $(visible_bus "${lines[r]}" "$r") == "${BUS[r]}" ]]
        [[ $(field "${lines[r]}" AFFINITY) == $((r / 2)) ]]
    done
    [[ $err == *"more ranks than CPUs"* ]]
}

@test "a GPU subset: a second job gets GPUs 2,3 and the CPU beside them" {
    local holder
    holder=$(sbatch --parsable -o /dev/null -N1 -w node1 -n1 --gres=gpu:2 --wrap 'sleep 120')
    # wait until the first job runs
    for _ in $(seq 50); do
        [[ $(squeue -h -j "$holder" -o %T) == RUNNING ]] && break
        sleep 0.2
    done
    bind_step --dist-train -N1 -w node1 -n1 --gres=gpu:2
    scancel "$holder"
    [[ $(visible_bus "${lines[0]}" 0) == "${BUS[2]}" && $(visible_bus "${lines[0]}" 1) == "${BUS[3]}" ]]
    [[ $(field "${lines[0]}" GPUS) == "${BUS[2]},${BUS[3]}" ]]
    [[ $(field "${lines[0]}" AFFINITY) == 1 ]]
}

@test "no GPUs: ranks spread over the NUMA nodes in rank order, CUDA untouched" {
    bind_step --dist-train -N1 -n2
    [[ $(field "${lines[0]}" AFFINITY) == 0 && $(field "${lines[1]}" AFFINITY) == 1 ]]
    [[ $(field "${lines[0]}" CVD) == unset && $(field "${lines[0]}" GPUS) == unset ]]
    [[ $(field "${lines[1]}" MEMS) == 1 ]]
}

@test "the step's CPUs are the job's cores: one for -n1, the whole node with --exclusive" {
    bind_step --dist-train -N1 -n1
    [[ $(field "${lines[0]}" AFFINITY) == 0 && $(field "${lines[0]}" CPUS) == 0 ]]
    bind_alloc -N1 --exclusive -- --dist-train -n1
    [[ $(field "${lines[0]}" AFFINITY) == 0-1 && $(field "${lines[0]}" OMP) == 2 ]]
}

@test "without --dist-train nothing is bound" {
    bind_step -N1 -n2 --gres=gpu:4
    [[ $(field "${lines[0]}" CVD) == 0,1,2,3 && $(field "${lines[1]}" CVD) == 0,1,2,3 ]]
    [[ $(field "${lines[0]}" AFFINITY) == "$(slurm_affinity 0)" ]]
    [[ $(field "${lines[1]}" AFFINITY) == "$(slurm_affinity 1)" ]]
    [[ $(field "${lines[0]}" GPUS) == unset && $(field "${lines[0]}" ORDER) == unset ]]
}

@test "bind=gpu orders GPUs only; bind=cpu binds CPUs only; bind=none neither" {
    bind_step --dist-train=bind=gpu -N1 -n2 --gres=gpu:4
    [[ $(field "${lines[1]}" CVD) != 0,1,2,3 && $(field "${lines[1]}" AFFINITY) == "$(slurm_affinity 1)" ]]
    bind_step --dist-train=bind=cpu -N1 -n2 --gres=gpu:4
    [[ $(field "${lines[1]}" CVD) == 0,1,2,3 && $(field "${lines[1]}" AFFINITY) == 1 ]]
    bind_step --dist-train=torch,bind=none -N1 -n2 --gres=gpu:4
    [[ $(field "${lines[1]}" CVD) == 0,1,2,3 && $(field "${lines[1]}" AFFINITY) == "$(slurm_affinity 1)" ]]
    [[ $(field "${lines[1]}" CPUS) == unset && $(field "${lines[1]}" RANK) == 1 ]]
}

@test "visible=own: only the rank's own GPUs are visible" {
    bind_step --dist-train=visible=own -N1 -n2 --gres=gpu:4
    [[ $(field "${lines[0]}" CVD) == 0,1 && $(field "${lines[1]}" CVD) == 2,3 ]]
    [[ $(field "${lines[0]}" DEVICE) == 0 && $(field "${lines[1]}" DEVICE) == 0 ]]
}

@test "the site's bind=none turns binding off, even when the user asks" {
    plugstack "topology=$GPU_XML" bind=none
    bind_step --dist-train=bind=auto -N1 -n2 --gres=gpu:4
    [[ $(field "${lines[1]}" CVD) == 0,1,2,3 && $(field "${lines[1]}" AFFINITY) == "$(slurm_affinity 1)" ]]
    [[ $(field "${lines[1]}" MASTER_ADDR) != unset ]]
}

@test "nic=auto exports the nearest NIC for NCCL and UCX, keeping the user's" {
    plugstack "topology=$GPU_XML" nic=auto
    bind_step --dist-train -N1 -n2 --gres=gpu:4
    [[ $(field "${lines[1]}" IB_HCA) == =mlx5_0 && $(field "${lines[1]}" UCX) == mlx5_0:1 ]]
    NCCL_IB_HCA=mlx5_9 bind_step --dist-train -N1 -n1 --gres=gpu:4
    [[ $(field "${lines[0]}" IB_HCA) == mlx5_9 ]]
}

@test "the user's --gpus-per-task and --cpu-bind are respected, and verbose says so" {
    bind_step --dist-train=verbose -N1 -n2 --gpus-per-task=1 --cpu-bind=none
    [[ $(visible_bus "${lines[0]}" 0) == "${BUS[0]}" && $(visible_bus "${lines[1]}" 0) == "${BUS[1]}" ]]
    [[ $(field "${lines[1]}" AFFINITY) == 0-1 ]]
    [[ $err == *"GPUs left as Slurm bound them"* ]]
    [[ $err == *"CPUs left as Slurm bound them"* ]]
}

@test "verbose: each node's binding table, and what planning and applying cost" {
    bind_step --dist-train=verbose -N2 -n4 --gres=gpu:4
    echo "$err"
    [[ $(grep -c 'dist-train: node[12]:   LOCAL_RANK  RANK  GPUS' <<<"$err") -eq 2 ]]
    grep -q "dist-train: node2:   1 *3 *${BUS[2]},${BUS[3]}  1  1  mlx5_0" <<<"$err"
    grep -q "dist-train: node1: binding planned in [0-9]* us (topology loaded in [0-9]* us, from \(the\|this node.s checked copy of the\) site.s file)" <<<"$err"
    grep -q "dist-train: node2: local rank 0's binding applied in [0-9]* us" <<<"$err"
}


@test "a broken topology file: the step runs with the environment only, and a warning says why" {
    head -c 300 "$GPU_XML" > "$MINICLUSTER_DIR/broken.xml"
    plugstack "topology=$MINICLUSTER_DIR/broken.xml"
    bind_step --dist-train -N1 -n2 --gres=gpu:4
    [[ $(field "${lines[1]}" RANK) == 1 && $(field "${lines[1]}" MASTER_ADDR) != unset ]]
    [[ $(field "${lines[1]}" CVD) == 0,1,2,3 && $(field "${lines[1]}" CPUS) == unset ]]
    [[ $err == *"warning: node1"*"broken.xml"* ]]
    [[ $(grep -c warning <<<"$err") -eq 1 ]]
}

# Where node1's topology came from in a verbose step.
topology_source() {
    bind_step --dist-train=verbose -N1 -n1 -w node1 --gres=gpu:4 >/dev/null
    sed -n "s/^dist-train: node1: binding planned in [0-9]* us (topology loaded in [0-9]* us, \(.*\))$/\1/p" <<<"$err"
}

@test "a site topology file is read in a child once; later steps read its checked copy; an edit is read again" {
    local copy=/run/slurm-dist-train/site-topology-node1.xml
    rm -f "$copy"
    # (the nodes' /tmp is their own: the file lies in the cluster's directory)
    cp "$GPU_XML" "$MINICLUSTER_DIR/site.xml"
    plugstack "topology=$MINICLUSTER_DIR/site.xml"
    [[ $(topology_source) == "from the site's file" ]]
    [[ $(stat -c '%U %a' "$copy") == "root 644" ]]
    tail -n 1 "$copy" | grep -q " key=format=3 hwloc=0x[0-9a-f]* boot=$(cat /proc/sys/kernel/random/boot_id) site=[0-9a-f]*:[0-9a-f]*:$(stat -c %s "$MINICLUSTER_DIR/site.xml"):[0-9]*\.[0-9]* -->$"
    [[ $(topology_source) == "from this node's checked copy of the site's file" ]]
    # the admin edits the file: read again
    touch "$MINICLUSTER_DIR/site.xml"
    [[ $(topology_source) == "from the site's file" ]]
    [[ $(topology_source) == "from this node's checked copy of the site's file" ]]
    # a copy whose text was changed after it was sealed is not read
    sed -i '0,/type="Machine"/s//type="Mechine"/' "$copy"
    [[ $(topology_source) == "from the site's file" ]]
    refute grep -q 'type="Mechine"' "$copy"
}

@test "a corrupt topology file that crashes hwloc: the step runs, slurmstepd and the node live on" {
    # the Machine's complete_cpuset attribute renamed: hwloc 2.9's XML import dies on it
    sed '0,/complete_cpuset=/s//complete_xxxxxx=/' "$GPU_XML" > "$MINICLUSTER_DIR/corrupt.xml"
    plugstack "topology=$MINICLUSTER_DIR/corrupt.xml"
    bind_step --dist-train -N2 -n2 --gres=gpu:4
    echo "$err"
    [[ $(field "${lines[1]}" RANK) == 1 && $(field "${lines[1]}" MASTER_ADDR) != unset ]]
    if [[ $(pkg-config --modversion hwloc) == 2.9.* ]]; then
        [[ $(grep -c "warning: node[12]: topology=$MINICLUSTER_DIR/corrupt.xml: hwloc crashed reading it (signal 11, Segmentation fault): the file is corrupt (check it with dist-train-plan --topology): not bound" <<<"$err") -eq 2 ]]
    fi
    # every step after it runs too, and no node was drained
    bind_step --dist-train -N2 -n2 --gres=gpu:4
    [[ $(field "${lines[1]}" RANK) == 1 ]]
    [[ -z $(sinfo -h -R) ]]
    [[ $(settled_states node1 node2) == idle ]]
    # the admin's tool says the same
    run "$TOP/tools/dist-train-plan" --topology "$MINICLUSTER_DIR/corrupt.xml"
    [ "$status" -ne 0 ] || [[ $(pkg-config --modversion hwloc) != 2.9.* ]]
    echo "$output"
    [[ $(pkg-config --modversion hwloc) != 2.9.* ]] || [[ $output == "dist-train-plan: topology=$MINICLUSTER_DIR/corrupt.xml: hwloc crashed reading it (signal 11, Segmentation fault): the file is corrupt" ]]
}

@test "GPUs that Slurm lists but the topology lacks: environment only, with a warning" {
    # this machine's own topology: no GPUs at all
    plugstack
    bind_step --dist-train -N1 -n2 --gres=gpu:2
    [[ $(field "${lines[1]}" RANK) == 1 && $(field "${lines[1]}" CVD) == 0,1 ]]
    [[ $(field "${lines[1]}" AFFINITY) == "$(slurm_affinity 1)" ]]
    [[ $err == *"Slurm gave the step GPU 0 but the topology has 0 NVIDIA GPUs"* ]]
}
