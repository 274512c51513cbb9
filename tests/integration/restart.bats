#!/usr/bin/env bats
# restart.bats - scripts/dist-train-restart on a 3-node cluster: a failed
# attempt is rerun and resumes from its checkpoint; a failed node is left out
# and the rerun has a smaller WORLD_SIZE.

load helpers/common

RESTART="$TOP/scripts/dist-train-restart"
TRAIN="$TOP/tests/integration/helpers/ckpt-train"

setup_file() {
    cluster_start 3
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    WORK=$MINICLUSTER_DIR/restart.$BATS_TEST_NUMBER
    rm -rf "$WORK" && mkdir -p "$WORK"
}

@test "a failed first attempt is rerun and resumes from its checkpoint with TORCHELASTIC_RESTART_COUNT=1" {
    sbatch_wait -N3 <<JOB
#!/bin/bash
"$RESTART" --max-restarts 2 --ntasks-per-node=1 "$TRAIN" "$WORK" exit
echo "launcher status \$?"
JOB
    echo "$output"
    [[ $output == *"launcher status 0"* ]]
    [[ $(grep -c '^rank [0-2] world 3 restart 0 start [05]' <<<"$output") -eq 3 ]]
    [[ $(grep -c '^rank [0-2] world 3 restart 1 start 5' <<<"$output") -eq 3 ]]
    [[ $(grep -c '^rank [0-2] done from step 5' <<<"$output") -eq 3 ]]
    # each attempt is a new step with its own port
    local ports
    ports=$(sed -n 's/^rank 0 world 3 restart . start . port \([0-9]*\).*/\1/p' <<<"$output" | sort -u | wc -l)
    [ "$ports" -eq 2 ]
    [[ $output == *"attempt 1 failed with status"* ]]
}

@test "it gives up after --max-restarts and exits with the last status" {
    sbatch_wait -N2 <<JOB
#!/bin/bash
"$RESTART" --max-restarts 1 --dist-train=fail_fast=off -N2 --ntasks-per-node=1 bash -c 'echo "try \$TORCHELASTIC_RESTART_COUNT"; exit 4'
echo "launcher status \$?"
JOB
    echo "$output"
    [[ $(grep -c '^try 0' <<<"$output") -eq 2 && $(grep -c '^try 1' <<<"$output") -eq 2 ]]
    [[ $(grep -c '^try 2' <<<"$output") -eq 0 ]]
    [[ $output == *"launcher status 4"* ]]
}

@test "bad usage is refused with a message" {
    run "$RESTART" --max-restarts x true
    [ "$status" -eq 2 ] && [[ $output == *"--max-restarts needs a number"* ]]
    run env -u SLURM_JOB_ID "$RESTART" true
    [ "$status" -eq 2 ] && [[ $output == *"not inside a Slurm job"* ]]
    SLURM_JOB_ID=1 SLURM_JOB_NODELIST=node1 run "$RESTART" --nodes 2:3 -n4 true
    [ "$status" -eq 2 ] && [[ $output == *"leave -N, -n and -w"* ]]
}

# Last: it kills node3's slurmd.
@test "--nodes 2:3: a node that failed is left out, the rerun has a smaller WORLD_SIZE" {
    sbatch_wait -N3 --no-kill <<JOB
#!/bin/bash
"$RESTART" --max-restarts 2 --nodes 2:3 --ntasks-per-node=1 "$TRAIN" "$WORK" node "$MINICLUSTER_DIR/nodes/node3/slurmd.pid"
echo "launcher status \$?"
JOB
    echo "$output"
    [[ $output == *"launcher status 0"* ]]
    [[ $(grep -c '^rank [0-2] world 3 restart 0 start [05]' <<<"$output") -eq 3 ]]
    [[ $output == *"leaving out node3"* ]]
    [[ $(grep -c '^rank [01] world 2 restart 1 start 5 .* host node[12]$' <<<"$output") -eq 2 ]]
    [[ $(grep -c '^rank [01] done from step 5' <<<"$output") -eq 2 ]]
}
