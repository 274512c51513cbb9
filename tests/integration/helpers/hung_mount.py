#!/usr/bin/python3
"""hung_mount.py DIR CMD...: run CMD with DIR a FUSE file system that never
answers (/dev/fuse opened and mounted, never read): every look-up under DIR
waits, as on a hung NFS or FUSE mount.  Run it inside `unshare -m
--propagation private`, so that the mount is this namespace's alone.  CMD
gets 60 s (exit 124 past that); closing the device then aborts the
connection, so that whatever still waits gets ENOTCONN, and DIR is
unmounted.  Exits with CMD's status."""
import os
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mnt, cmd = sys.argv[1], sys.argv[2:]
    os.makedirs(mnt, exist_ok=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    # -i: no mount.fuse helper, the kernel's own fuse type
    subprocess.run(["mount", "-i", "-t", "fuse", "-o",
                    f"fd={fd},rootmode=40000,user_id=0,group_id=0",
                    "dist-train-hung", mnt], pass_fds=[fd], check=True)
    try:
        rc = subprocess.run(cmd, timeout=60).returncode
    except subprocess.TimeoutExpired:
        rc = 124
    finally:
        os.close(fd)
        subprocess.run(["umount", "-l", mnt], check=False)
    sys.exit(rc)


if __name__ == "__main__":
    main()
