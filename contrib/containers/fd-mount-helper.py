#!/usr/bin/env python3
"""fd-mount-helper.py MOUNTPOINT UID GID -- zarrfs [options] STORE

The privileged half of a descriptor hand-off (zarrfs(1) CONTAINERS): open /dev/fuse, mount it at
MOUNTPOINT with mount(2) for UID/GID, then run the command after "--" with the descriptor as
/dev/fd/N appended, as UID/GID and without capabilities. Unmounts when the command ends. The same
steps as tests/integration/test_fd_mount.py, which the test suite runs."""
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys

MS_NOSUID, MS_NODEV = 2, 4
MNT_DETACH = 2


def main():
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.exit(__doc__)
    mnt, uid, gid, cmd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5:]
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    opts = "fd=%d,rootmode=40000,user_id=%d,group_id=%d,allow_other" % (fd, uid, gid)
    if libc.mount(b"zarrfs", mnt.encode(), b"fuse.zarrfs", MS_NOSUID | MS_NODEV,
                  opts.encode()) != 0:
        sys.exit("mount %s: %s" % (mnt, os.strerror(ctypes.get_errno())))

    def drop():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    try:
        proc = subprocess.Popen(cmd + ["-f", "/dev/fd/%d" % fd], pass_fds=(fd,), preexec_fn=drop)
        os.close(fd)
        # a SIGTERM or SIGINT for the helper goes to zarrfs; the helper unmounts once it ends
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda s, f: proc.send_signal(s))
        status = proc.wait()
    finally:
        libc.umount2(mnt.encode(), MNT_DETACH)
    sys.exit(status)


if __name__ == "__main__":
    main()
