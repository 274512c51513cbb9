#!/usr/bin/env bats
# rpm.bats - the RPM spec as `make dist`'s tarball ships it (slurm-dist-train.spec):
# rpmspec -P reads it, `rpmbuild -ta --nodeps` builds the four packages from the
# tarball, the plugin requires the Slurm release it was built against, and %files is
# exactly what `make install` installs: rpmbuild stops on a file installed but not
# packaged and on one packaged but not installed, shown here by editing %files.
# This is Debian's rpm (the spec's own macros fill in what a RHEL system's
# python-rpm-macros would); no cluster is needed.

load helpers/common

setup_file() {
    command -v rpmbuild >/dev/null && command -v rpmspec >/dev/null || {
        echo "no rpmbuild or rpmspec: install Debian's rpm package (scripts/deps does)" >&2
        return 1
    }
    export WORK=$BATS_FILE_TMPDIR
    export VERSION
    VERSION=$(sed -n 's/^PACKAGE_VERSION = //p' "$TOP/Makefile")
    [[ -n $VERSION ]] || { echo "no PACKAGE_VERSION in $TOP/Makefile: build first (scripts/build)" >&2; return 1; }
    export TARBALL=$WORK/src/slurm-dist-train-$VERSION.tar.gz
    mkdir -p "$WORK/src"
    timeout 300 make -C "$TOP" -s dist >"$WORK/dist.log" 2>&1 || { tail -n 30 "$WORK/dist.log" >&2; return 1; }
    mv -- "$TOP/slurm-dist-train-$VERSION.tar.gz" "$TARBALL"
    tar -xzf "$TARBALL" -C "$WORK/src" "slurm-dist-train-$VERSION/slurm-dist-train.spec"
    export SPEC=$WORK/src/slurm-dist-train-$VERSION/slurm-dist-train.spec
    export RELEASE NEXT
    RELEASE=$(slurm_release)
    NEXT=$(next_release "$RELEASE")
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

@test "rpmspec -P: the tarball's spec, four packages, the plugin pinned to this Slurm's release" {
    run timeout 60 rpmspec -P "$SPEC"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    grep -q "^Version: *$VERSION\$" <<<"$output"
    grep -q "^Requires: *slurm >= $RELEASE\$" <<<"$output"
    grep -q "^Requires: *slurm < $NEXT\$" <<<"$output"
    [[ $(grep -c '^%files' <<<"$output") -eq 4 ]]
    for p in libdtshim libdtshim-devel python3-dtshim; do
        grep -q "^%package -n $p\$" <<<"$output"
    done
}

@test "rpmbuild -ta --nodeps from make dist's tarball: the four RPMs, what each holds and requires" {
    local rpms=$WORK/ok/RPMS libdir plugin_rpm files
    run rpmbuild_in "$WORK/ok" -ta "$TARBALL"
    [ "$status" -eq 0 ] || { tail -n 40 <<<"$output"; false; }
    libdir=$(rpm --eval '%{_libdir}')
    plugin_rpm=$(echo "$rpms"/*/slurm-dist-train-"$VERSION"-*.rpm)
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
    for f in "$libdir/slurm/dist_train.so" /usr/bin/dist-train-doctor /usr/bin/dist-train-plan \
        /usr/bin/dist-train-restart /usr/share/slurm-dist-train/dist-train.conf \
        /usr/share/man/man8/dist-train.8 /usr/share/man/man1/dist-train-doctor.1 \
        /usr/share/man/man1/dist-train-plan.1 /usr/share/man/man1/dist-train-restart.1 \
        /usr/lib/tmpfiles.d/slurm-dist-train.conf /usr/share/licenses/slurm-dist-train-"$VERSION"/LICENSE; do
        has_file "$files" "$f"
    done
    # nothing in /etc: the snippet is enabled by the admin, and it loads this package's plugin
    refute grep -q '^/etc/' <<<"$files"
    (cd "$WORK" && rpm2cpio "$plugin_rpm" | cpio -i --quiet --to-stdout ./usr/share/slurm-dist-train/dist-train.conf) >"$WORK/snippet"
    [[ $(grep -c "^required $libdir/slurm/dist_train.so\$" "$WORK/snippet") -eq 1 ]]

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
    local dir=$WORK/edit
    mkdir -p "$dir"
    # an installed page that %files does not name
    sed '/man1\/dist-train-doctor\.1/d' "$SPEC" >"$dir/left-out.spec"
    refute cmp -s "$SPEC" "$dir/left-out.spec"
    run rpmbuild_in "$WORK/left-out" -bb "$dir/left-out.spec"
    [ "$status" -ne 0 ]
    grep -q "Installed (but unpackaged) file(s) found" <<<"$output" || { tail -n 20 <<<"$output"; false; }
    grep -q "/man1/dist-train-doctor\.1" <<<"$output"
    # a file that make install does not install
    sed 's|^%{_bindir}/dist-train-plan$|&\n%{_bindir}/dist-train-nothing|' "$SPEC" >"$dir/extra.spec"
    grep -q '^%{_bindir}/dist-train-nothing$' "$dir/extra.spec"
    run rpmbuild_in "$WORK/extra" -bb "$dir/extra.spec"
    [ "$status" -ne 0 ]
    grep -q "File not found.*/usr/bin/dist-train-nothing" <<<"$output" || { tail -n 20 <<<"$output"; false; }
}
