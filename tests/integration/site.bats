#!/usr/bin/env bats
# site.bats - the plugin under Slurm as GPU sites run it (scripts/minicluster
# --profile site): proctrack/cgroup, task/cgroup,task/affinity,
# ConstrainCores, ConstrainDevices and ConstrainRAMSpace, memory scheduled.
# 2 nodes of this machine's 2 CPUs with 4 placeholder GPUs each (character
# devices, major 195, in gres.conf) and the topology
# tests/topologies/minicluster-4gpu.xml (GPUs 0000:1b and 0000:3d beside
# CPU 0, 0000:89 and 0000:b2 beside CPU 1).  Each task's line (bind-env)
# reports its real affinity, the GPUs its device cgroup lets it open (DEVS)
# and its cpuset cgroup's CPUs (CPUSET).

load helpers/common

# Every cluster this file starts or reconfigures is the site profile.
export MINICLUSTER_PROFILE=site
BIND_ENV="$TOP/tests/integration/helpers/bind-env"
CACHE_DIR=/run/slurm-dist-train
# Slurm's global GPU index (PCI order) -> bus id
BUS=(0000:1b:00.0 0000:3d:00.0 0000:89:00.0 0000:b2:00.0)

# The site profile needs cgroup v1 hierarchies (scripts/minicluster says why).
require_site_profile() {
    local why
    why=$("$MINICLUSTER" can-run --profile site 2>&1) || skip "$why"
}

plugstack() {
    gpu_cluster_plugstack 2 "$@" 2>/dev/null
}

setup_file() {
    require_site_profile
    "$MINICLUSTER" stop >/dev/null 2>&1 || true
    gpu_cluster_plugstack 2 "topology=$GPU_XML"
}

teardown_file() {
    cluster_stop
    rm -f "$CACHE_DIR"/topology-node[12].xml "$CACHE_DIR"/site-topology-node[12].xml
}

setup() {
    require_site_profile
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    plugstack "topology=$GPU_XML"
}

# The GPUs CUDA would see in a task, in CUDA's order, by bus id: it numbers
# the GPUs its device cgroup lets it open (DEVS) in PCI order, and
# CUDA_VISIBLE_DEVICES indexes that list.
cuda_view() {
    local line=$1 tok devs i view=()
    IFS=, read -r -a devs <<<"$(field "$line" DEVS)"
    [[ ${devs[0]} != none ]] || { echo none; return 0; }
    if [[ $(field "$line" CVD) == unset ]]; then
        tok=("${!devs[@]}")
    else
        IFS=, read -r -a tok <<<"$(field "$line" CVD)"
    fi
    for i in "${tok[@]}"; do view+=("${BUS[${devs[$i]}]:-invalid-$i}"); done
    (IFS=,; echo "${view[*]}")
}

# The CPU list $1 lies within the CPU list $2 (both as the kernel prints them).
cpus_within() {
    local a b
    a=$(python3 -c 'import sys
def ex(s):
    out = set()
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
print(int(ex(sys.argv[1]) <= ex(sys.argv[2])))' "$1" "$2")
    [[ $a == 1 ]] || { echo "CPUs $1 are not within $2" >&2; return 1; }
}

# Start a job holding $1 GPUs and one core on node1, and wait until it runs.
hold_node1_gpus() {
    holder=$(sbatch --parsable -o /dev/null -N1 -w node1 -n1 --gres=gpu:"$1" --wrap 'sleep 120')
    for _ in $(seq 100); do
        [[ $(squeue -h -j "$holder" -o %T) == RUNNING ]] && return 0
        sleep 0.2
    done
    echo "job $holder did not start" >&2
    return 1
}

@test "the site profile: cgroup tracking, task/affinity and each node's own cgroup tree" {
    [[ $(scontrol show config | awk '$1 == "ProctrackType" {print $3}') == proctrack/cgroup ]]
    [[ $(scontrol show config | awk '$1 == "TaskPlugin" {print $3}') == *task/cgroup* ]]
    [[ $(scontrol show config | awk '$1 == "TaskPlugin" {print $3}') == *task/affinity* ]]
    grep -qx ConstrainDevices=yes "$MINICLUSTER_DIR/cgroup.conf"
    grep -q "^Name=gpu File=$MINICLUSTER_DIR/dev/nvidia\[0-3\]" "$MINICLUSTER_DIR/gres.conf"
    [[ $(stat -c '%F %t' "$MINICLUSTER_DIR/dev/nvidia2") == "character special file c3" ]]
    # while a step runs, its tasks' cgroups (/slurm_NODE/uid_0/job_J/step_0/...
    # in the node's cgroup namespace) lie in that node's subtree of the host's
    rm -f "$MINICLUSTER_DIR"/cg.*
    timeout 60 srun -N2 -n2 bash -c "cat /proc/self/cgroup >$MINICLUSTER_DIR/cg.\$SLURM_NODEID; sleep 4" &
    local step=$! c top path i
    for _ in $(seq 50); do
        [[ -s $MINICLUSTER_DIR/cg.0 && -s $MINICLUSTER_DIR/cg.1 ]] && break
        sleep 0.1
    done
    for c in cpuset memory devices freezer; do
        top=$(grep "/$c/" "$MINICLUSTER_DIR/cgroups")
        for i in 0 1; do
            path=$(sed -n "s/^[0-9]*:$c:\(.*\)$/\1/p" "$MINICLUSTER_DIR/cg.$i")
            echo "$c node$((i + 1)): $path"
            [[ $path == */job_*/step_0* ]]
            [[ -d $top/node$((i + 1))$path ]]
        done
    done
    wait "$step"
    # a task is in its step's cpuset, and Slurm bound it to its core
    run_lines srun -N1 -n1 "$BIND_ENV"
    [[ $(field "${lines[0]}" CPUSET) == 0 && $(field "${lines[0]}" AFFINITY) == 0 ]]
}

@test "ConstrainDevices: Slurm's local indices; set_device(LOCAL_RANK) lands on the rank's own GPU, named by bus id" {
    hold_node1_gpus 2
    # the second job gets GPUs 2 and 3, which its tasks see as 0 and 1
    run_lines srun --dist-train -N1 -w node1 -n2 -O --gres=gpu:2 "$BIND_ENV"
    scancel "$holder"
    local r line
    for r in 0 1; do
        line=${lines[r]}
        # the device cgroup: only the job's GPUs open
        [[ $(field "$line" DEVS) == 2,3 ]]
        # Slurm's indices were local, and the plugin's order keeps them so
        [[ $(field "$line" CVD) =~ ^[01],[01]$ ]]
        [[ $(field "$line" GPUS) == "${BUS[2 + r]}" ]]
        [[ $(field "$line" DEVICE) == "$r" ]]
        # cudaSetDevice(LOCAL_RANK) is the rank's own GPU
        [[ $(cuda_view "$line" | cut -d, -f$((r + 1))) == "${BUS[2 + r]}" ]]
    done
    # without the plugin: the same GPUs, Slurm's order
    run_lines srun -N1 -w node1 -n1 --gres=gpu:2 "$BIND_ENV"
    [[ $(field "${lines[0]}" DEVS) == 0,1 && $(field "${lines[0]}" CVD) == 0,1 ]]
}

# Each of Slurm's own binding options is left as the user asked: the step
# with --dist-train=verbose gets the CPUs and GPUs of the same step without
# the plugin, and verbose says so.
@test "Slurm's --cpu-bind, --gpu-bind, --gpus-per-task and --ntasks-per-gpu are left as asked, and verbose says so" {
    local args kind r want got
    while IFS='|' read -r kind args; do
        # shellcheck disable=SC2086 # one word per option
        run_lines srun -N1 -w node2 -n2 $args "$BIND_ENV"
        want=()
        for r in 0 1; do want+=("$(field "${lines[r]}" AFFINITY) $(cuda_view "${lines[r]}")"); done
        # shellcheck disable=SC2086
        run_lines srun --dist-train=verbose -N1 -w node2 -n2 $args "$BIND_ENV"
        for r in 0 1; do
            got="$(field "${lines[r]}" AFFINITY) $(cuda_view "${lines[r]}")"
            [[ $got == "${want[r]}" ]] || { echo "$args: rank $r got $got, Slurm alone ${want[r]}" >&2; return 1; }
            [[ $(field "${lines[r]}" RANK) == "$r" && $(field "${lines[r]}" MASTER_PORT) != unset ]]
        done
        # shellcheck disable=SC2154 # run_lines (helpers/common.bash) sets it
        [[ $err == *"$kind left as Slurm bound them"* ]] || { echo "$args: $err" >&2; return 1; }
    done <<'EOF'
CPUs|--cpu-bind=cores
CPUs|--cpu-bind=none
CPUs|--cpu-bind=map_cpu:1,0
GPUs|--gres=gpu:4 --gpu-bind=closest
GPUs|--gres=gpu:4 --gpu-bind=single:1
GPUs|--gpus-per-task=1
GPUs|--gpus=2 --ntasks-per-gpu=1
EOF
    # without them, task/affinity's own default binding is not taken for the
    # user's: the plugin binds by the topology
    run_lines srun --dist-train=verbose -N1 -w node2 -n2 --gres=gpu:4 "$BIND_ENV"
    [[ $err != *"left as Slurm bound them"* ]]
    [[ $(field "${lines[1]}" CPUS) == 1 && $(field "${lines[1]}" AFFINITY) == 1 ]]
    [[ $(field "${lines[1]}" GPUS) == "${BUS[2]},${BUS[3]}" ]]
}

# Two steps of $2 tasks at once in one 2-core allocation on node1, started
# with srun $1 a second apart; their bind-env lines in $lines.
two_steps() {
    run_lines salloc -N1 -w node1 -n2 bash -c "
        srun $1 -n$2 --dist-train bash -c '$BIND_ENV; sleep 3' &
        sleep 1
        srun $1 -n$2 --dist-train bash -c '$BIND_ENV; sleep 1' &
        wait"
}

@test "concurrent steps: srun --exact binds each within its own cores with its own port; --overlap too" {
    local a b
    two_steps --exact 1
    [ "${#lines[@]}" -eq 2 ]
    a=${lines[0]} b=${lines[1]}
    # disjoint cpusets, each task bound by the plugin inside its own
    [[ $(field "$a" CPUSET) != "$(field "$b" CPUSET)" ]]
    for line in "$a" "$b"; do
        [[ $(field "$line" CPUS) != unset ]]
        [[ $(field "$line" AFFINITY) == "$(field "$line" CPUS)" ]]
        cpus_within "$(field "$line" AFFINITY)" "$(field "$line" CPUSET)"
    done
    [[ $(field "$a" MASTER_PORT) != "$(field "$b" MASTER_PORT)" ]]

    two_steps --overlap 2
    [ "${#lines[@]}" -eq 4 ]
    local ports=()
    for line in "${lines[@]}"; do
        [[ $(field "$line" AFFINITY) == "$(field "$line" CPUS)" ]]
        cpus_within "$(field "$line" AFFINITY)" "$(field "$line" CPUSET)"
        ports+=("$(field "$line" MASTER_PORT)")
    done
    # two steps, two ports
    [[ $(printf '%s\n' "${ports[@]}" | sort -u | wc -l) -eq 2 ]]
}

@test "a heterogeneous step is refused before any program runs, with the fix; one component runs" {
    run timeout 90 salloc -N1 -n1 : -N1 -n1 bash -c "
        srun --het-group=0,1 --dist-train touch '$MINICLUSTER_DIR/het.%t'
        echo het-rc=\$?
        srun --het-group=1 --dist-train $BIND_ENV"
    echo "$output"
    [[ $output == *het-rc=1* ]]
    [[ $(grep -c "a heterogeneous step (srun --het-group=0,1, or A : B) is not supported:.*srun --het-group=N --dist-train" <<<"$output") -eq 2 ]]
    [[ -z $(compgen -G "$MINICLUSTER_DIR/het.*") ]]
    # one component of a heterogeneous job is an ordinary step
    grep -q '^RANK=0 .*MASTER_ADDR=10\.' <<<"$output"
    [[ -z $(sinfo -h -R) ]]
}

@test "ConstrainRAMSpace: a rank over its memory is killed by the OOM killer, and fail fast names it" {
    # (allocates in 64 MiB steps, at most 1 GiB, whatever the limit does)
    cat >"$MINICLUSTER_DIR/hog.py" <<'EOF'
import time
chunks = []
for i in range(16):
    chunks.append(b"\1" * (64 << 20))
    time.sleep(0.05)
print("allocated 1 GiB: no limit held")
EOF
    SECONDS=0
    run timeout 120 srun -N2 -n2 --mem=256M --dist-train bash -c \
        "if [ \$RANK = 1 ]; then exec python3 $MINICLUSTER_DIR/hog.py; else exec sleep 60; fi"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output != *"no limit held"* ]]
    [[ $output == *"rank 1 on node2 was killed by signal 9 (SIGKILL): stopping every rank"* ]]
    [[ $output == *"node2: task 1: Out Of Memory"* ]]
    # fail fast: rank 0 did not sleep its minute
    ((SECONDS < 45))
    [[ $(settled_states node1 node2) == idle ]]
}

@test "the topology cache under ConstrainCores: steps on disjoint cores, the first after a cache reset, each bound within its own" {
    # this machine's own topology, loaded live and cached
    plugstack
    rm -f "$CACHE_DIR/topology-node1.xml"
    run_lines salloc -N1 -w node1 -n2 bash -c "
        srun --exact -n1 --dist-train=verbose bash -c '$BIND_ENV; sleep 4' &
        for _ in \$(seq 50); do [ -e $CACHE_DIR/topology-node1.xml ] && break; sleep 0.1; done
        srun --exact -n1 --dist-train=verbose $BIND_ENV
        wait"
    echo "$err"
    [ "${#lines[@]}" -eq 2 ]
    [[ $(grep -c "node1: binding planned in [0-9]* us (topology loaded in [0-9]* us, live, without I/O devices)" <<<"$err") -eq 1 ]]
    [[ $(grep -c "node1: binding planned in [0-9]* us (topology loaded in [0-9]* us, from this node's cache)" <<<"$err") -eq 1 ]]
    [[ $(field "${lines[0]}" CPUSET) != "$(field "${lines[1]}" CPUSET)" ]]
    for line in "${lines[@]}"; do
        [[ $(field "$line" CPUS) == "$(field "$line" CPUSET)" ]]
        [[ $(field "$line" AFFINITY) == "$(field "$line" CPUSET)" ]]
    done
    [[ $err != *warning* ]]
}
