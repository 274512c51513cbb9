#!/usr/bin/env bats
# install.bats - as a site's admin does it: the .debs built from `make dist`'s tarball
# (scripts/packages), installed with apt-get, the snippet enabled with one link, the test
# cluster run on the installed plugin (not the build tree's) with the DDP example, a shim
# program built with pkg-config and the installed Python module; then purged, and nothing
# of it left. Runs on this machine, or in the chroot of each Slurm generation.

load helpers/common

PACKAGES=(slurm-dist-train libdtshim0 libdtshim-dev python3-dtshim)
PACKAGES_DEB=()
SNIPPET=/usr/share/slurm-dist-train/dist-train.conf
LINK=/etc/slurm/plugstack.conf.d/zz-dist-train.conf
# what an admin may leave beside the link, which the purge names and leaves alone
COPY=/etc/slurm/plugstack.conf.d/dt-installtest-copy.conf
DANGLING=/etc/slurm/plugstack.conf.d/dt-installtest-dangling.conf

purge_packages() {
    DEBIAN_FRONTEND=noninteractive timeout 120 apt-get purge -y -q "${PACKAGES[@]}" >&2 2>&1 || true
}

# prebuilt_debs DIR: the packages that scripts/check builds beside the tests
# before this file runs (scripts/packages DIR/debs, its output in DIR/log, its
# status in DIR/status once it is done): waits for them (the build, niced
# beside six lanes and chroots being made, has taken 10 minutes), at most
# 1,100 s, under the file's own cap (CHECK_FILE_TIMEOUT), and fails with the
# build's log when it failed.
prebuilt_debs() {
    local dir=$1 status deadline=$((SECONDS + 1100))
    until [[ -s $dir/status ]] || ((SECONDS >= deadline)); do
        sleep 0.5
    done
    status=$(cat "$dir/status" 2>/dev/null) || status=''
    [[ $status == 0 ]] && return 0
    [[ -n $status ]] && status="failed with status $status" || status="not done after 1100 s"
    echo "the packages built beside the tests (scripts/packages $dir/debs): $status" >&2
    tail -n 40 "$dir/log" >&2
    return 1
}

setup_file() {
    [[ -d /etc/slurm/plugstack.conf.d ]] || {
        echo "no /etc/slurm/plugstack.conf.d: is slurm-wlm-basic-plugins installed?" >&2
        return 1
    }
    if [[ -n ${DIST_TRAIN_PREBUILT_DEBS:-} ]]; then
        prebuilt_debs "$DIST_TRAIN_PREBUILT_DEBS" || return 1
        export DEBS=$DIST_TRAIN_PREBUILT_DEBS/debs
    else
        export DEBS=$BATS_FILE_TMPDIR/debs
        # make check ran already in this run: the package build skips it
        DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" timeout 900 "$TOP/scripts/packages" "$DEBS" >&2
    fi
    # an earlier run that was killed may have left them
    purge_packages
    local p
    for p in "${!PACKAGES[@]}"; do
        PACKAGES_DEB[p]=$(echo "$DEBS/${PACKAGES[p]}"_*.deb)
    done
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q --no-install-recommends \
        "${PACKAGES_DEB[@]}" >&2
    # enabled with a relative link, as an admin may write it (the purge must find it too)
    ln -sfn "../../..$SNIPPET" "$LINK"
    [[ -f $LINK ]]
    # the cluster reads the site's plugstack.conf.d, as Debian's plugstack.conf does
    printf 'include /etc/slurm/plugstack.conf.d/*.conf\n' >"$BATS_FILE_TMPDIR/plugstack.conf"
    "$MINICLUSTER" stop >/dev/null 2>&1 || true
    "$MINICLUSTER" start --nodes 2 --plugstack "$BATS_FILE_TMPDIR/plugstack.conf" >&2
}

teardown_file() {
    cluster_stop || true
    purge_packages
    rm -f "$LINK" "$COPY" "$DANGLING"
}

setup() {
    cd "$TOP" || return 1
    eval "$("$MINICLUSTER" env)"
    # what the installed packages give, not the build tree
    unset DTSHIM_LIBRARY PYTHONPATH
}

@test "the packages: the plugin pinned to this Slurm's release, the snippet installed but not enabled by itself" {
    local release plugin
    release=$(slurm_release)
    dpkg-query -W -f='${Depends}\n' slurm-dist-train | tee /dev/stderr |
        grep -q "slurm-wlm-basic-plugins (>= $release), slurm-wlm-basic-plugins (<< $(next_release "$release"))"
    plugin=$(dpkg -L slurm-dist-train | grep '/dist_train\.so$')
    [[ -f $plugin && $(grep -c "^required $plugin\$" "$SNIPPET") -eq 1 ]]
    # nothing in /etc but enroot's mount of the static doctor: the admin's link
    # is what enables the plugin
    local fstab=/etc/enroot/mounts.d/90-dist-train-doctor.fstab f etc=()
    for f in $(dpkg -L slurm-dist-train | grep '^/etc/'); do
        [[ ! -f $f ]] || etc+=("$f")
    done
    [[ ${etc[*]} == "$fstab" ]]
    [[ $(grep -v '^#' "$fstab") == "/usr/libexec/slurm-dist-train/dist-train-doctor-static /usr/bin/dist-train-doctor none "* ]]
    # (static: ldd finds no libraries to load; and it runs)
    if ldd /usr/libexec/slurm-dist-train/dist-train-doctor-static >/dev/null 2>&1; then return 1; fi
    [[ $(/usr/libexec/slurm-dist-train/dist-train-doctor-static --help) == "usage: dist-train-doctor"* ]]
    for page in dist-train.8 dist-train-plan.1 dist-train-restart.1 dist-train-doctor.1; do
        dpkg -L slurm-dist-train | grep -q "/man/man[18]/$page\.gz$"
    done
    dpkg -L libdtshim-dev | grep -q '/man/man3/dtshim\.3\.gz$'
    # the topology cache's directory: made at boot (and by the install) with its mode
    dpkg -L slurm-dist-train | grep -qx /usr/lib/tmpfiles.d/slurm-dist-train.conf
    grep -qx 'd /run/slurm-dist-train 0755 root root -' /usr/lib/tmpfiles.d/slurm-dist-train.conf
    grep -q 'systemd-tmpfiles.*slurm-dist-train.conf' /var/lib/dpkg/info/slurm-dist-train.postinst
}

@test "srun --dist-train on the installed plugin: the DDP example trains on 2 nodes" {
    run timeout 240 srun --dist-train -N2 -n4 "$TORCH_PYTHON" "$TOP/examples/ddp_train.py" --steps 20
    echo "$output"
    [ "$status" -eq 0 ]
    # a world of 4 over both nodes, rank 0's address as MASTER_ADDR, all ranks at the end
    [[ $output == *"training on 4 ranks, master $(node_addr node1):"* ]]
    [[ $(grep -c "^rank [0-3] on node[12]: final parameters" <<<"$output") -eq 4 ]]
    # the installed doctor checks the same step shape
    run timeout 60 srun --dist-train -N2 -n4 dist-train-doctor --timeout 10
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"dist-train-doctor: ok: all 4 ranks on 2 nodes checked in, nothing wrong"* ]]
    # the plugin that ran is the installed one
    run timeout 60 srun --dist-train=verbose -N1 -n1 true
    [[ $output == *"dist-train:"* ]]
    refute grep -q "$TOP/spank" "$MINICLUSTER_DIR/plugstack.conf"
}

@test "a shim program built with pkg-config --cflags --libs dtshim, and the installed Python module, outside Slurm" {
    # shellcheck disable=SC2046 # pkg-config prints one flag per word
    cc -Wall -Wextra -Wno-unused-parameter -Werror -o "$MINICLUSTER_DIR/shim_check" \
        "$TOP/tests/integration/helpers/shim_check.c" $(pkg-config --cflags --libs dtshim)
    # linked against the installed library, nothing of the build tree
    ldd "$MINICLUSTER_DIR/shim_check" | tee /dev/stderr | grep -Eq "libdtshim\.so\.0 => (/usr)?/lib/"
    [[ $(ldd "$MINICLUSTER_DIR/shim_check") != *"$TOP"* ]]
    # a world of one without Slurm
    run env -u PMIX_NAMESPACE -u SLURM_STEP_NUM_TASKS "$MINICLUSTER_DIR/shim_check" init
    echo "$output"
    [[ $status -eq 0 && $output == "dtshim_init: success" ]]
    run "$TORCH_PYTHON" -c '
import dtshim
dtshim.init()
print("rank", dtshim.rank(), "of", dtshim.size(), "from", dtshim.__file__)'
    echo "$output"
    [[ $status -eq 0 && $output == "rank 0 of 1 from /usr/lib/python3/dist-packages/dtshim.py" ]]
}

@test "the installed shim in a Slurm step with PMIx, from C and from Python" {
    require_pmix
    [[ -x $MINICLUSTER_DIR/shim_check ]]
    run timeout 60 srun --mpi=pmix -N2 -n4 "$MINICLUSTER_DIR/shim_check" collectives 3
    echo "$output"
    [ "$status" -eq 0 ]
    run timeout 240 srun --mpi=pmix -N2 -n2 "$TORCH_PYTHON" -c '
import dtshim
dtshim.init()
print("rank", dtshim.rank(), "of", dtshim.size(), "from", dtshim.__file__)
dtshim.barrier()
dtshim.finalize()'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -c "^rank [01] of 2 from /usr/lib/python3/dist-packages/dtshim.py$" <<<"$output") -eq 2 ]]
}

@test "configless: every slurmd started with --conf-server, the shipped plugstack.conf includes each node's own snippet" {
    cluster_stop
    "$MINICLUSTER" start --nodes 2 --configless --plugstack "$BATS_FILE_TMPDIR/plugstack.conf" >&2
    eval "$("$MINICLUSTER" env)"
    grep -qx 'SlurmctldParameters=enable_configless' "$MINICLUSTER_DIR/slurm.conf"
    refute grep -q '^PlugStackConfig' "$MINICLUSTER_DIR/slurm.conf"
    # each node runs on what slurmctld sent it: the include line, not the snippet
    local node cache
    for node in node1 node2; do
        cache=$MINICLUSTER_DIR/nodes/$node/spool/conf-cache
        cmp "$cache/plugstack.conf" "$BATS_FILE_TMPDIR/plugstack.conf"
        grep -q 'enable_configless' "$cache/slurm.conf"
        [[ ! -e $cache/plugstack.conf.d && ! -e $cache/zz-dist-train.conf ]]
    done
    # shellcheck disable=SC2016 # each task expands its own variables
    run timeout 60 srun --dist-train -N2 -n4 bash -c 'echo "rank $RANK of $WORLD_SIZE on $(hostname) master $MASTER_ADDR:$MASTER_PORT"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -cE "^rank [0-3] of 4 on node[12] master $(node_addr node1):[0-9]+\$" <<<"$output") -eq 4 ]]
    # the installed doctor checks the step on both nodes
    run timeout 60 srun --dist-train -N2 -n2 dist-train-doctor --timeout 10
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"dist-train-doctor: ok: all 2 ranks on 2 nodes checked in, nothing wrong"* ]]
}

@test "purge: nothing left in Slurm's plugin directory, plugstack.conf.d, the library path or the Python path" {
    local plugin_dir
    plugin_dir=$(dirname "$(dpkg -L slurm-dist-train | grep '/dist_train\.so$')")
    cluster_stop
    admin_leftovers "$SNIPPET"
    run purge_packages
    echo "$output"
    for p in "${PACKAGES[@]}"; do
        [[ -z $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -v "not-installed") ]]
    done
    [[ ! -e $plugin_dir/dist_train.so ]]
    [[ ! -e /usr/share/slurm-dist-train ]]
    [[ -z $(ldconfig -p | grep libdtshim) ]]
    [[ -z $(find /usr/lib /usr/include /usr/share/pkgconfig -name 'libdtshim*' -o -name 'dtshim.h' -o -name 'dtshim.pc' 2>/dev/null) ]]
    refute "$TORCH_PYTHON" -c 'import dtshim' 2>/dev/null
    # and Slurm on this node works as before: plain steps run with the same plugstack.conf
    "$MINICLUSTER" start --nodes 2 --plugstack "$BATS_FILE_TMPDIR/plugstack.conf" >&2
    removal_checked
}
