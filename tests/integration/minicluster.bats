#!/usr/bin/env bats
# The minicluster is a real Slurm cluster: three slurmd in their own namespaces that run
# steps across nodes, PMIx exchanges and batch jobs, and stop leaves nothing behind.
# Needs root and network namespaces; runs under a state dir in $BATS_FILE_TMPDIR.

# shellcheck disable=SC2016 # the tasks expand the variables of these bash -c programs

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

load helpers/common

setup_file() {
	export MINICLUSTER="$BATS_TEST_DIRNAME/../../scripts/minicluster"
	export CLUSTER_DIR="$BATS_FILE_TMPDIR/cluster"
	export OTHER_CLUSTER_DIR="$BATS_FILE_TMPDIR/other-cluster"
	[ "$EUID" -eq 0 ] || skip "needs root (network namespaces)"
	command -v slurmctld >/dev/null || skip "needs Slurm (apt-get install \$(cat scripts/packages-cluster.txt))"
	local started=$SECONDS
	timeout 150 "$MINICLUSTER" start --dir "$CLUSTER_DIR" --nodes 3 >"$BATS_FILE_TMPDIR/start.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/start.log" >&3
		return 1
	}
	echo "# minicluster start of 3 nodes took $((SECONDS - started)) s" >&3
}

teardown_file() {
	timeout 120 "$MINICLUSTER" stop --dir "$CLUSTER_DIR" >/dev/null 2>&1 || true
	timeout 120 "$MINICLUSTER" stop --dir "$OTHER_CLUSTER_DIR" >/dev/null 2>&1 || true
}

setup() {
	# Steps start in the submitting directory, so use one the nodes can see.
	cd "$CLUSTER_DIR" || return 1
}

# in_cluster CMD...: CMD with the cluster's environment, bounded in time.
in_cluster() {
	timeout 60 "$MINICLUSTER" exec --dir "$CLUSTER_DIR" -- "$@"
}

# Slurm's and munge's daemons of this PID namespace (a cluster that
# scripts/slurm-chroot runs in its own PID namespace at the same time is not
# this one's).
our_daemons() {
	local self proc
	self=$(readlink /proc/self/ns/pid)
	for proc in /proc/[0-9]*; do
		[[ $(readlink "$proc/ns/pid" 2>/dev/null) == "$self" ]] || continue
		ps -o stat=,comm= -p "${proc#/proc/}" 2>/dev/null
	done | awk '$1 !~ /^Z/ && $2 ~ /^(munged|slurmctld|slurmd|slurmstepd)$/'
}

# What stop must leave behind: nothing.
assert_nothing_left() {
	local daemons namespaces links mounts
	daemons=$(our_daemons)
	namespaces=$(ip netns list | grep '^dt-' || true)
	links=$(ip -o link show | awk -F': ' '{print $2}' | grep -E '^(dtbr0|dtveth-)' || true)
	mounts=$(findmnt -rn -o TARGET | grep -E '^/run/netns/dt-|minicluster' || true)
	[ -z "$daemons" ] || { echo "daemons left: $daemons"; return 1; }
	[ -z "$namespaces" ] || { echo "namespaces left: $namespaces"; return 1; }
	[ -z "$links" ] || { echo "links left: $links"; return 1; }
	[ -z "$mounts" ] || { echo "mounts left: $mounts"; return 1; }
}

@test "sinfo shows three idle nodes in partition debug" {
	run in_cluster sinfo -h -N -p debug -o '%N %T %c'
	[ "$status" -eq 0 ]
	[ "$output" = "node1 idle 8
node2 idle 8
node3 idle 8" ]
}

@test "srun -N3 hostname runs once on each node" {
	run in_cluster bash -c 'srun -N3 hostname | sort'
	[ "$status" -eq 0 ]
	[ "$output" = "node1
node2
node3" ]
}

@test "srun -N2 -n8 places 4 tasks per node on CPUs the machine does not have" {
	run in_cluster bash -c 'srun -N2 -n8 --ntasks-per-node=4 hostname | sort | uniq -c | awk "{print \$2, \$1}"'
	[ "$status" -eq 0 ]
	[ "$output" = "node1 4
node2 4" ]
}

@test "each node has a private /tmp that still shows the state dir" {
	run in_cluster srun -N3 bash -c 'touch /tmp/minicluster-mark-$(hostname) && ls /tmp/ | grep minicluster-mark- && test -f "$0/slurm.conf"' "$CLUSTER_DIR"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort)" = "minicluster-mark-node1
minicluster-mark-node2
minicluster-mark-node3" ]
	[ -z "$(find /tmp -mindepth 1 -maxdepth 1 -name '*minicluster-mark-*')" ]
}

@test "nodes resolve each other and the controller to bridge addresses" {
	run in_cluster srun -N1 -w node2 getent ahostsv4 node1 node3 "$(hostname -s)"
	[ "$status" -eq 0 ]
	[[ $output == *"10.213.7.11 "*"10.213.7.13 "*"10.213.7.1 "* ]]
	run in_cluster srun -N1 -w node2 getent ahostsv4 node2
	[[ $output == "10.213.7.12 "* ]]
}

@test "srun --mpi=pmix -N2 -n4 gives PMIX_RANK 0..3 across two nodes" {
	require_pmix
	run in_cluster bash -c 'srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 bash -c "echo \$PMIX_RANK \$(hostname)" | sort'
	[ "$status" -eq 0 ]
	[ "$output" = "0 node1
1 node1
2 node2
3 node2" ]
}

@test "a PMIx client exchanges data across nodes (put, commit, fence with collect, get)" {
	require_pmix
	command -v cc >/dev/null || skip "no C compiler"
	local pmix_flags
	pmix_flags=$(pkg-config --cflags --libs pmix 2>/dev/null || echo -lpmix)
	# shellcheck disable=SC2086 # pkg-config prints one flag per word
	cc -o "$CLUSTER_DIR/pmix_fence" "$BATS_TEST_DIRNAME/helpers/pmix_fence.c" $pmix_flags ||
		skip "cannot build a PMIx client (apt-get install libpmix-dev)"
	run in_cluster srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$CLUSTER_DIR/pmix_fence"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]
	for line in "${lines[@]}"; do
		[[ $line == *"of 4 on node"*": saw node1,node1,node2,node2" ]]
	done
}

@test "sbatch --wait runs a two-node batch script" {
	mkdir -p "$CLUSTER_DIR/jobs"
	cat >"$CLUSTER_DIR/jobs/two-nodes.sh" <<'EOF'
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1
srun hostname | sort
EOF
	run in_cluster sbatch --wait -o "$CLUSTER_DIR/jobs/two-nodes.out" -D "$CLUSTER_DIR/jobs" "$CLUSTER_DIR/jobs/two-nodes.sh"
	[ "$status" -eq 0 ]
	[ "$(cat "$CLUSTER_DIR/jobs/two-nodes.out")" = "node1
node2" ]
}

@test "exec --node runs a command inside that node" {
	run timeout 30 "$MINICLUSTER" exec --dir "$CLUSTER_DIR" --node node2 -- hostname
	[ "$status" -eq 0 ]
	[ "$output" = node2 ]
}

@test "status shows the daemons and sinfo" {
	run timeout 30 "$MINICLUSTER" status --dir "$CLUSTER_DIR"
	[ "$status" -eq 0 ]
	[[ $output == *"slurmctld  running"* ]]
	[[ $output == *"node3      running"* ]]
	[[ $output == *"debug*"*"idle node[1-3]"* ]]
}

@test "starting twice is harmless; another node count is refused" {
	run timeout 120 "$MINICLUSTER" start --dir "$CLUSTER_DIR" --nodes 3
	[ "$status" -eq 0 ]
	[[ $output == *"already running"* ]]
	run timeout 120 "$MINICLUSTER" start --dir "$CLUSTER_DIR" --nodes 2
	[ "$status" -eq 1 ]
	[[ $output == *"stop it first"* ]]
	run in_cluster sinfo -h -o '%D %T'
	[ "$output" = "3 idle" ]
}

@test "start refuses to run as an ordinary user" {
	command -v setpriv >/dev/null || skip "no setpriv"
	# a copy that nobody can read, wherever the checkout is (Debian 12's /root is 0700)
	local dir
	dir=$(mktemp -d -p /var/tmp dist-train-test.XXXXXX)
	chmod 755 "$dir"
	install -m 755 "$MINICLUSTER" "$dir/minicluster"
	run setpriv --reuid=nobody --regid=nogroup --clear-groups \
		timeout 30 "$dir/minicluster" start --dir "$dir/never"
	rm -rf "$dir"
	[ "$status" -eq 1 ]
	[[ $output == *"must run as root"* ]]
}

@test "stop leaves no daemons, namespaces, links or mounts" {
	local started=$SECONDS
	run timeout 120 "$MINICLUSTER" stop --dir "$CLUSTER_DIR"
	[ "$status" -eq 0 ]
	echo "# minicluster stop of 3 nodes took $((SECONDS - started)) s" >&3
	assert_nothing_left
	run timeout 120 "$MINICLUSTER" stop --dir "$CLUSTER_DIR"
	[ "$status" -eq 0 ]
}

@test "stop cleans up a cluster whose state dir is gone, with a task still running" {
	timeout 120 "$MINICLUSTER" stop --dir "$CLUSTER_DIR"
	timeout 120 "$MINICLUSTER" start --dir "$OTHER_CLUSTER_DIR" --nodes 2 --cpus 4
	cd "$OTHER_CLUSTER_DIR"
	timeout 60 "$MINICLUSTER" exec --dir "$OTHER_CLUSTER_DIR" -- sbatch -N2 --wrap 'srun sleep 300'
	# The job's task runs in node2's network namespace.
	timeout 30 bash -c 'until ip netns pids dt-node2 | xargs -r ps -o comm= -p | grep -qx sleep; do sleep 0.2; done'
	cd /
	rm -rf "$OTHER_CLUSTER_DIR"
	run timeout 120 "$MINICLUSTER" stop --dir "$OTHER_CLUSTER_DIR"
	[ "$status" -eq 0 ]
	assert_nothing_left
}

@test "start --topology: topology.conf beside slurm.conf, on configless nodes too; another is refused" {
	local topo=$BATS_TEST_TMPDIR/topology.conf
	timeout 120 "$MINICLUSTER" stop --dir "$CLUSTER_DIR"
	printf 'SwitchName=s1 Nodes=node[2-3]\nSwitchName=s2 Nodes=node1\nSwitchName=top Switches=s[1-2]\n' >"$topo"
	timeout 120 "$MINICLUSTER" start --dir "$OTHER_CLUSTER_DIR" --nodes 3 --configless \
		--topology "$topo" --topology-param SwitchAsNodeRank
	grep -qx 'TopologyPlugin=topology/tree' "$OTHER_CLUSTER_DIR/slurm.conf"
	grep -qx 'TopologyParam=SwitchAsNodeRank' "$OTHER_CLUSTER_DIR/slurm.conf"
	run timeout 60 "$MINICLUSTER" exec --dir "$OTHER_CLUSTER_DIR" -- scontrol show topology
	echo "$output"
	[[ $output == *"SwitchName=s1 "*"Nodes=node[2-3]"* ]]
	run timeout 60 "$MINICLUSTER" exec --dir "$OTHER_CLUSTER_DIR" --node node1 -- cat /run/slurm/conf/topology.conf
	[ "$output" = "$(cat "$topo")" ]
	run timeout 120 "$MINICLUSTER" start --dir "$OTHER_CLUSTER_DIR" --nodes 3 --configless \
		--topology "$topo" --topology-param SwitchAsNodeRank
	[ "$status" -eq 0 ]
	[[ $output == *"already running"* ]]
	run timeout 120 "$MINICLUSTER" start --dir "$OTHER_CLUSTER_DIR" --nodes 3 --configless --topology "$topo"
	[ "$status" -eq 1 ]
	[[ $output == *"already running with another topology"*"stop it first"* ]]
	echo 'SwitchName=s3 Nodes=node[1-3]' >"$BATS_TEST_TMPDIR/other.conf"
	run timeout 120 "$MINICLUSTER" start --dir "$OTHER_CLUSTER_DIR" --nodes 3 --configless \
		--topology "$BATS_TEST_TMPDIR/other.conf" --topology-param SwitchAsNodeRank
	[ "$status" -eq 1 ]
	run timeout 120 "$MINICLUSTER" stop --dir "$OTHER_CLUSTER_DIR"
	[ "$status" -eq 0 ]
	assert_nothing_left
}
