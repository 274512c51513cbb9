#!/bin/sh
# postrm.sh - what removing the plugin package does to plugstack.conf.d, the
# same for both kinds of package: Debian runs it as the postrm (remove,
# purge), RPM as its postun scriptlet (0 on erase; configure copies it into
# the spec).
#
# The admin enabled the plugin with a link to the packaged snippet, absolute or
# relative (ln -s ../../../usr/share/...); the snippet is gone now.  Remove
# every link that resolved to it, wherever the link was written from, and name
# what else is left that the admin must look at:
#  - a copy of the snippet that still loads dist_train.so: its "required"
#    line makes every srun, sbatch and slurmstepd on the node fail;
#  - any other dangling link: Slurm skips a missing file, so it breaks
#    nothing today, but it comes back to life with whatever is installed there
#    next, unseen.
# Resolving needs GNU readlink -m (coreutils), which both systems have.
# (No percent signs in this file: RPM would read them as macros.)
set -e

snippet=/usr/share/slurm-dist-train/dist-train.conf
confd=/etc/slurm/plugstack.conf.d

case "$1" in
remove | purge | 0)
	want=$(readlink -m -- "$snippet")
	for f in "$confd"/*; do
		if [ -L "$f" ] && [ "$(readlink -m -- "$f")" = "$want" ]; then
			rm -f -- "$f"
			echo "slurm-dist-train: removed $f, which enabled the plugin" >&2
		elif [ -L "$f" ] && [ ! -e "$f" ]; then
			echo "slurm-dist-train: $f is a dangling link (to $(readlink -- "$f")): Slurm skips it, but remove it before something else is installed there" >&2
		elif [ -f "$f" ] && grep -qs '^[[:space:]]*\(required\|optional\)[[:space:]].*/dist_train\.so' "$f"; then
			echo "slurm-dist-train: $f still loads dist_train.so, which is gone: remove or comment out that line, or srun fails" >&2
		fi
	done
	;;
esac

# (debhelper's additions go here in the Debian package; a comment to RPM)
#DEBHELPER#

exit 0
