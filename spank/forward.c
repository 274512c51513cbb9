/* forward.c - lines for the step's stderr, which slurmstepd forwards to srun,
 * written so that nothing can block slurmstepd on them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "dist_train.h"

/* write(2) that never raises SIGPIPE in slurmstepd: a pipe whose reader
 * is gone gives EPIPE only (the signal, directed at this thread, is taken
 * back while blocked). */
static ssize_t write_no_sigpipe (int fd, const void *buf, size_t len)
{
    static const struct timespec zero = {0, 0};
    sigset_t pipe_set, old;
    ssize_t n;
    int saved;

    sigemptyset (&pipe_set);
    sigaddset (&pipe_set, SIGPIPE);
    if (pthread_sigmask (SIG_BLOCK, &pipe_set, &old) != 0)
        return -1;
    n = write (fd, buf, len);
    saved = errno;
    if (n < 0 && saved == EPIPE && !sigismember (&old, SIGPIPE))
        (void) sigtimedwait (&pipe_set, NULL, &zero);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    errno = saved;
    return n;
}

/* Where the line goes: slurmstepd's fd 2, which is task 0's stderr pipe (or
 * the file, FIFO or terminal of --error or --pty), shared with the task and
 * blocking.  A write there may wait forever (srun stopped while task 0
 * floods the pipe, a FIFO nobody reads), and slurmstepd would then never
 * reap its tasks: the node drains.  So the line goes out only if it fits at
 * once, or not at all (srun still reports the task, and slurmd's log has the
 * line).  And only to the pipe slurmstepd made: what fd 2 is comes from the
 * name of its link in /proc, which the kernel tells without asking the file.
 * A file of the user's can block even fstat and poll, or the write after a
 * poll that said there is room: a FUSE mount that never answers, a hung NFS
 * mount, a terminal whose other end the user holds still.  The pipe is
 * written through an open file of our own that does not block (the task's
 * stays as it is): a write of at most PIPE_BUF bytes then goes whole or
 * fails, whoever else writes.  Returns whether it went out. */
bool dist_train_stderr_line (const char *msg, size_t len)
{
    char target[32];
    ssize_t n;
    bool written;
    int fd;

    if (len > PIPE_BUF)
        return false;
    n = readlink ("/proc/self/fd/2", target, sizeof (target) - 1);
    if (n < 0)
        return false;
    target[n] = '\0';
    if (strncmp (target, "pipe:[", 6) != 0)
        return false;
    /* (ENXIO when the pipe has no reader) */
    fd = open ("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return false;
    written = write_no_sigpipe (fd, msg, len) == (ssize_t) len;
    close (fd);
    return written;
}

/* The step's stderr is a pipe that slurmstepd's I/O thread forwards to
 * srun.  srun learns of the failure from the task's exit message, which
 * slurmstepd sends after this callback, and once it has had the step
 * killed it drops output still on its way.  So after the line, wait until
 * the I/O thread has read it (FIONREAD on a pipe counts the bytes not yet
 * read; at most 0.5 s), then 0.1 s for it to reach srun: without the wait
 * the line was lost most of the time (doc/decisions.md).  Only
 * ioctl and sleeps: nothing here can block on the pipe. */
void dist_train_wait_forwarded (int fd)
{
    int pending, i;

    for (i = 0; i < 100; i++) {
        if (ioctl (fd, FIONREAD, &pending) < 0 || pending <= 0)
            break;
        usleep (5000);
    }
    usleep (100000);
}
