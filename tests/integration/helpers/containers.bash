# containers.bash - pyxis and enroot for container.bats, built at test time
# from their release archives into a directory of the test's own.
# shellcheck shell=bash

# thirdparty_dir: where the archives are (scripts/lib.sh says how it looks)
# shellcheck source=../../../scripts/lib.sh
source "$TOP/scripts/lib.sh"
# (PYXIS_ARCHIVE=pyxis-0.24.0.tar.gz runs the file against the current release)
PYXIS_ARCHIVE=${PYXIS_ARCHIVE:-pyxis-0.9.1.tar.gz}
ENROOT_ARCHIVE=enroot-4.1.2.tar.gz

# build_container_tools SRC DIR: enroot into DIR/enroot and pyxis into
# DIR/pyxis/spank_pyxis.so; the log in DIR/build.log.  enroot ships without
# its submodules (musl, makeself, linux-headers): it builds with glibc, and
# libbsd's strlcpy (glibc 2.36 has none), given FORCE_GLIBC, a makeself that
# only `enroot bundle` would run, and headers from the system.
build_container_tools() {
    local src=$1 dir=$2 e p
    local make_enroot=(make FORCE_GLIBC=1 "prefix=$dir/enroot" "LDLIBS=-l:libbsd.a -l:libbsd.so.0")
    mkdir -p "$dir/src"
    tar -xzf "$src/$ENROOT_ARCHIVE" -C "$dir/src" && tar -xzf "$src/$PYXIS_ARCHIVE" -C "$dir/src" || return 1
    e=$(echo "$dir"/src/enroot-*) p=$(echo "$dir"/src/pyxis-*)
    mkdir -p "$e/deps/makeself" "$e/deps/linux-headers"
    printf '#!/bin/sh\necho "makeself: not in this build of enroot" >&2\nexit 1\n' >"$e/deps/makeself/makeself.sh"
    chmod 755 "$e/deps/makeself/makeself.sh"
    # shellcheck disable=SC2016 # $(prefix) is make's
    printf 'install:\n\tmkdir -p $(prefix)/include\n' >"$e/deps/linux-headers/Makefile"
    {
        (cd "$e" && "${make_enroot[@]}" -j2 && "${make_enroot[@]}" install) &&
            (cd "$p" && make -j2) && mkdir -p "$dir/pyxis" && cp "$p/spank_pyxis.so" "$dir/pyxis/"
    } >"$dir/build.log" 2>&1 || { tail -n 20 "$dir/build.log" >&2; return 1; }
}

# configure_enroot DIR: enroot's configuration as a site's, for nodes that
# share one disk: each node's containers under DIR/data/NODE (the nodes'
# /tmp is memory), run-time files in the node's own /tmp; and PyTorch's hook
# enabled, as many sites do.
configure_enroot() {
    local dir=$1 conf=$1/enroot/etc/enroot
    mkdir -p "$dir/data"
    chmod 1777 "$dir/data"
    cat >"$conf/enroot.conf" <<EOF
ENROOT_RUNTIME_PATH /tmp/enroot-run-\$(id -u)
ENROOT_CACHE_PATH /tmp/enroot-cache-\$(id -u)
ENROOT_DATA_PATH $dir/data/\$(hostname)-\$(id -u)
ENROOT_TEMP_PATH /tmp
EOF
    install -m 755 "$dir"/src/enroot-*/conf/hooks/extra/50-slurm-pytorch.sh "$conf/hooks.d/"
}

# enroot_net_namespace DIR: pyxis 0.24 asks for --container-unshare=net with
# ENROOT_UNSHARE_NET=y, which enroot 4.1.2, the release here, ignores (4.2
# added it), and pyxis then refuses the step.  For root with
# ENROOT_ALLOW_SUPERUSER, whose containers get no user namespace, enroot start
# (DIR's) is given what 4.2 does itself: a
# network namespace of its own, loopback up (util-linux's unshare, which
# keeps the pid pyxis waits on).  Every other call passes through.
enroot_net_namespace() {
    local bin=$1/enroot/bin ip
    ip=$(command -v ip) || { echo "no ip (iproute2) here" >&2; return 1; }
    [[ -e $bin/enroot.real ]] || mv "$bin/enroot" "$bin/enroot.real" || return 1
    cat >"$bin/enroot" <<EOF
#!/bin/sh
# enroot 4.2's ENROOT_UNSHARE_NET for root, on enroot 4.1.2 (tests/integration/helpers/containers.bash)
if [ "\${ENROOT_UNSHARE_NET:-}" = y ] && [ "\$1" = start ] && [ "\$(id -u)" = 0 ]; then
    exec unshare --net -- sh -c '$ip link set lo up && exec "\$0" "\$@"' "$bin/enroot.real" "\$@"
fi
exec "$bin/enroot.real" "\$@"
EOF
    chmod 755 "$bin/enroot"
}
