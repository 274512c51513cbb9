# fabric.bash - a faulty fabric on the test cluster for the doctor's fabric
# checks: a slow node (tc tbf), a slow path (tc htb), a node whose MTU
# differs, a node whose firewall drops a port range (nftables), a route by
# another interface; fabric_reset undoes all of them.
# shellcheck shell=bash
#
# A node is nodeN as Slurm names it; its network namespace is dt-nodeN, with
# eth0 a veth whose host side, dtveth-nodeN, is a port of the bridge dtbr0
# (scripts/minicluster).  Every ip, tc and nft call is bounded by timeout.
#
# The shaping: each node's eth0 in its namespace shapes what it sends, and the
# host-side dtveth-nodeN what it receives, so a slow node is slow both ways.
# tbf's queue is short (FABRIC_LATENCY, 10 ms): a node that sends and
# receives at once (a ring of pairs) finds its ACKs queued behind its own
# data (so it seems), and with the 50 ms of tc's examples, 16 pairs at 50mbit (6 MB/s)
# had a healthy pair at 0.6..1.1 MB/s in three runs of four (10 ms: 3.8 at
# the least).  On this 2-CPU machine 16 pairs at once at 100mbit (12.5 MB/s)
# measured 4.3..12.8 MB/s over a 300 ms sample (under 7 once in 17 runs; the
# median 8.5..12.2), a node at 5mbit 0.3..0.8 MB/s: use fabric_slow NODE
# 100mbit 5mbit (50mbit 2500kbit: 3.4..6.6 and 0.14..0.5, the CPUs less
# busy).  At 400mbit 16 pairs are CPU-bound (softirq) and spread 3..50 MB/s,
# a 20mbit node 0.6..2.7: no clear gap.

FABRIC_LATENCY=${FABRIC_LATENCY:-10ms}
FABRIC_BURST=${FABRIC_BURST:-64kb}
FABRIC_TIMEOUT=${FABRIC_TIMEOUT:-10}

# The cluster's nodes, node1..nodeN, one a line, from their namespaces.
fabric_nodes() {
    timeout "$FABRIC_TIMEOUT" ip netns list 2>/dev/null |
        awk '$1 ~ /^dt-node[0-9]+$/ { sub(/^dt-/, "", $1); print $1 }' | sort -V
}

# Where fabric_mtu records each node's MTU before it first changes it.
fabric_state_dir() {
    echo "${FABRIC_DIR:-${MINICLUSTER_DIR:-${BATS_FILE_TMPDIR:-/tmp}}/fabric}"
}

fabric_check_node() {
    [[ $1 =~ ^node[0-9]+$ ]] || { echo "fabric: not a node name: $1 (nodeN)" >&2; return 1; }
    timeout "$FABRIC_TIMEOUT" ip netns pids "dt-$1" >/dev/null 2>&1 ||
        { echo "fabric: no namespace dt-$1: is the cluster running?" >&2; return 1; }
}

# fabric_tbf NODE RATE: shape both directions of NODE's link to RATE.
fabric_tbf() {
    local node=$1 rate=$2
    local tbf=(tbf rate "$rate" burst "$FABRIC_BURST" latency "$FABRIC_LATENCY")
    if ! timeout "$FABRIC_TIMEOUT" tc -n "dt-$node" qdisc replace dev eth0 root "${tbf[@]}" ||
        ! timeout "$FABRIC_TIMEOUT" tc qdisc replace dev "dtveth-$node" root "${tbf[@]}"; then
        echo "fabric: cannot shape $node to $rate" >&2
        return 1
    fi
}

# fabric_rate RATE: every node's link at RATE, both ways.
fabric_rate() {
    local rate=${1:-} node
    [[ -n $rate ]] || { echo "usage: fabric_rate RATE" >&2; return 1; }
    for node in $(fabric_nodes); do
        fabric_tbf "$node" "$rate" || return 1
    done
}

# fabric_slow NODE RATE_OTHERS RATE_SLOW: every node's link at RATE_OTHERS,
# NODE's at RATE_SLOW (tc's rates: 100mbit, 2500kbit ...).
fabric_slow() {
    local slow=${1:-} others=${2:-} rate=${3:-} node nodes
    [[ -n $others && -n $rate ]] || { echo "usage: fabric_slow NODE RATE_OTHERS RATE_SLOW" >&2; return 1; }
    fabric_check_node "$slow" || return 1
    nodes=$(fabric_nodes)
    for node in $nodes; do
        if [[ $node == "$slow" ]]; then
            fabric_tbf "$node" "$rate" || return 1
        else
            fabric_tbf "$node" "$others" || return 1
        fi
    done
}

# fabric_slow_path NODE ADDR RATE_OTHERS RATE_SLOW: what NODE sends to ADDR
# at RATE_SLOW, the rest at RATE_OTHERS (an htb class that a u32 filter on
# the destination picks; this kernel has htb, but neither prio nor netem).
# One slow path between two healthy nodes: a bad cable of a multi-path
# fabric.  Its host side keeps what fabric_rate gave it.
fabric_slow_path() {
    local node=${1:-} addr=${2:-} others=${3:-} rate=${4:-} tc
    [[ $addr =~ ^[0-9.]+$ && -n $others && -n $rate ]] ||
        { echo "usage: fabric_slow_path NODE ADDR RATE_OTHERS RATE_SLOW" >&2; return 1; }
    fabric_check_node "$node" || return 1
    tc=(timeout "$FABRIC_TIMEOUT" tc -n "dt-$node")
    if ! { "${tc[@]}" qdisc replace dev eth0 root handle 1: htb default 10 &&
        "${tc[@]}" class add dev eth0 parent 1: classid 1:10 htb rate "$others" &&
        "${tc[@]}" class add dev eth0 parent 1: classid 1:20 htb rate "$rate" &&
        "${tc[@]}" filter add dev eth0 parent 1: protocol ip prio 1 u32 \
            match ip dst "$addr/32" flowid 1:20; } 2>/dev/null; then
        echo "fabric: cannot slow $node's path to $addr to $rate (htb, u32)" >&2
        return 1
    fi
}

# fabric_mtu NODE MTU: NODE's eth0 (in its namespace) at MTU; the host side
# and the bridge keep theirs, so what the others send NODE over MTU (+4: a
# veth takes a VLAN header's slack; 1400 lets 1404-byte IP packets through) is
# dropped, and NODE cannot send more than MTU (EMSGSIZE under DF).
fabric_mtu() {
    local node=${1:-} mtu=${2:-} dir cur
    [[ $mtu =~ ^[0-9]+$ ]] || { echo "usage: fabric_mtu NODE MTU" >&2; return 1; }
    fabric_check_node "$node" || return 1
    dir=$(fabric_state_dir)
    mkdir -p "$dir" || return 1
    if [[ ! -s $dir/mtu-$node ]]; then
        cur=$(timeout "$FABRIC_TIMEOUT" ip -n "dt-$node" -o link show dev eth0 |
            sed -n 's/.* mtu \([0-9]*\) .*/\1/p') || return 1
        [[ -n $cur ]] || { echo "fabric: no MTU for $node's eth0" >&2; return 1; }
        echo "$cur" >"$dir/mtu-$node"
    fi
    timeout "$FABRIC_TIMEOUT" ip -n "dt-$node" link set dev eth0 mtu "$mtu" ||
        { echo "fabric: cannot set $node's MTU to $mtu" >&2; return 1; }
}

# fabric_firewall NODE LO HI: NODE's input drops TCP and UDP to ports LO..HI
# (nftables table inet dtfab in its namespace): a connect to it there times
# out, a datagram vanishes; its own connections out still work (the replies
# come to its ephemeral ports, 32768..60999, outside the default range).
fabric_firewall() {
    local node=${1:-} lo=${2:-} hi=${3:-}
    if ! [[ $lo =~ ^[0-9]+$ && $hi =~ ^[0-9]+$ ]] || ((lo > hi || hi > 65535)); then
        echo "usage: fabric_firewall NODE LO HI (ports, LO <= HI)" >&2
        return 1
    fi
    fabric_check_node "$node" || return 1
    timeout "$FABRIC_TIMEOUT" ip netns exec "dt-$node" nft delete table inet dtfab 2>/dev/null || true
    timeout "$FABRIC_TIMEOUT" ip netns exec "dt-$node" nft -f - <<EOF || { echo "fabric: nft failed in dt-$node" >&2; return 1; }
table inet dtfab {
    chain input {
        type filter hook input priority 0; policy accept;
        tcp dport $lo-$hi drop
        udp dport $lo-$hi drop
    }
}
EOF
}

# fabric_route NODE ADDR: NODE's route to ADDR leaves by another interface
# than eth0: a veth pair of its own, dtfab0 (10.99.0.1) to dtfab1, where the
# packets end (this kernel has no dummy interfaces).
fabric_route() {
    local node=${1:-} addr=${2:-} ns
    [[ $addr =~ ^[0-9.]+$ ]] || { echo "usage: fabric_route NODE ADDR" >&2; return 1; }
    fabric_check_node "$node" || return 1
    ns=dt-$node
    if ! { timeout "$FABRIC_TIMEOUT" ip -n "$ns" link add dtfab0 type veth peer name dtfab1 &&
        timeout "$FABRIC_TIMEOUT" ip -n "$ns" addr add 10.99.0.1/32 dev dtfab0 &&
        timeout "$FABRIC_TIMEOUT" ip -n "$ns" link set dtfab0 up &&
        timeout "$FABRIC_TIMEOUT" ip -n "$ns" link set dtfab1 up &&
        timeout "$FABRIC_TIMEOUT" ip -n "$ns" route add "$addr/32" dev dtfab0 src 10.99.0.1; }; then
        echo "fabric: cannot route $addr from $node by dtfab0" >&2
        return 1
    fi
}

# Undo all of the above on every node; never fails (nothing to undo, or no
# cluster, is fine).  A node with no recorded MTU gets its host side's.
fabric_reset() {
    local node dir mtu link
    dir=$(fabric_state_dir)
    for node in $(fabric_nodes); do
        timeout "$FABRIC_TIMEOUT" tc -n "dt-$node" qdisc del dev eth0 root >/dev/null 2>&1 || true
        timeout "$FABRIC_TIMEOUT" ip netns exec "dt-$node" nft delete table inet dtfab >/dev/null 2>&1 || true
        timeout "$FABRIC_TIMEOUT" ip -n "dt-$node" link del dtfab0 >/dev/null 2>&1 || true
        mtu=$(cat "$dir/mtu-$node" 2>/dev/null) || mtu=''
        [[ -n $mtu ]] || mtu=$(cat "/sys/class/net/dtveth-$node/mtu" 2>/dev/null) || mtu=''
        if [[ -n $mtu ]]; then
            timeout "$FABRIC_TIMEOUT" ip -n "dt-$node" link set dev eth0 mtu "$mtu" >/dev/null 2>&1 || true
        fi
        rm -f "$dir/mtu-$node"
    done
    # the host sides, also of a node whose namespace is gone
    for link in /sys/class/net/dtveth-node*; do
        [[ -e $link ]] || continue
        timeout "$FABRIC_TIMEOUT" tc qdisc del dev "${link##*/}" root >/dev/null 2>&1 || true
    done
    rmdir "$dir" 2>/dev/null || true
    return 0
}

# fabric_clean: fails, naming them, while anything of the above is left
# (a tbf, an MTU other than the host side's, a dtfab table).
fabric_clean() {
    local node link left=() mtu peer
    for node in $(fabric_nodes); do
        timeout "$FABRIC_TIMEOUT" tc -n "dt-$node" qdisc show dev eth0 2>/dev/null | grep -Eq '^qdisc (tbf|htb)' &&
            left+=("tbf or htb on $node's eth0")
        timeout "$FABRIC_TIMEOUT" ip netns exec "dt-$node" nft list table inet dtfab >/dev/null 2>&1 &&
            left+=("table dtfab in dt-$node")
        timeout "$FABRIC_TIMEOUT" ip -n "dt-$node" link show dtfab0 >/dev/null 2>&1 &&
            left+=("dtfab0 in dt-$node")
        mtu=$(timeout "$FABRIC_TIMEOUT" ip -n "dt-$node" -o link show dev eth0 2>/dev/null |
            sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
        peer=$(cat "/sys/class/net/dtveth-$node/mtu" 2>/dev/null) || peer=''
        [[ -z $peer || $mtu == "$peer" ]] || left+=("$node's MTU $mtu (host side $peer)")
    done
    for link in /sys/class/net/dtveth-node*; do
        [[ -e $link ]] || continue
        timeout "$FABRIC_TIMEOUT" tc qdisc show dev "${link##*/}" 2>/dev/null | grep -q '^qdisc tbf' &&
            left+=("tbf on ${link##*/}")
    done
    ((${#left[@]} == 0)) && return 0
    printf 'fabric: left over: %s\n' "${left[@]}" >&2
    return 1
}
