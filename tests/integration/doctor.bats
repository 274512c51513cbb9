#!/usr/bin/env bats
# doctor.bats - dist-train-doctor on a 3-node cluster: a healthy step, a node
# that cannot reach rank 0, a taken MASTER_PORT, a script that overrides
# RANK, --then handing MASTER_PORT to the training program, and each node's
# collective stack (MPI plugins, PMIx, port ranges, NCCL's and gloo's
# interfaces).

# shellcheck disable=SC2016 # the tasks expand the variables of these bash -c programs

load helpers/common

DOCTOR="$TOP/tools/dist-train-doctor"

# 3 nodes of 2 CPUs and 4 placeholder GPUs (see bind.bats): the plugin binds
# each rank, so the GPU and CPU checks see a real plan.
setup_file() {
    [[ -x $DOCTOR ]] || { echo "build first: $DOCTOR is missing" >&2; return 1; }
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
    BLACKHOLE=''
    HOLDER=''
    PORT_RANGE=''
}

# Undo what a test set up, also when it failed half-way.
teardown() {
    if [[ -n $BLACKHOLE ]]; then
        ip -n dt-node3 route del blackhole "$BLACKHOLE/32" 2>/dev/null || true
    fi
    if [[ -n $HOLDER ]]; then
        kill "$HOLDER" 2>/dev/null || true
        wait "$HOLDER" 2>/dev/null || true
    fi
    if [[ -n $PORT_RANGE ]]; then
        gpu_cluster_plugstack 3 "topology=$GPU_XML"
    fi
}

# Whether a stack line names the PMIx this Slurm's nodes give: its mpi/pmix
# opens Debian's PMIx (4.2 on 22.05, 5.0 on 24.11); 26.05 has no mpi/pmix.
pmix_named() {
    if find /usr/lib /usr/lib64 -name 'mpi_pmix.so' 2>/dev/null | grep -q .; then
        [[ $1 =~ \;\ PMIx\ [0-9]+\.[0-9]+\.[0-9]+\ \(server\),\ [0-9]+\.[0-9]+\.[0-9]+\ \(client\)\; ]]
    else
        [[ $1 == *"; no mpi/pmix;"* ]]
    fi
}

@test "a healthy step: one line per node, and the verdict" {
    run timeout 60 srun --dist-train -N3 -n6 "$DOCTOR"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^dist-train-doctor: node[123]: rank' <<<"$output")" -eq 3 ]
    [[ $output == *"node1: ranks 0-"*" via eth0 $(node_addr node1)"* ]]
    [[ $output == *"dist-train-doctor: ok: all 6 ranks on 3 nodes checked in, nothing wrong"* ]]
    [[ $output != *problem* ]]
}

@test "--json: the same report as JSON" {
    run timeout 60 srun --dist-train -N3 -n6 "$DOCTOR" --json
    echo "$output"
    [ "$status" -eq 0 ]
    local json
    json=$(grep '^{' <<<"$output")
    "$TORCH_PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])
assert r["ok"] is True and r["world_size"] == 6 and r["checked_in"] == 6, r
assert [n["name"] for n in r["nodes"]] == ["node1", "node2", "node3"], r
assert r["problems"] == [], r' "$json"
}

@test "GPUs: bound by the plugin, healthy; one GPU for every rank, named" {
    run timeout 60 srun --dist-train -N2 --ntasks-per-node=2 --gres=gpu:4 "$DOCTOR" --timeout 5
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"dist-train-doctor: ok: all 4 ranks on 2 nodes checked in"* ]]
    # a script that pins every rank to the first GPU (on named nodes: the last
    # step's node may not be free again yet, and the lines name them)
    run timeout 60 srun --dist-train -w node1,node2 --ntasks-per-node=2 --gres=gpu:4 bash -c \
        'export CUDA_VISIBLE_DEVICES=0; unset DIST_TRAIN_GPUS; exec "$0" --timeout 5' "$DOCTOR"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"problem: node1: ranks 0 and 1 both use GPU 0"* ]]
    [[ $output == *"problem: node2: ranks 2 and 3 both use GPU 0"* ]]
}

@test "CPUs: a rank that widens its affinity over its neighbour's is named" {
    # (on named nodes: the last step's node may not be free again yet)
    run timeout 60 srun --dist-train -w node1,node2 --ntasks-per-node=2 --gres=gpu:4 bash -c \
        'if [ "$SLURM_PROCID" = 3 ]; then exec taskset -c 0-1 "$0" --timeout 5; fi
         exec "$0" --timeout 5' "$DOCTOR"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"problem: node2: ranks 2 and 3 are bound to overlapping CPUs (0 and 0-1)"* ]]
    [[ $output == *"FAILED: 1 problem; 4 tasks of 4"* ]]
}

@test "a node black-holed from rank 0: the report names it, and it says why" {
    BLACKHOLE=$(node_addr node1)
    ip -n dt-node3 route add blackhole "$BLACKHOLE/32"
    SECONDS=0
    # (fail_fast off: node3's ranks say why at the same deadline as rank 0's
    # verdict, which would otherwise stop them first on a busy machine)
    run timeout 60 srun --dist-train=fail_fast=off -N3 --ntasks-per-node=2 "$DOCTOR" --timeout 5
    local took=$SECONDS
    echo "$output"
    [ "$status" -ne 0 ]
    # rank 0's report, within the deadline (and node3's wait for it)
    [[ $output == *"dist-train-doctor: node3: no rank checked in (expected ranks 4-5)"* ]]
    [[ $output == *"problem: node3: ranks 4-5 never checked in"* ]]
    [[ $output == *"dist-train-doctor: FAILED: 1 problem; 4 tasks of 6 checked in within 5 s"* ]]
    # node3's own lines, on its stderr
    [[ $output == *"rank 4 on node3: cannot reach rank 0 at $BLACKHOLE:"*"no route to rank 0's address"*"ip route get $BLACKHOLE"* ]]
    [[ $output == *"rank 5 on node3: cannot reach rank 0"* ]]
    ((took < 20))
}

@test "an interface without an address: each rank says so, rank 0 names the nodes" {
    # (an interface the user chose: the plugin keeps it)
    NCCL_SOCKET_IFNAME=nosuch0 run timeout 60 srun --dist-train -w node1,node2 --ntasks-per-node=1 \
        "$DOCTOR" --timeout 3
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"rank 1 on node2: the interface nosuch0 (NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME) has no IPv4 address here"* ]]
    [[ $output == *"problem: node2: rank 1 never checked in"* ]]
}

@test "MASTER_PORT taken on rank 0's node: named, with the fix" {
    # (a MASTER_PORT of the user's own: the plugin checks only the ports it chose)
    hold_port node1 29555 50
    MASTER_PORT=29555 run timeout 60 srun --dist-train -w node1,node2 -n2 "$DOCTOR" --timeout 5
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"dist-train-doctor: MASTER_PORT 29555 is already in use on node1;"*"set MASTER_PORT to a free port"* ]]
}

@test "a script that overrides RANK: rank 1 twice, rank 2 missing, with nodes" {
    run timeout 60 srun --dist-train -N3 --ntasks-per-node=2 bash -c \
        'if [ "$SLURM_PROCID" = 2 ]; then export RANK=1; fi; exec "$0" --timeout 5' "$DOCTOR"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"problem: rank 1 checked in 2 times: from "*"node1 (task 1)"* ]]
    [[ $output == *"problem: rank 1 checked in 2 times: from "*"node2 (task 2)"* ]]
    [[ $output == *"problem: node2: rank 2 never checked in"* ]]
    [[ $output == *"dist-train-doctor: FAILED: 2 problems"* ]]
}

@test "--then: the command runs, and rank 0 binds MASTER_PORT again at once" {
    # without SO_REUSEADDR: a TIME_WAIT left on MASTER_PORT would refuse it
    run timeout 240 srun --dist-train -N2 -n4 "$DOCTOR" --timeout 10 --then "$TORCH_PYTHON" -c '
import os, socket
r = int(os.environ["RANK"])
if r == 0:
    s = socket.socket()
    s.bind((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])))
    s.listen()
print("rank", r, "ran", flush=True)'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"dist-train-doctor: ok: all 4 ranks on 2 nodes checked in"* ]]
    for r in 0 1 2 3; do
        [[ $output == *"rank $r ran"* ]]
    done
}

@test "--then with PyTorch: a TCPStore on MASTER_PORT right after the doctor" {
    # (found, not imported: an import costs seconds of CPU)
    "$TORCH_PYTHON" -c 'import importlib.util, sys; sys.exit(not importlib.util.find_spec("torch"))' ||
        skip "no torch in $TORCH_PYTHON"
    # (the helpers' directory as the program's argument, for torch_store's libuv probe)
    run timeout 240 srun --dist-train -N2 -n2 "$DOCTOR" --timeout 10 --then "$TORCH_PYTHON" -c '
import os, sys, datetime
sys.path.insert(0, sys.argv[1])
from torch.distributed import TCPStore
from torch_store import store_kwargs
r, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
s = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), n, r == 0,
             timeout=datetime.timedelta(seconds=30), **store_kwargs())
s.set(f"r{r}", "x"); s.wait([f"r{i}" for i in range(n)])
print("store ok on rank", r, flush=True)' "$TOP/tests/integration/helpers"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"store ok on rank 0"* ]]
    [[ $output == *"store ok on rank 1"* ]]
}

@test "outside a step: a message, not a hang" {
    run env -u RANK -u WORLD_SIZE timeout 10 "$DOCTOR"
    echo "$output"
    [ "$status" -eq 2 ]
    [[ $output == *"dist-train-doctor: RANK and WORLD_SIZE are not set"* ]]
}

@test "the collective stack: one line for the nodes that share it, nothing to warn about" {
    # (not the paths' bandwidth: on this machine a veth's rate is the CPU's,
    # and the test lanes beside it move it tenfold; fabric.bats checks them
    # on links that set their own rate)
    run timeout 60 srun --dist-train -N3 -n3 "$DOCTOR" --timeout 10 --fabric off
    echo "$output"
    [ "$status" -eq 0 ]
    local line
    line=$(grep '^dist-train-doctor: node1,node2,node3: MPI plugins ' <<<"$output")
    [[ $line == *",pmi2"*"(this step: none)"* ]]
    pmix_named "$line"
    # the plugin's port range and the kernel's, apart
    [[ $line == *"; ports 20000-32767 (SrunPortRange unset, ephemeral 32768-60999); NCCL/gloo via eth0/eth0"* ]]
    [[ $output != *warning* && $output != *problem* ]]
}

@test "GLOO_SOCKET_IFNAME: another interface than NCCL's is a warning, one without an address fails" {
    run timeout 60 srun --dist-train -w node1,node2 -n2 bash -c \
        'export GLOO_SOCKET_IFNAME=lo; exec "$0" --timeout 10' "$DOCTOR"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"warning: node1: NCCL_SOCKET_IFNAME=eth0 (eth0), GLOO_SOCKET_IFNAME=lo and the plugin's choice eth0 disagree"*"unset both, or set both to one interface that reaches rank 0"* ]]
    [[ $output == *"warning: node2: NCCL_SOCKET_IFNAME=eth0 (eth0), GLOO_SOCKET_IFNAME=lo"* ]]
    [[ $output == *"ok: all 2 ranks on 2 nodes checked in"* ]]
    run timeout 60 srun --dist-train -w node1,node2 -n2 bash -c \
        'export GLOO_SOCKET_IFNAME=nosuch0; exec "$0" --timeout 10' "$DOCTOR"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ $output == *"problem: node2: GLOO_SOCKET_IFNAME=nosuch0: nosuch0 has no IPv4 address here, so gloo cannot start on it; unset GLOO_SOCKET_IFNAME (the plugin chose eth0)"* ]]
    [[ $output == *"FAILED: 2 problems"* ]]
}

@test "an admin's port_range inside the kernel's ephemeral ports: a warning with the sysctl that fixes it" {
    PORT_RANGE=30000-40000
    gpu_cluster_plugstack 3 "topology=$GPU_XML port_range=$PORT_RANGE"
    # (named: a node the last test's step still held would move the step to node2,node3)
    run timeout 60 srun --dist-train -w node1,node2 -n2 "$DOCTOR" --timeout 10
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"; ports 30000-40000 (SrunPortRange unset, ephemeral 32768-60999)"* ]]
    [[ $output == *"warning: node1: port_range 30000-40000 overlaps the kernel's ephemeral ports 32768-60999 (net.ipv4.ip_local_port_range)"*"sysctl -w net.ipv4.ip_local_reserved_ports=32768-40000"* ]]
    [[ $output == *"ok: all 2 ranks on 2 nodes checked in"* ]]
}
