#!/usr/bin/env bats
# topocache.bats - the live machine's topology on a 2-node cluster without a
# site topology file, whose nodes declare 8 CPUs (this machine has 2).  The
# per-boot cache: the first step loads the live machine and saves it, later
# steps read the cache; stale, corrupt or foreign caches are ignored and
# rewritten; a step without GPUs or NICs never walks the PCI bus, nor does one
# whose user names GPUs on a machine that has none.  Binding when Slurm names
# cores the machine lacks.

load helpers/common

CACHE_DIR=/run/slurm-dist-train
BIND_ENV="$TOP/tests/integration/helpers/bind-env"

setup_file() {
    cluster_start 2
}

teardown_file() {
    cluster_stop
    rm -f "$CACHE_DIR"/topology-node[12].xml
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
}

# The topology line verbose prints for node $1 in a step run with $2...
source_of() {
    local node=$1 out
    shift
    out=$(timeout 60 srun --dist-train=verbose "$@" true 2>&1) || { echo "$out" >&2; return 1; }
    sed -n "s/^dist-train: $node: binding planned in [0-9]* us (topology loaded in [0-9]* us, \(.*\))$/\1/p" <<<"$out"
}

# plugstack.conf: the plugin with these arguments (read again at each step).
plugstack() {
    printf 'required %s %s\n' "$PLUGIN_SO" "$*" > "$MINICLUSTER_DIR/plugstack.conf"
}

# The key in the cache's seal (its last line).
cache_key() {
    tail -n 1 "$CACHE_DIR/topology-$1.xml" | sed -n 's/^<!-- slurm-dist-train topology cache: length=[0-9]* fnv1a64=[0-9a-f]* key=\(.*\) -->$/\1/p'
}

@test "the first step loads the live machine and saves it; the next reads the cache" {
    rm -f "$CACHE_DIR"/topology-node[12].xml
    [[ $(source_of node1 -N2 -n2) == "live, without I/O devices" ]]
    # root's file, nobody else may write it; keyed by this boot and hwloc
    [[ $(stat -c '%U %a' "$CACHE_DIR/topology-node1.xml") == "root 644" ]]
    [[ $(stat -c '%U %a' "$CACHE_DIR") == "root 755" ]]
    [[ $(cache_key node1) == "format=3 hwloc=0x"*" boot=$(cat /proc/sys/kernel/random/boot_id) io=0" ]]
    [[ -f $CACHE_DIR/topology-node2.xml ]]
    [[ $(source_of node1 -N2 -n2) == "from this node's cache" ]]
    [[ $(source_of node2 -N2 -n2) == "from this node's cache" ]]
    # no temporary file left behind
    [[ -z $(find "$CACHE_DIR" -name '.topology-*') ]]
}

@test "the job user's umask 077 does not make the cache directory private" {
    rm -f "$CACHE_DIR"/* "$CACHE_DIR"/.topology-*
    rmdir "$CACHE_DIR"
    [[ $(umask 077 && source_of node1 -N1 -n1 -w node1) == "live, without I/O devices" ]]
    [[ $(stat -c '%U %a' "$CACHE_DIR") == "root 755" ]]
    [[ $(stat -c '%U %a' "$CACHE_DIR/topology-node1.xml") == "root 644" ]]
}

@test "a corrupt cache is ignored and rewritten" {
    source_of node1 -N1 -n1 -w node1 >/dev/null
    head -c 300 "$CACHE_DIR/topology-node1.xml" > "$BATS_TEST_TMPDIR/cut"
    cat "$BATS_TEST_TMPDIR/cut" > "$CACHE_DIR/topology-node1.xml"
    [[ $(source_of node1 -N1 -n1 -w node1) == "live, without I/O devices" ]]
    [[ -n $(cache_key node1) ]]
    [[ $(source_of node1 -N1 -n1 -w node1) == "from this node's cache" ]]
}

@test "a cache whose XML was changed after it was sealed is ignored and rewritten" {
    source_of node1 -N1 -n1 -w node1 >/dev/null
    # same length, one object type changed: hwloc would parse it
    sed -i '0,/type="Machine"/s//type="Mechine"/' "$CACHE_DIR/topology-node1.xml"
    grep -q 'type="Mechine"' "$CACHE_DIR/topology-node1.xml"
    [[ $(source_of node1 -N1 -n1 -w node1) == "live, without I/O devices" ]]
    refute grep -q 'type="Mechine"' "$CACHE_DIR/topology-node1.xml"
}

@test "a cache of another boot is ignored and rewritten" {
    source_of node1 -N1 -n1 -w node1 >/dev/null
    sed -i 's/ boot=[0-9a-f-]* / boot=00000000-0000-0000-0000-000000000000 /' "$CACHE_DIR/topology-node1.xml"
    [[ $(cache_key node1) == *" boot=00000000-0000-0000-0000-000000000000 "* ]]
    [[ $(source_of node1 -N1 -n1 -w node1) == "live, without I/O devices" ]]
    [[ $(cache_key node1) == *" boot=$(cat /proc/sys/kernel/random/boot_id) "* ]]
}

@test "a cache that is not root's alone is not read" {
    source_of node1 -N1 -n1 -w node1 >/dev/null
    chmod 666 "$CACHE_DIR/topology-node1.xml"
    [[ $(source_of node1 -N1 -n1 -w node1) == "live, without I/O devices" ]]
    [[ $(stat -c '%U %a' "$CACHE_DIR/topology-node1.xml") == "root 644" ]]
    chown nobody "$CACHE_DIR/topology-node1.xml"
    [[ $(source_of node1 -N1 -n1 -w node1) == "live, without I/O devices" ]]
    [[ $(stat -c '%U %a' "$CACHE_DIR/topology-node1.xml") == "root 644" ]]
}

@test "a user's CUDA_VISIBLE_DEVICES on a machine without GPUs does not walk the PCI bus" {
    rm -f "$CACHE_DIR/topology-node1.xml"
    # (this machine has no GPU: what a step on a CPU node sees when its user sets these)
    ! grep -qs '^0x10de$' /sys/bus/pci/devices/*/vendor || skip "this machine has NVIDIA devices"
    run timeout 60 env CUDA_VISIBLE_DEVICES=0,1 SLURM_STEP_GPUS=0,1 srun --dist-train=verbose -w node1 true
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"node1: Slurm gave the step GPU 0 but the topology has 0 NVIDIA GPUs: not bound"* ]]
    # the machine as the step loaded it, without its I/O devices
    [[ $(cache_key node1) == *" io=0" ]]
}

@test "NICs to place (nic=auto): I/O devices are loaded and cached, and serve later steps" {
    rm -f "$CACHE_DIR/topology-node1.xml"
    plugstack nic=auto
    local first second
    first=$(source_of node1 -N1 -n1 -w node1)
    plugstack
    second=$(source_of node1 -N1 -n1 -w node1)
    echo "$first / $second"
    [[ $first == "live, with I/O devices" ]]
    [[ $(cache_key node1) == *" io=1" ]]
    # a cache with I/O devices serves a step without them
    [[ $second == "from this node's cache" ]]
}

@test "nodes that declare 8 CPUs on this 2-CPU machine: 2 ranks per node on different CPUs, and why" {
    local holder line node out err lines
    # core 0 of each node taken: the step gets Slurm's cores 1-2, and this
    # machine has no core 2
    holder=$(sbatch --parsable -o /dev/null -N2 --ntasks-per-node=1 --wrap 'sleep 120')
    for _ in $(seq 50); do
        [[ $(squeue -h -j "$holder" -o %T) == RUNNING ]] && break
        sleep 0.2
    done
    out=$(timeout 60 srun --dist-train=verbose -N2 --ntasks-per-node=2 "$BIND_ENV" 2>"$BATS_TEST_TMPDIR/err") || {
        cat "$BATS_TEST_TMPDIR/err" >&2
        scancel "$holder"
        return 1
    }
    scancel "$holder"
    err=$(cat "$BATS_TEST_TMPDIR/err")
    mapfile -t lines <<<"$out"
    [ "${#lines[@]}" -eq 4 ]
    for node in node1 node2; do
        # one rank on each CPU, as planned
        [[ $(for line in "${lines[@]}"; do
            [[ $(field "$line" HOST) == "$node" ]] && field "$line" AFFINITY
        done | sort | paste -sd,) == 0,1 ]]
        for line in "${lines[@]}"; do
            [[ $(field "$line" HOST) != "$node" ]] || [[ $(field "$line" CPUS) == "$(field "$line" AFFINITY)" ]]
        done
        [[ $err == *"warning: $node: Slurm gave the job cores 1-2, but this machine has no core 2 (it has 2; slurm.conf describes the node with more CPUs than it has: compare with slurmd -C): ranks planned on CPUs 0-1, the ones this step may use"* ]]
    done
    [[ $err != *"more ranks than CPUs"* ]]
}
