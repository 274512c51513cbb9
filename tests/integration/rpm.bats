#!/usr/bin/env bats
# rpm.bats - the RPM spec as `make dist`'s tarball ships it (slurm-dist-train.spec),
# against a Slurm as SchedMD's RPMs install it: slurm.pc under a lib64 (a fake one here,
# naming this machine's headers), Slurm's plugins in its libdir/slurm. rpmspec -P reads
# the spec, `rpmbuild -ta --nodeps` builds the four packages from the tarball, the
# plugin requires the Slurm release it was built against and its Release carries it,
# and %files is exactly what `make install` installs: rpmbuild stops on a file installed
# but not packaged and on one packaged but not installed, shown here by editing %files.
# Last, the plugin's package is installed (rpm -i, a database of its own), enabled with
# a relative link and used by the test cluster, then erased: the link goes with it, and
# srun works on the node as before.
# This is Debian's rpm (the spec's own macros fill in what a RHEL system's
# python-rpm-macros would).

load helpers/common

setup_file() {
    if ! command -v rpmbuild >/dev/null || ! command -v rpmspec >/dev/null; then
        echo "no rpmbuild or rpmspec: install Debian's rpm package (scripts/deps does)" >&2
        return 1
    fi
    export WORK=$BATS_FILE_TMPDIR
    export VERSION
    VERSION=$(sed -n 's/^PACKAGE_VERSION = //p' "$TOP/Makefile")
    [[ -n $VERSION ]] || { echo "no PACKAGE_VERSION in $TOP/Makefile: build first (scripts/build)" >&2; return 1; }
    export TARBALL=$WORK/src/slurm-dist-train-$VERSION.tar.gz
    mkdir -p "$WORK/src"
    # (make dist writes into the checkout, and scripts/packages may run beside,
    # for install.bats: the tarball is taken away under the lock they share)
    local lock
    exec {lock}>>"$TOP/.make-dist.lock"
    timeout 900 flock "$lock" || { echo "another make dist holds $TOP/.make-dist.lock" >&2; return 1; }
    timeout 300 make -C "$TOP" -s dist >"$WORK/dist.log" 2>&1 || { tail -n 30 "$WORK/dist.log" >&2; return 1; }
    mv -- "$TOP/slurm-dist-train-$VERSION.tar.gz" "$TARBALL"
    exec {lock}>&-
    tar -xzf "$TARBALL" -C "$WORK/src" "slurm-dist-train-$VERSION/slurm-dist-train.spec"
    export SPEC=$WORK/src/slurm-dist-train-$VERSION/slurm-dist-train.spec
    export RELEASE NEXT
    RELEASE=$(slurm_release)
    NEXT=$(next_release "$RELEASE")
    # SchedMD's layout under a prefix of the test's own (removed at the end): slurm.pc
    # in PREFIX/lib64/pkgconfig names libdir PREFIX/lib64, so the plugin goes to
    # PREFIX/lib64/slurm, which is nothing rpm's %{_libdir} would give. Its headers are
    # this machine's, and so is its version.
    export PREFIX=/opt/slurm-dist-train-rpmtest PKG_CONFIG_PATH=$WORK/lib64/pkgconfig
    export RPMDB=$WORK/rpmdb
    export LINK=/etc/slurm/plugstack.conf.d/zz-dist-train.conf
    export COPY=/etc/slurm/plugstack.conf.d/dt-rpmtest-copy.conf
    export DANGLING=/etc/slurm/plugstack.conf.d/dt-rpmtest-dangling.conf
    [[ ! -e $PREFIX ]] || { echo "$PREFIX exists: a run that was killed left it; remove it" >&2; return 1; }
    fake_slurm_pc "$WORK/lib64/pkgconfig" "$PREFIX/lib64" "$(slurm_header_version)"
}

# fake_slurm_pc DIR LIBDIR VERSION [INCLUDEDIR]: slurm.pc as SchedMD's slurm-devel
# installs it (headers in /usr/include unless INCLUDEDIR).
fake_slurm_pc() {
    mkdir -p "$1"
    # shellcheck disable=SC2016 # ${includedir} and ${libdir} are pkg-config's
    printf '%s\n' "libdir=$2" "includedir=${4:-/usr/include}" '' 'Name: slurm' \
        'Description: Slurm Workload Manager' "Version: $3" \
        'Cflags: -I${includedir}' 'Libs: -L${libdir} -lslurm' >"$1/slurm.pc"
}

teardown_file() {
    local rc=0
    if [[ -n ${RPMDB:-} ]] && rpm -q --dbpath "$RPMDB" slurm-dist-train >/dev/null 2>&1; then
        timeout 60 rpm -e --nodeps --dbpath "$RPMDB" slurm-dist-train >&2 || rc=1
    fi
    if [[ -n ${LINK:-} ]]; then
        "$MINICLUSTER" stop >/dev/null 2>&1 || true
        rm -f -- "$LINK" "$COPY" "$DANGLING"
    fi
    [[ -z ${PREFIX:-} || ! -e $PREFIX ]] || rm -rf --one-file-system -- "$PREFIX"
    return $rc
}

# rpmbuild_in TOPDIR ARGS...: rpmbuild with its own tree, no %check (make check ran
# already in this run), sources from the tarball's directory.
rpmbuild_in() {
    local topdir=$1
    shift
    timeout 600 rpmbuild --nodeps --without check --define "_topdir $topdir" \
        --define "_sourcedir $WORK/src" "$@" 2>&1
}

# has_file LIST PATH: PATH is a line of LIST; a manual page may be compressed (rpm's
# brp-compress does it where the distribution's macros ask, as Debian 13's do).
has_file() {
    local re=${2//./\\.}
    [[ $2 == /usr/share/man/* ]] && re+='(\.(gz|bz2|xz|zst))?'
    grep -qxE "$re" <<<"$1" || { echo "not in the package: $2"; return 1; }
}

@test "rpmspec -P: the tarball's spec, four packages, the plugin pinned to slurm.pc's release" {
    run timeout 60 rpmspec -P "$SPEC"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    grep -q "^Version: *$VERSION\$" <<<"$output"
    grep -q "^Release: *1\.slurm$RELEASE\$" <<<"$output"
    grep -q "^Requires: *slurm >= $RELEASE\$" <<<"$output"
    grep -q "^Requires: *slurm < $NEXT\$" <<<"$output"
    grep -q -- "--with-slurm-plugindir=$PREFIX/lib64/slurm " <<<"$output"
    # build dependencies by pkg-config module: OpenPMIx's own spec makes no pmix-devel
    for m in slurm pmix hwloc libcrypto; do
        grep -q "^BuildRequires: *pkgconfig($m)" <<<"$output"
    done
    refute grep -Eq '^BuildRequires: *(slurm|pmix|hwloc)-devel' <<<"$output"
    # the removal scriptlet is the Debian package's postrm
    diff <(sed -n '/^%postun$/,/^exit 0$/p' <<<"$output" | sed 1d) "$TOP/etc/postrm.sh"
    # another release's slurm.pc gives another pin
    fake_slurm_pc "$WORK/other/pkgconfig" /usr/lib64 24.11.6
    run env PKG_CONFIG_PATH="$WORK/other/pkgconfig" timeout 60 rpmspec -P "$SPEC"
    grep -q "^Release: *1\.slurm24\.11\$" <<<"$output"
    grep -q "^Requires: *slurm < 24\.12\$" <<<"$output"
    grep -q -- "--with-slurm-plugindir=/usr/lib64/slurm " <<<"$output"
    # a Slurm without slurm.pc (before 24.05): the release given, slurm-devel's headers
    run env PKG_CONFIG_PATH="$WORK/none" timeout 60 rpmspec -P --define 'slurm_version 23.11' "$SPEC"
    grep -q "^Release: *1\.slurm23\.11\$" <<<"$output"
    grep -q "^BuildRequires: *slurm-devel\$" <<<"$output"
    refute grep -q "^BuildRequires: *pkgconfig(slurm)" <<<"$output"
    [[ $(grep -c '^%files' <<<"$output") -eq 4 ]]
    for p in libdtshim libdtshim-devel python3-dtshim; do
        grep -q "^%package -n $p\$" <<<"$output"
    done
}

@test "rpmbuild -ta --nodeps from make dist's tarball: the four RPMs, what each holds and requires" {
    local rpms=$WORK/ok/RPMS libdir plugin_rpm files
    run rpmbuild_in "$WORK/ok" -ta "$TARBALL"
    [ "$status" -eq 0 ] || { tail -n 40 <<<"$output"; false; }
    # the spec names the plugin directory it found in slurm.pc, and configure says it used it
    grep -Fq "plugin directory ..... $PREFIX/lib64/slurm (--with-slurm-plugindir)" <<<"$output"
    libdir=$(rpm --eval '%{_libdir}')
    plugin_rpm=$(echo "$rpms"/*/slurm-dist-train-"$VERSION"-1.slurm"$RELEASE"*.rpm)
    [[ -f $plugin_rpm ]]
    for p in libdtshim libdtshim-devel python3-dtshim; do
        [[ -f $(echo "$rpms"/*/"$p-$VERSION"-*.rpm) ]]
    done
    # (and, where rpm makes them by default, as 4.20 does, the debug symbols)
    find "$rpms" -name '*.rpm'
    [[ $(find "$rpms" -name '*.rpm' ! -name '*-debuginfo-*' ! -name '*-debugsource-*' | wc -l) -eq 4 ]]

    # the plugin: this Slurm's release and not the next, the plugin, the tools, the pages
    run rpm -qp --requires "$plugin_rpm"
    echo "$output"
    grep -qx "slurm >= $RELEASE" <<<"$output"
    grep -qx "slurm < $NEXT" <<<"$output"
    files=$(rpm -qlp "$plugin_rpm")
    for f in "$PREFIX/lib64/slurm/dist_train.so" /usr/bin/dist-train-doctor /usr/bin/dist-train-plan \
        /usr/bin/dist-train-restart /usr/share/slurm-dist-train/dist-train.conf \
        /usr/share/man/man8/dist-train.8 /usr/share/man/man1/dist-train-doctor.1 \
        /usr/share/man/man1/dist-train-plan.1 /usr/share/man/man1/dist-train-restart.1 \
        /usr/lib/tmpfiles.d/slurm-dist-train.conf /usr/share/licenses/slurm-dist-train-"$VERSION"/LICENSE; do
        has_file "$files" "$f"
    done
    # nothing in /etc: the snippet is enabled by the admin, and it loads this package's plugin
    refute grep -q '^/etc/' <<<"$files"
    (cd "$WORK" && rpm2cpio "$plugin_rpm" | cpio -i --quiet --to-stdout ./usr/share/slurm-dist-train/dist-train.conf) >"$WORK/snippet"
    [[ $(grep -c "^required $PREFIX/lib64/slurm/dist_train.so\$" "$WORK/snippet") -eq 1 ]]

    # the library, its development files and the module
    rpm -qlp "$rpms"/*/libdtshim-"$VERSION"-*.rpm | grep -qx "$libdir/libdtshim.so.0"
    files=$(rpm -qlp "$rpms"/*/libdtshim-devel-"$VERSION"-*.rpm)
    for f in /usr/include/dtshim.h "$libdir/libdtshim.so" "$libdir/pkgconfig/dtshim.pc" /usr/share/man/man3/dtshim.3; do
        has_file "$files" "$f"
    done
    rpm -qlp "$rpms"/*/python3-dtshim-"$VERSION"-*.rpm | grep -q '/site-packages/dtshim\.py$'
    rpm -qp --requires "$rpms"/*/python3-dtshim-"$VERSION"-*.rpm | grep -q "^libdtshim(.*) = $VERSION-"
}

@test "%files is what make install installs: a file left out of it, or one too many, stops the build" {
    # (a build of the whole tree, for a check of the spec that is the same everywhere)
    [[ -z ${DIST_TRAIN_GENERATION_ONLY:-} ]] ||
        skip "the spec and make install are the same in every Slurm generation: scripts/check runs this on the host"
    local dir=$WORK/edit
    mkdir -p "$dir"
    # The tree built and installed once (-bi); each edited spec differs only in
    # %files, so it goes straight to packaging that install (-bb --short-circuit),
    # where rpmbuild compares %files with it.
    run rpmbuild_in "$WORK/files" -bi "$SPEC"
    [ "$status" -eq 0 ] || { tail -n 20 <<<"$output"; false; }
    # an installed page that %files does not name
    sed '/man1\/dist-train-doctor\.1/d' "$SPEC" >"$dir/left-out.spec"
    refute cmp -s "$SPEC" "$dir/left-out.spec"
    run rpmbuild_in "$WORK/files" -bb --short-circuit "$dir/left-out.spec"
    [ "$status" -ne 0 ]
    grep -q "Installed (but unpackaged) file(s) found" <<<"$output" || { tail -n 20 <<<"$output"; false; }
    grep -q "/man1/dist-train-doctor\.1" <<<"$output"
    # a file that make install does not install
    sed 's|^%{_bindir}/dist-train-plan$|&\n%{_bindir}/dist-train-nothing|' "$SPEC" >"$dir/extra.spec"
    grep -q '^%{_bindir}/dist-train-nothing$' "$dir/extra.spec"
    run rpmbuild_in "$WORK/files" -bb --short-circuit "$dir/extra.spec"
    [ "$status" -ne 0 ]
    grep -q "File not found.*/usr/bin/dist-train-nothing" <<<"$output" || { tail -n 20 <<<"$output"; false; }
}

@test "configure takes the plugin directory and the include path from slurm.pc, says so, and refuses another Slurm's" {
    # (two runs of configure against a made-up slurm.pc: what it checks is the same
    # for every Slurm, whose own build the lane's and rpmbuild's configure check)
    [[ -z ${DIST_TRAIN_GENERATION_ONLY:-} ]] ||
        skip "configure reads slurm.pc the same way in every Slurm generation: scripts/check runs this on the host"
    local src=$WORK/configure
    mkdir -p "$src"
    tar -xzf "$TARBALL" -C "$src" --strip-components=1
    # Slurm under a prefix: its headers where slurm.pc says, not in /usr/include
    mkdir -p "$WORK/prefixed/include"
    cp -r /usr/include/slurm "$WORK/prefixed/include/"
    fake_slurm_pc "$WORK/prefixed/lib64/pkgconfig" "$PREFIX/lib64" "$(slurm_header_version)" "$WORK/prefixed/include"
    run bash -c "cd '$src' && PKG_CONFIG_PATH='$WORK/prefixed/lib64/pkgconfig' timeout 300 ./configure 2>&1"
    [ "$status" -eq 0 ] || { tail -n 30 <<<"$output"; false; }
    grep -Fq "plugin directory ..... $PREFIX/lib64/slurm (slurm.pc, libdir $PREFIX/lib64)" <<<"$output" ||
        { grep 'plugin directory' <<<"$output"; false; }
    grep -Fq "Slurm headers ........ $(slurm_header_version) -I$WORK/prefixed/include" <<<"$output" ||
        { grep 'Slurm headers' <<<"$output"; false; }
    grep -q "^checking that slurm.pc ($(slurm_header_version)) is the Slurm of the headers... yes$" <<<"$output"
    # a slurm.pc of another release than the headers: the packages would require the wrong one
    fake_slurm_pc "$WORK/mismatch/pkgconfig" /usr/lib64 99.01.0
    run bash -c "cd '$src' && PKG_CONFIG_PATH='$WORK/mismatch/pkgconfig' timeout 300 ./configure 2>&1"
    [ "$status" -ne 0 ]
    grep -q "error: slurm.pc says Slurm 99.01.0, but slurm/slurm_version.h is $(slurm_header_version): they come from different Slurm installations" <<<"$output" ||
        { tail -n 5 <<<"$output"; false; }
}

@test "rpm -i, enabled with a relative link, a step on it; rpm -U keeps the link; rpm -e removes it, names what is left, and srun works" {
    local plugin_rpm FORCE_DEBIAN=()
    plugin_rpm=$(echo "$WORK"/ok/RPMS/*/slurm-dist-train-"$VERSION"-*.rpm)
    # Debian 12's rpm refuses to install without it; 13's has no such option
    if rpm --help | grep -q -- '--force-debian'; then FORCE_DEBIAN=(--force-debian); fi
    [[ -f $plugin_rpm ]]
    [[ -d /etc/slurm/plugstack.conf.d ]]
    mkdir -p "$RPMDB"
    run timeout 120 rpm -i --nodeps "${FORCE_DEBIAN[@]}" --dbpath "$RPMDB" "$plugin_rpm"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [[ -f $PREFIX/lib64/slurm/dist_train.so ]]
    # enabled as an admin may do it: a link relative to plugstack.conf.d
    ln -sfn ../../../usr/share/slurm-dist-train/dist-train.conf "$LINK"
    [[ -f $LINK ]]
    printf 'include /etc/slurm/plugstack.conf.d/*.conf\n' >"$WORK/plugstack.conf"
    "$MINICLUSTER" stop >/dev/null 2>&1 || true
    "$MINICLUSTER" start --nodes 2 --plugstack "$WORK/plugstack.conf" >&2
    eval "$("$MINICLUSTER" env)"
    # shellcheck disable=SC2016 # each task expands its own variables
    run timeout 60 srun --dist-train -N2 -n2 bash -c 'echo "rank $RANK of $WORLD_SIZE"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $(grep -c '^rank [01] of 2$' <<<"$output") -eq 2 ]]

    # an upgrade (here: the same package again) keeps the admin's link
    run timeout 120 rpm -U --replacepkgs --nodeps "${FORCE_DEBIAN[@]}" --dbpath "$RPMDB" "$plugin_rpm"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [[ -L $LINK && -f $LINK ]]

    admin_leftovers /usr/share/slurm-dist-train/dist-train.conf
    run timeout 120 rpm -e --nodeps --dbpath "$RPMDB" slurm-dist-train
    echo "$output"
    [ "$status" -eq 0 ]
    [[ ! -e $PREFIX/lib64/slurm/dist_train.so && ! -e /usr/share/slurm-dist-train ]]
    removal_checked
}
