#!/usr/bin/env bats
# preflight.bats - --dist-train=preflight on a 3-node cluster: each task runs
# dist-train-doctor before its own program (Slurm 23.11 and later prepend it to the task's
# command line); the program then binds MASTER_PORT at once (PyTorch's TCPStore in DDP);
# a node that cannot reach rank 0 fails the step with the report; the site's preflight=on;
# and on Slurm without spank_prepend_task_argv, srun refuses it before launch.

load helpers/common

DOCTOR="$TOP/tools/dist-train-doctor"

# The Slurm release the plugin was built for, as 2211 for 22.11.
release_number() {
    local r
    r=$(slurm_release) && echo $((10#${r/./}))
}

plugstack() {
    printf 'required %s doctor=%s %s\n' "$PLUGIN_SO" "$DOCTOR" "$*" >"$MINICLUSTER_DIR/plugstack.conf"
}

setup_file() {
    [[ -x $DOCTOR ]] || { echo "build first: $DOCTOR is missing" >&2; return 1; }
    cluster_start 3
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    plugstack
}

teardown() {
    if [[ -n ${BLACKHOLE:-} ]]; then
        ip -n dt-node3 route del blackhole "$BLACKHOLE/32" 2>/dev/null || true
    fi
}

@test "Slurm before 23.11: srun refuses preflight before launch, naming the release and the fix" {
    (($(release_number) < 2311)) || skip "this Slurm has spank_prepend_task_argv"
    run timeout 60 srun --dist-train=preflight -N2 -n2 touch "$MINICLUSTER_DIR/ran"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"--dist-train=preflight (or the site's preflight=on) needs Slurm 23.11 or later"*"run the check yourself with \`srun --dist-train ... dist-train-doctor\`"* ]]
    [[ ! -e $MINICLUSTER_DIR/ran ]]
    # refused before srun makes the step: in an allocation, no step is left
    # holding its resources, and the next srun runs at once
    run timeout 90 salloc -N1 -n1 bash -c 'srun --dist-train=preflight true; timeout 20 srun echo next-ran'
    echo "$output"
    [[ $output == *"needs Slurm 23.11 or later"* && $output == *next-ran* ]]
    # the site's default the same; a user's preflight=off still runs
    plugstack preflight=on
    run timeout 60 srun --dist-train -N1 -n1 true
    [ "$status" -ne 0 ]
    [[ $output == *"needs Slurm 23.11 or later"* ]]
    run timeout 60 srun --dist-train=preflight=off -N1 -n1 true
    [ "$status" -eq 0 ]
}

@test "preflight, then DDP: the check passes, the program runs unchanged and binds MASTER_PORT at once" {
    (($(release_number) >= 2311)) || skip "this Slurm lacks spank_prepend_task_argv (23.11 and later)"
    run timeout 240 srun --dist-train=preflight -N2 -n4 "$TORCH_PYTHON" "$TOP/examples/ddp_train.py" --steps 10
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"dist-train-doctor: ok: all 4 ranks on 2 nodes checked in, nothing wrong"* ]]
    [[ $output == *"training on 4 ranks, master $(node_addr node1):"* ]]
    [[ $(grep -c "^rank [0-3] on node[12]: final parameters" <<<"$output") -eq 4 ]]
    # the task's own arguments reach it unchanged
    run timeout 60 srun --dist-train=preflight -N1 -n1 printf '[%s]' 'a b' '' "c'd"
    [[ ${lines[-1]} == "[a b][][c'd]" ]]
}

@test "preflight: a node that cannot reach rank 0 fails the step with the report naming it" {
    (($(release_number) >= 2311)) || skip "this Slurm lacks spank_prepend_task_argv (23.11 and later)"
    BLACKHOLE=$(node_addr node1)
    ip -n dt-node3 route add blackhole "$BLACKHOLE/32"
    local t0=$SECONDS
    # (fail_fast off: node3's rank says why at the same deadline as rank 0's
    # verdict, which would otherwise stop it first on a busy machine; the step
    # fails all the same)
    run timeout 120 srun --dist-train=preflight,fail_fast=off -N3 -n3 touch "$MINICLUSTER_DIR/ran.%t"
    echo "$output"
    [ "$status" -ne 0 ]
    ((SECONDS - t0 < 60))
    [[ $output == *"node3: ranks 2 never checked in"* || $output == *"node3: rank 2 never checked in"* ]]
    [[ $output == *"rank 2 on node3: cannot reach rank 0 at $BLACKHOLE:"* ]]
    # no rank ran the program
    [[ -z $(find "$MINICLUSTER_DIR" -mindepth 1 -maxdepth 1 -name 'ran.*') ]]
}

@test "the site's preflight=on: every step checks first; a user turns it off with preflight=off" {
    (($(release_number) >= 2311)) || skip "this Slurm lacks spank_prepend_task_argv (23.11 and later)"
    plugstack preflight=on
    run timeout 60 srun --dist-train -N2 -n2 true
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"dist-train-doctor: ok: all 2 ranks on 2 nodes checked in"* ]]
    run timeout 60 srun --dist-train=preflight=off -N2 -n2 true
    [ "$status" -eq 0 ]
    [[ $output != *"dist-train-doctor"* ]]
    # without --dist-train nothing is prepended
    run timeout 60 srun -N2 -n2 true
    [[ $status -eq 0 && $output != *"dist-train-doctor"* ]]
}
