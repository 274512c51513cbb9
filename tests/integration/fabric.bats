#!/usr/bin/env bats
# fabric.bats - the doctor's checks of the paths between the nodes, on a
# 16-node cluster: a node whose link runs at 1/20 of the others' (tc tbf), a
# path alone at 1/20 (tc htb), a node with a lower MTU, a node whose
# firewall drops the port range (nftables), each named in every one of 10
# trials; a route by another interface; no finding at all in 20 runs on the
# healthy cluster, shaped and bare; fabric=warn and fabric=off; and under
# preflight (Slurm 23.11 and later) an MTU mismatch fails the step before the
# program runs.  In a chroot's generation (no nftables there) the faults run
# once each, the firewall not at all: the host's generation has the trials.
#
# Every node's link runs at 100mbit (tbf, both ways), as a real fabric's
# rate is its links'; one test runs on the bare veths, whose rate is the
# CPU's: the lanes beside this one move it tenfold from one sample to the
# next, and only the timed samples of a path measured again tell that from a
# slow link.

load helpers/common
load helpers/fabric

DOCTOR="$TOP/tools/dist-train-doctor"
NODES=16

setup_file() {
    [[ -x $DOCTOR ]] || { echo "build first: $DOCTOR is missing" >&2; return 1; }
    cluster_start "$NODES"
}

teardown_file() {
    fabric_reset
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    printf 'required %s doctor=%s\n' "$PLUGIN_SO" "$DOCTOR" >"$MINICLUSTER_DIR/plugstack.conf"
    fabric_rate 100mbit
}

teardown() {
    fabric_reset
}

# The trials of a case: 10 on the host's generation, 1 in a chroot's.
trials() {
    if [[ -n ${SLURM_CHROOT_RUN:-} ]]; then echo 1; else echo "${1:-10}"; fi
}

# The standalone check, one task on each of the cluster's nodes.
check_fabric() {
    # (every rank exits with the verdict: under fail fast, a rank still ending when rank 0
    # exits 1 is stopped, and srun gives its 143 instead, as it did on a loaded machine)
    run timeout 120 srun -N"$NODES" --ntasks-per-node=1 --dist-train=fail_fast=off "$DOCTOR" \
        fabric "$@"
}

# The report's findings on the paths, one a line.
findings() {
    grep -E '^dist-train-doctor: (warning|problem): fabric:' <<<"$output" || true
}

# Each trial's findings must be exactly $1 (a pattern) and the exit status $2.
expect_trials() {
    local want=$1 rc=$2 n=$3 i got
    for ((i = 1; i <= n; i++)); do
        check_fabric "${@:4}"
        got=$(findings)
        # shellcheck disable=SC2053 # $want is a pattern
        if [[ $status -ne $rc || $(wc -l <<<"$got") -ne 1 || $got != $want ]]; then
            echo "trial $i of $n: exit $status (want $rc), findings:"
            echo "$got"
            echo "--- the whole report:"
            echo "$output"
            return 1
        fi
    done
    echo "$n of $n trials: $got"
}

# $1 runs of the check on a healthy cluster: every path connects, no finding.
healthy_runs() {
    local i n=$1
    for ((i = 1; i <= n; i++)); do
        check_fabric
        if [[ $status -ne 0 || -n $(findings) ||
            $output != *"fabric: 64 of 64 paths between 16 nodes connected in 4 rounds; median "* ]]; then
            echo "run $i of $n:"
            echo "$output"
            return 1
        fi
    done
    [[ $output == *"ok: all 16 ranks on 16 nodes checked in, nothing wrong"* ]]
}

@test "healthy cluster: every path connects, no finding in 20 runs" {
    healthy_runs "$(trials 20)"
}

# A bare veth's rate is the CPU's: the first samples of a few MB spread
# tenfold while the lanes beside this one run, and a path that came out slow
# is measured again (timed, beside its sender's fastest path) before it is
# named.
@test "healthy cluster on bare veths (the CPU's rate): no finding in 20 runs" {
    fabric_reset
    healthy_runs "$(trials 20)"
}

@test "two nodes: one round, both ways; one node: nothing to check" {
    run timeout 60 srun -N2 --ntasks-per-node=2 --dist-train "$DOCTOR" fabric
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"fabric: 2 of 2 paths between 2 nodes connected in 1 round; median "* ]]
    run timeout 60 srun -N1 -n2 --dist-train "$DOCTOR"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"fabric: one node, no path between nodes to check"* ]]
    # off: no listener, no line
    run timeout 60 srun -N2 -n2 --dist-train "$DOCTOR" --fabric off
    [ "$status" -eq 0 ]
    [[ $output != *"fabric:"* ]]
    # (one task: with two, fail fast may stop the second before it exits 2
    # itself, and srun then says the signal's status)
    run timeout 60 srun -N1 -n1 --dist-train "$DOCTOR" fabric --fabric off
    echo "$output"
    [ "$status" -eq 2 ]
    [[ $output == *"'fabric' checks the paths between nodes: --fabric takes fail or warn there"* ]]
}

@test "a node at 1/20 of the others' rate (tc tbf) is named slow, a warning, in each trial" {
    fabric_slow node7 100mbit 5mbit
    expect_trials "dist-train-doctor: warning: fabric: node7 is slow: * MB/s over its 8 paths (median), 1/* of the step's median *" 0 "$(trials)"
}

@test "one path at 1/20 of the others' (tc htb) is named, a warning, in each trial" {
    fabric_slow_path node3 "$(node_addr node4)" 100mbit 5mbit
    expect_trials "dist-train-doctor: warning: fabric: the path node3 -> node4 is slow: measured again, 1/* of node3's fastest other path measured beside it" 0 "$(trials)"
}

@test "a node with a lower MTU is named, and fails the check, in each trial" {
    fabric_mtu node5 1400
    expect_trials "dist-train-doctor: problem: fabric: MTU mismatch: node5's eth0 has MTU 1400, 15 other nodes 1500: packets over 1400 bytes between them are dropped; the largest probe that reached it: 1400 bytes;*" 1 "$(trials)"
    [[ $output == *"dist-train-doctor: FAILED: 1 problem"* ]]
    # fabric=warn: the same finding, and the check passes
    expect_trials "dist-train-doctor: warning: fabric: MTU mismatch: node5's eth0 *" 0 1 --fabric warn
}

@test "a node whose firewall drops the port range is named, and fails the check, in each trial" {
    local range
    command -v nft >/dev/null || skip "no nft here: the host's generation runs this (scripts/deps installs nftables)"
    range=$(timeout 60 srun --dist-train -N1 -n1 printenv DIST_TRAIN_PORT_RANGE)
    [[ $range =~ ^[0-9]+-[0-9]+$ ]] || { echo "no DIST_TRAIN_PORT_RANGE: '$range'"; return 1; }
    fabric_firewall node9 "${range%-*}" "${range#*-}"
    expect_trials "dist-train-doctor: problem: fabric: no connection reached node9 (* port *) from node1,node5,node7,node8: timed out (its packets are dropped), while its own connections out work; a firewall on node9 drops the port range?*" 1 "$(trials)"
}

@test "a route to a peer by another interface: the path is blocked, and the route named" {
    fabric_route node3 "$(node_addr node4)"
    check_fabric
    echo "$output"
    [ "$status" -eq 1 ]
    [[ $output == *"problem: fabric: node3 cannot connect to node4 ($(node_addr node4) port "*"): timed out (its packets are dropped)"* ]]
    [[ $output == *"warning: fabric: node3 reaches node4 ($(node_addr node4)) by the interface dtfab0, not eth0, the one the collectives use: check 'ip route get $(node_addr node4)' on node3"* ]]
    [[ $(findings | wc -l) -eq 2 ]]
}

@test "preflight: an MTU mismatch fails the step before the program runs; fabric=warn lets it run" {
    (($(slurm_release_number) >= 2311)) || skip "this Slurm lacks spank_prepend_task_argv (23.11 and later)"
    fabric_mtu node5 1400
    # shellcheck disable=SC2016 # the task's shell expands them
    run timeout 120 srun --dist-train=preflight -N"$NODES" --ntasks-per-node=1 \
        bash -c 'touch "$0/ran-$SLURM_PROCID"' "$MINICLUSTER_DIR"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"problem: fabric: MTU mismatch: node5's eth0 has MTU 1400"* ]]
    [[ -z $(compgen -G "$MINICLUSTER_DIR/ran-*") ]]
    # shellcheck disable=SC2016 # the task's shell expands them
    run timeout 120 srun --dist-train=preflight,fabric=warn -N"$NODES" --ntasks-per-node=1 \
        bash -c 'touch "$0/ran-$SLURM_PROCID"' "$MINICLUSTER_DIR"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"warning: fabric: MTU mismatch: node5's eth0 has MTU 1400"* ]]
    [[ $(compgen -G "$MINICLUSTER_DIR/ran-*" | wc -l) -eq $NODES ]]
    rm -f "$MINICLUSTER_DIR"/ran-*
    # fabric=off: the paths are not checked
    run timeout 120 srun --dist-train=preflight,fabric=off -N"$NODES" --ntasks-per-node=1 true
    [ "$status" -eq 0 ]
    [[ $output != *"fabric:"* ]]
}
