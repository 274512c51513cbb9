#!/usr/bin/env bats
# container.bats - --dist-train in containers started by pyxis and enroot,
# both built at test time from their release archives (helpers/containers.bash),
# with an image of Debian's PyTorch (scripts/container-image) whose ENV sets a
# MASTER_ADDR and MASTER_PORT of its own, and enroot's PyTorch hook enabled.
# An ordinary user runs the steps (enroot gives an ordinary user's container
# its own user namespace; pyxis joins it).  plugstack.conf includes a
# plugstack.conf.d holding pyxis.conf and zz-dist-train.conf: the snippet's
# name as the admin guide gives it, so that dist-train loads after pyxis.  The
# cluster is the site profile where this machine can run it.

# shellcheck disable=SC2016 # the tasks expand the variables of these bash -c programs

load helpers/common
load helpers/containers

# As GPU sites run Slurm (the site profile: cgroups, task/affinity) wherever
# this machine can; the default profile elsewhere.
if "$MINICLUSTER" can-run --profile site >/dev/null 2>&1; then
    export MINICLUSTER_PROFILE=site
fi

TEST_USER=dt-container-user
CONTAINER_NAME=dt-test

as_user() {
    runuser -u "$TEST_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@"
}

# The Slurm release the plugin was built for, as 2211 for 22.11.
release_number() {
    local r
    r=$(slurm_release) && echo $((10#${r/./}))
}

# Why this machine cannot run the file, or nothing.
cannot_run() {
    thirdparty_dir >/dev/null ||
        { echo "no $PYXIS_ARCHIVE and $ENROOT_ARCHIVE in \$DIST_TRAIN_THIRDPARTY or $TOP/../shared/thirdparty"; return; }
    "$TOP/scripts/container-image" path >/dev/null 2>&1 ||
        { echo "no container image (as root: scripts/container-image ensure)"; return; }
    # enroot gives an ordinary user a user namespace of its own
    if ! setpriv --reuid=nobody --regid=nogroup --clear-groups unshare --user true 2>/dev/null; then
        echo "this kernel refuses user namespaces to ordinary users"
    fi
}

write_plugstack() {
    local d=$USER_DIR/plugstack.conf.d
    mkdir -p "$d"
    rm -f "$d"/*.conf
    printf 'required %s runtime_path=/tmp/pyxis\n' "$USER_DIR/tools/pyxis/spank_pyxis.so" >"$d/pyxis.conf"
    printf 'required %s topology=%s doctor=%s\n' "$USER_DIR/dist_train.so" "$USER_DIR/topology.xml" \
        "$USER_DIR/dist-train-doctor" >"$d/${1:-zz-dist-train.conf}"
    printf 'include %s/*.conf\n' "$d" >"$USER_DIR/plugstack.conf"
}

setup_file() {
    local why
    why=$(cannot_run)
    # (bats 1.8 takes a skip in setup_file for a failure: each test skips instead)
    if [[ -n $why ]]; then
        echo "$why" >"$BATS_FILE_TMPDIR/cannot-run"
        return 0
    fi
    # USER_DIR holds the plugins, the tools, the program and each node's containers
    user_file_setup "$TEST_USER"
    build_container_tools "$(thirdparty_dir)" "$USER_DIR/tools"
    configure_enroot "$USER_DIR/tools"
    enroot_net_namespace "$USER_DIR/tools"
    install -m 644 "$PLUGIN_SO" "$USER_DIR/dist_train.so"
    install -m 755 "$TOP/tools/dist-train-doctor" "$USER_DIR/dist-train-doctor"
    [[ ! -x $TOP/tools/dist-train-doctor-static ]] ||
        install -m 755 "$TOP/tools/dist-train-doctor-static" "$USER_DIR/dist-train-doctor-static"
    install -m 644 "$GPU_XML" "$USER_DIR/topology.xml"
    install -d -m 755 "$USER_DIR/prog"
    install -m 644 "$TOP/tests/integration/helpers/ddp_env.py" \
        "$TOP/tests/integration/helpers/torch_store.py" "$USER_DIR/prog/"
    install -d -m 1777 "$USER_DIR/meet"
    # the shim as a user brings it into a container: the library and the module
    install -d -m 755 "$USER_DIR/shim"
    install -m 644 "$TOP/shim/.libs/libdtshim.so.0" "$USER_DIR/shim/libdtshim.so.0"
    install -m 644 "$TOP/python/dtshim.py" "$TOP/examples/preempt_train.py" "$USER_DIR/shim/"
    # The image where the user can read it, whatever the cache's mode (a
    # link where the file system allows, else a copy).
    local image
    image=$("$TOP/scripts/container-image" path)
    ln "$image" "$USER_DIR/image.sqsh" 2>/dev/null || cp "$image" "$USER_DIR/image.sqsh"
    chmod 644 "$USER_DIR/image.sqsh"
    write_plugstack
    # slurmstepd (and so pyxis) finds enroot on slurmd's PATH
    PATH=$USER_DIR/tools/enroot/bin:$PATH "$MINICLUSTER" start --nodes 2 --cpus 2 --gpus 4 \
        --plugstack "$USER_DIR/plugstack.conf" >&2
    # Each node unpacks the image once, into a named container that every test's
    # steps start from (unpacking it again per step would cost seconds each).
    eval "$("$MINICLUSTER" env)"
    as_user timeout 240 srun -N2 --ntasks-per-node=1 --container-image="$USER_DIR/image.sqsh" \
        --container-name="$CONTAINER_NAME" true >&2
}

teardown_file() {
    user_file_teardown "$TEST_USER"
}

setup() {
    [[ ! -f $BATS_FILE_TMPDIR/cannot-run ]] || skip "$(cat "$BATS_FILE_TMPDIR/cannot-run")"
    eval "$("$MINICLUSTER" env)"
    PATH=$USER_DIR/tools/enroot/bin:$PATH
    IMAGE=$USER_DIR/image.sqsh
    cd /
}

teardown() {
    [[ -z ${USER_DIR:-} ]] || write_plugstack
    [[ -z ${USER_DIR:-} ]] || rm -f "$USER_DIR"/tools/enroot/etc/enroot/mounts.d/90-dist-train-doctor.fstab
}

# enroot_doctor_mount DOCTOR: enroot mounts DOCTOR into every container at the
# doctor= path, as the packages' /etc/enroot/mounts.d file does.
enroot_doctor_mount() {
    mkdir -p "$USER_DIR/tools/enroot/etc/enroot/mounts.d"
    sed -e "s|@pkglibexecdir@/dist-train-doctor-static|$1|" -e "s|@bindir@/dist-train-doctor|$USER_DIR/dist-train-doctor|" \
        "$TOP/etc/enroot-dist-train.fstab.in" >"$USER_DIR/tools/enroot/etc/enroot/mounts.d/90-dist-train-doctor.fstab"
}

# run_in_container SRUN_ARGS... -- CMD...: as the user, srun in the image with
# the program's directory at /dt-test; the task lines (RANK=...) sorted by
# rank in $lines, everything in $output.
run_in_container() {
    local args=()
    while [[ $1 != -- ]]; do args+=("$1") && shift; done
    shift
    run as_user timeout 240 srun "${args[@]}" --container-image="$IMAGE" --container-name="$CONTAINER_NAME" \
        --container-mounts="$USER_DIR/prog:/dt-test,$USER_DIR/meet:/dt-meet" "$@"
    echo "$output"
    mapfile -t lines < <(grep '^RANK=' <<<"$output" | sort -t= -k2 -n)
}

@test "container: without --dist-train, the image's ENV and enroot's hook decide" {
    run_in_container -N2 -n4 -- bash -c \
        'echo "RANK=$RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT WORLD_SIZE=$WORLD_SIZE"'
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 4 ]
    # what a training program would get in a container without the plugin
    [[ $(grep -c ' MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=4$' <<<"$output") -eq 4 ]]
}

@test "container: PyTorch DDP on 2 nodes, 4 ranks: the plugin's MASTER_ADDR, MASTER_PORT and binding" {
    run_in_container --dist-train -N2 -n4 --gres=gpu:4 -- python3 /dt-test/ddp_env.py
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 4 ]
    local line lr port
    port=$(field "${lines[0]}" MASTER_PORT)
    ((port >= 20000 && port <= 32767))
    for line in "${lines[@]}"; do
        expect_eq "$line" SUM 10
        expect_eq "$line" IMAGE debian
        expect_eq "$line" MASTER_ADDR "$(node_addr node1)"
        expect_eq "$line" MASTER_PORT "$port"
        expect_eq "$line" ORDER PCI_BUS_ID
        lr=$(field "$line" LOCAL_RANK)
        # each rank on the CPU beside its GPUs, its own GPU first at LOCAL_RANK
        expect_eq "$line" CPUS "$lr"
        expect_eq "$line" AFFINITY "$lr"
        [[ $(tr ',' '\n' <<<"$(field "$line" CVD)" | sort -n | paste -sd,) == 0,1,2,3 ]]
        [[ $(cut -d, -f$((lr + 1)) <<<"$(field "$line" CVD)") == $((lr * 2)) ]]
    done
}

@test "container: two concurrent steps of a job get distinct ports" {
    rm -f "$USER_DIR"/meet/*
    local step=(srun --exact -N2 -n2 --dist-train --container-image="$IMAGE" --container-name="$CONTAINER_NAME"
        --container-mounts="$USER_DIR/prog:/dt-test,$USER_DIR/meet:/dt-meet"
        python3 /dt-test/ddp_env.py /dt-meet)
    run as_user timeout 240 salloc -N2 -n4 bash -c \
        "${step[*]} > $USER_DIR/meet/a.out & a=\$!; ${step[*]} > $USER_DIR/meet/b.out & b=\$!; wait \$a && wait \$b"
    echo "$output"
    cat "$USER_DIR"/meet/?.out
    [ "$status" -eq 0 ]
    local a b
    a=$(sed -n 's/.* MASTER_PORT=\([0-9]*\) .*/\1/p' "$USER_DIR/meet/a.out" | sort -u)
    b=$(sed -n 's/.* MASTER_PORT=\([0-9]*\) .*/\1/p' "$USER_DIR/meet/b.out" | sort -u)
    # both steps' ranks met (rank 0 of each waited for the other) on one port each
    [[ $(grep -c ' SUM=3 ' "$USER_DIR/meet/a.out") -eq 2 && $(grep -c ' SUM=3 ' "$USER_DIR/meet/b.out") -eq 2 ]]
    [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && $a != "$b" ]]
}

@test "container: the user's own MASTER_PORT, exported before srun, is kept" {
    MASTER_PORT=23456 run_in_container --dist-train -N2 -n2 -- python3 /dt-test/ddp_env.py
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 2 ]
    # the image's 29500 and the plugin's port both give way to the user's
    expect_eq "${lines[0]}" MASTER_PORT 23456
    expect_eq "${lines[1]}" MASTER_PORT 23456
    expect_eq "${lines[1]}" SUM 3
    # (and the plugin set the rest: its binding)
    expect_eq "${lines[1]}" CPUS 0
}

# pyxis 0.24 and later: --container-unshare=net,ipc,uts
unshare_supported() {
    as_user srun --help 2>&1 | grep -q -- '--container-unshare'
}

@test "container: --container-unshare=net on 2 nodes: srun refuses it before launch, and says why" {
    unshare_supported || skip "$PYXIS_ARCHIVE has no --container-unshare (pyxis 0.24 and later)"
    local args=(-N2 -n2 --container-image="$IMAGE" --container-name="$CONTAINER_NAME")
    local why="dist-train: --container-unshare=net gives each node's container a network namespace of its own, with loopback alone, and this step spans 2 nodes: their ranks could never reach each other. Drop net from --container-unshare (ipc and uts can stay), or run the step on one node (-N1)"
    # without the plugin the step starts, and pyxis says what it can (with
    # enroot 4.1.2, which has no network namespace for an ordinary user)
    run as_user timeout 240 srun "${args[@]}" --container-unshare=net true
    echo "$output"
    [[ $output == *"pyxis:"* ]]
    run as_user timeout 240 srun --dist-train "${args[@]}" --container-unshare=ipc,net true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"$why"* ]]
    [[ $output != *"pyxis:"* ]] # (refused in srun: no node started a container)
    # pyxis's default for the option, from srun's environment
    run as_user env PYXIS_CONTAINER_UNSHARE=net timeout 240 srun --dist-train "${args[@]}" true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"$why"* ]]
    # ipc alone leaves the network as it is: the plugin lets the step go on
    # (to pyxis, which enroot 4.1.2 gives no IPC namespace either)
    run as_user timeout 240 srun --dist-train "${args[@]}" --container-unshare=ipc true
    echo "$output"
    [[ $output != *"dist-train: --container-unshare"* && $output == *"pyxis:"* ]]
}

# As root, with ENROOT_ALLOW_SUPERUSER (no user namespace: pyxis joins the
# container's network namespace as root): enroot 4.1.2 gives it a network
# namespace of its own only through enroot_net_namespace (helpers/containers.bash).
@test "container: --container-unshare=net on one node: MASTER_ADDR 127.0.0.1 by lo, DDP runs" {
    unshare_supported || skip "$PYXIS_ARCHIVE has no --container-unshare (pyxis 0.24 and later)"
    ENROOT_ALLOW_SUPERUSER=y run timeout 240 srun --dist-train -N1 -n2 --container-image="$IMAGE" --container-unshare=net \
        --container-mounts="$USER_DIR/prog:/dt-test" bash -c \
        'echo "NET RANK=$RANK IF=$NCCL_SOCKET_IFNAME GLOO=$GLOO_SOCKET_IFNAME LINKS=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | paste -sd,)"; exec python3 /dt-test/ddp_env.py'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -c '^NET RANK=[01] IF=lo GLOO=lo LINKS=lo$' <<<"$output") -eq 2 ]]
    mapfile -t lines < <(grep '^RANK=' <<<"$output" | sort -t= -k2 -n)
    [ "${#lines[@]}" -eq 2 ]
    expect_eq "${lines[0]}" MASTER_ADDR 127.0.0.1
    expect_eq "${lines[1]}" MASTER_ADDR 127.0.0.1
    expect_eq "${lines[1]}" SUM 3
}

@test "container: loaded before pyxis, dist-train refuses a container step and says what to change" {
    write_plugstack dist-train.conf
    run_in_container --dist-train -N2 -n2 -- python3 /dt-test/ddp_env.py
    [ "$status" -ne 0 ]
    [ "${#lines[@]}" -eq 0 ]
    [[ $output == *"plugstack.conf loads dist-train before pyxis"*"zz-dist-train.conf"* ]]
    # a step without a container is not affected by the order
    run as_user timeout 60 srun --dist-train -N2 -n2 bash -c 'echo "RANK=$RANK MASTER_PORT=$MASTER_PORT"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -c '^RANK=[01] MASTER_PORT=[0-9]*$' <<<"$output") -eq 2 ]]
}

@test "container: preflight needs the doctor in the container, and runs it there" {
    (($(release_number) >= 2311)) || skip "this Slurm lacks spank_prepend_task_argv (23.11 and later)"
    run_in_container --dist-train=preflight -N2 -n2 -- python3 /dt-test/ddp_env.py
    [ "$status" -ne 0 ]
    [ "${#lines[@]}" -eq 0 ]
    [[ $output == *"preflight: the container has no $USER_DIR/dist-train-doctor"*"--container-mounts="* ]]
    run as_user timeout 240 srun --dist-train=preflight -N2 -n2 --container-image="$IMAGE" --container-name="$CONTAINER_NAME" \
        --container-mounts="$USER_DIR/prog:/dt-test,$USER_DIR/dist-train-doctor:$USER_DIR/dist-train-doctor" \
        python3 /dt-test/ddp_env.py
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"dist-train-doctor: ok: all 2 ranks on 2 nodes checked in, nothing wrong"* ]]
    [[ $(grep -c '^RANK=[01] .* SUM=3 ' <<<"$output") -eq 2 ]]
}

# The doctor of a newer Debian than the image's needs a newer C library
# (GLIBC_2.38 and later); the static one, which the packages have enroot mount
# into every container, runs in any image.
@test "container: preflight in an image older than the node's, the doctor from enroot's mounts.d" {
    (($(release_number) >= 2311)) || skip "this Slurm lacks spank_prepend_task_argv (23.11 and later)"
    # (the mount is enroot's, the same under every pyxis; the four containers of
    # this old image are the dearest of the file's, so they are made in one pass)
    [[ ${PYXIS_ARCHIVE:-} != pyxis-0.24.0.tar.gz ]] ||
        skip "enroot's mounts.d is the same under every pyxis: run with pyxis 0.9.1's pass"
    local old
    old=$("$TOP/scripts/container-image" path bookworm) ||
        { echo "no bookworm image (an older one than this node's): scripts/container-image ensure bookworm"; return 1; }
    [[ -x $USER_DIR/dist-train-doctor-static ]] ||
        { echo "no tools/dist-train-doctor-static: configure could not link it statically (libc6-dev, libssl-dev; on Debian 13 libzstd-dev)"; return 1; }
    ln "$old" "$USER_DIR/old.sqsh" 2>/dev/null || cp "$old" "$USER_DIR/old.sqsh"
    chmod 644 "$USER_DIR/old.sqsh"
    # A named container, unpacked on each node by a step of its own, as setup_file's: a
    # step that failed fast on one node while the other still unpacked the image, or
    # removed it, left that node down (Kill task failed) on a loaded machine.
    as_user timeout 240 srun -N2 --ntasks-per-node=1 --container-image="$USER_DIR/old.sqsh" \
        --container-name="$CONTAINER_NAME-old" true >&2
    local step=(timeout 240 srun --dist-train=preflight -N2 -n2 --container-image="$USER_DIR/old.sqsh"
        --container-name="$CONTAINER_NAME-old" bash -c 'echo "RANK=$RANK $(sed -n "s/^VERSION_CODENAME=//p" /etc/os-release)"')
    # the node's own doctor there: its C library is too old
    enroot_doctor_mount "$USER_DIR/dist-train-doctor"
    run as_user "${step[@]}"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"GLIBC_"*"not found"* ]]
    # the static one, with no --container-mounts
    enroot_doctor_mount "$USER_DIR/dist-train-doctor-static"
    run as_user "${step[@]}"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"dist-train-doctor: ok: all 2 ranks on 2 nodes checked in, nothing wrong"* ]]
    [[ $(grep -c '^RANK=[01] bookworm$' <<<"$output") -eq 2 ]]
}

@test "container: a host directory mounted over /run/slurm-dist-train stays as it was; the host's cache is written" {
    # The checked copy of topology= is saved by root, in local rank 0's task, once per
    # boot and file: without it, this step saves one.  The user mounts a root-owned host
    # directory where the container's cache directory would be: root must not write there.
    local cache=/run/slurm-dist-train victim=$USER_DIR/victim
    rm -f "$cache/site-topology-node1.xml"
    install -d -m 755 "$victim"
    echo kept >"$victim/kept"
    run as_user timeout 240 srun --dist-train -w node1 -N1 -n1 --container-image="$IMAGE" \
        --container-name="$CONTAINER_NAME" --container-mounts="$USER_DIR/prog:/dt-test,$victim:$cache" \
        python3 /dt-test/ddp_env.py
    echo "$output"
    ls -la "$victim" "$cache"
    [ "$status" -eq 0 ]
    [[ $(grep -c '^RANK=0 ' <<<"$output") -eq 1 ]]
    [[ $(ls -A "$victim") == kept && $(cat "$victim/kept") == kept ]]
    [[ $(stat -c '%U %a' "$cache/site-topology-node1.xml") == "root 644" ]]
    # and nothing of root's in the node's containers (the user's, in enroot's data path)
    local data
    data=$(find "$USER_DIR/tools/data" -mindepth 1 -maxdepth 1 -name 'node1-*')
    [[ -n $data ]]
    [[ -z $(find "$data" -xdev -uid 0 -print -quit) ]]
}

# preempt_in_container MPI [SRUN_ARGS...]: the preemption example in the image
# on 2 nodes, with the shim mounted and nothing else, over srun --mpi=MPI;
# scancel --signal=USR2 once both ranks train.  Its output in $output, srun's
# status in $status.
preempt_in_container() {
    local mpi=$1 run=$USER_DIR/meet/preempt.$1 out=$BATS_TEST_TMPDIR/out pid job i
    shift
    rm -rf "$run" && install -d -m 1777 "$run"
    as_user env DTSHIM_LIBRARY=/dt-shim/libdtshim.so.0 PYTHONPATH=/dt-shim DTSHIM_TIMEOUT=120 \
        timeout 240 srun --mpi="$mpi" --dist-train -N2 -n2 "$@" --container-image="$IMAGE" \
        --container-name="$CONTAINER_NAME" --container-mounts="$USER_DIR/shim:/dt-shim,$run:/dt-run" \
        python3 /dt-shim/preempt_train.py --dir /dt-run >"$out" 2>&1 &
    pid=$!
    # (two PyTorch starts: most of a minute on a busy machine; at most the step's bound)
    for ((i = 0; i < 2400; i++)); do
        [[ $(grep -c 'starting at step 0' "$out") -eq 2 ]] && break
        grep -q 'Traceback' "$out" && break
        sleep 0.1
    done
    job=$(squeue -h -u "$TEST_USER" -o %i | head -n 1)
    if [[ -n $job && $(grep -c 'starting at step 0' "$out") -eq 2 ]]; then
        sleep 1 # some steps
        scancel --signal=USR2 "$job" || true
    fi
    status=0
    wait "$pid" || status=$?
    output=$(cat "$out")
    echo "$output"
}

# the ranks stopped together, at one step after the first
stopped_together() {
    local stops
    [[ $(grep -c 'stopped at step [0-9]* (preempted)' <<<"$output") -eq 2 ]] || return 1
    stops=$(grep -o 'stopped at step [0-9]*' <<<"$output" | sort -u)
    [[ $(wc -l <<<"$stops") -eq 1 && ${stops##* } -gt 0 ]]
}

@test "container: the shim over PMI-2, no library in the image: scancel --signal=USR2 stops every rank at one step" {
    require_mpi pmi2
    # (as root in the container, as pyxis 0.9.1 maps the user by default: PMI-2 asks no uid)
    preempt_in_container pmi2 --container-remap-root
    [ "$status" -eq 0 ]
    stopped_together
    [[ $(grep -c 'starting at step 0 (the shim over pmi2)' <<<"$output") -eq 2 ]]
}

# Over PMIx the image needs libpmix; the server's directory is not mounted (the
# shim asks the server for what its shared memory would hold), and the server
# refuses a client that reports another uid than the job's.
@test "container: the shim over PMIx: every rank stops at one step; as root, or without libpmix, it says what to do" {
    require_mpi pmix
    run as_user timeout 120 srun -N1 -n1 --container-image="$IMAGE" --container-name="$CONTAINER_NAME" \
        sh -c 'for f in /usr/lib/*/libpmix.so.2; do [ ! -e "$f" ] || echo "libpmix: $f"; done'
    [ "$status" -eq 0 ]
    echo "${output:-no libpmix in the image}"
    if [[ $output != *"libpmix: "* ]]; then
        preempt_in_container pmix
        [ "$status" -ne 0 ]
        [[ $output == *"PMIx (libpmix.so.2) cannot be loaded here: "*"install libpmix2 in the image, or mount the node's, or run the step with srun --mpi=pmi2"* ]]
        return 0
    fi
    preempt_in_container pmix --container-remap-root
    [ "$status" -ne 0 ]
    [[ $(grep -c "this task runs as root in a container that maps the job's user (uid $(id -u "$TEST_USER")) to root, and Slurm's PMIx server refuses a client whose uid is not the job's: run the step with --no-container-remap-root, or over srun --mpi=pmi2" <<<"$output") -eq 2 ]]
    preempt_in_container pmix --no-container-remap-root
    [ "$status" -eq 0 ]
    stopped_together
    [[ $(grep -c 'starting at step 0 (the shim over pmix)' <<<"$output") -eq 2 ]]
}

@test "container: one rank exits 3: every rank stops at once, srun names it" {
    # (a mark no other test cluster's step has: they share this PID namespace)
    local mark=$((300 + RANDOM % 1000)).7 t0
    t0=$SECONDS
    run_in_container --dist-train -N2 -n4 -- bash -c \
        "if [ \$RANK = 3 ]; then sleep 1; exit 3; fi; exec sleep $mark"
    [ "$status" -ne 0 ]
    # (the ranks' own time is 1 s; a step left to run would take $mark)
    ((SECONDS - t0 < 60))
    [[ $(grep -m1 'dist-train: rank' <<<"$output") == *"rank 3 on node2 exited with status 3: stopping every rank of step"* ]]
    leftovers_of "sleep $mark"
}

@test "container: scancel --signal=TERM of the step reaches the program in the container" {
    local out=$BATS_TEST_TMPDIR/out pid job i
    as_user timeout 240 srun --dist-train -N2 -n2 --container-image="$IMAGE" --container-name="$CONTAINER_NAME" \
        bash -c 'trap "echo RANK=$RANK got TERM; exit 0" TERM; echo "RANK=$RANK ready"; sleep 200 & wait' \
        >"$out" 2>&1 &
    pid=$!
    for ((i = 0; i < 600; i++)); do
        [[ $(grep -c ' ready$' "$out") -eq 2 ]] && break
        sleep 0.2
    done
    job=$(squeue -h -u "$TEST_USER" -o %i | head -n 1)
    [[ -n $job ]]
    scancel --signal=TERM "$job.0"
    wait "$pid" || true
    cat "$out"
    # each rank ran its handler, inside the container, and nothing else was said
    [[ $(grep -c '^RANK=[01] got TERM$' "$out") -eq 2 ]]
    [[ $(grep -c 'dist-train: rank' "$out") -eq 0 ]]
}

