/* failfast.c - when one task of a training step fails, say which, once.
 *
 * A rank that dies leaves the others blocked in a collective for hours.  srun
 * stops the step: the plugin armed srun's kill-on-bad-exit (local.c), so srun
 * has Slurm kill every rank as soon as a task exits non-zero or is killed by
 * a signal, with one RPC whatever the node count.  Here, in slurmstepd, the
 * node that saw the failure names the rank, its node and how it ended, on the
 * step's stderr (which srun shows), and makes no RPC: calls to slurmctld from
 * slurmstepd deadlock on new Slurm and would multiply with the node count.
 * Each node speaks at most once per step; a task that exits 0 early is not a
 * failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dist_train.h"

static bool reported; /* this node already named a failed rank */

static void describe (int status, char *buf, size_t size)
{
    if (WIFEXITED (status)) {
        snprintf (buf, size, "exited with status %d", WEXITSTATUS (status));
    } else if (WIFSIGNALED (status)) {
        const char *name = sigabbrev_np (WTERMSIG (status));
        snprintf (buf, size, "was killed by signal %d (SIG%s)%s", WTERMSIG (status),
                  name != NULL ? name : "?", WCOREDUMP (status) ? ", core dumped" : "");
    } else {
        snprintf (buf, size, "ended with wait status 0x%x", (unsigned) status);
    }
}

/* write(2) that never raises SIGPIPE in slurmstepd: a pipe whose reader
 * is gone gives EPIPE only (the signal, directed at this thread, is taken
 * back while blocked). */
static ssize_t write_no_sigpipe (int fd, const void *buf, size_t len)
{
    static const struct timespec zero = { 0, 0 };
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
 * the file or FIFO of --error), shared with the task and blocking.  A write
 * there may wait forever (srun stopped while task 0 floods the pipe, a FIFO
 * nobody reads), and slurmstepd would then never reap its tasks: the node
 * drains.  So the line goes out only if it fits at once, or not at all (srun
 * still reports the task).  For a pipe, through an open file of our own that
 * does not block (the task's stays as it is): a write of at most PIPE_BUF
 * bytes then goes whole or fails, whoever else writes.  Elsewhere, when a
 * zero-timeout poll says it is writable.  Returns whether it went out. */
static bool write_at_once (const char *msg, size_t len)
{
    struct pollfd pfd = { .fd = STDERR_FILENO, .events = POLLOUT };
    struct stat sb;
    bool written;
    int fd;

    if (len > PIPE_BUF || fstat (STDERR_FILENO, &sb) < 0)
        return false;
    if (S_ISFIFO (sb.st_mode)) {
        /* (ENXIO for a FIFO that no one has open for reading) */
        fd = open ("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            return false;
        written = write_no_sigpipe (fd, msg, len) == (ssize_t) len;
        close (fd);
        return written;
    }
    if (poll (&pfd, 1, 0) != 1 || (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
        || !(pfd.revents & POLLOUT))
        return false;
    return write_no_sigpipe (STDERR_FILENO, msg, len) == (ssize_t) len;
}

/* The step's stderr is a pipe that slurmstepd's I/O thread forwards to
 * srun.  srun learns of the failure from the task's exit message, which
 * slurmstepd sends after this callback, and once it has had the step
 * killed it drops output still on its way.  So after the line, wait until
 * the I/O thread has read it (FIONREAD on a pipe counts the bytes not yet
 * read; at most 0.5 s), then 0.1 s for it to reach srun (measured: without
 * the wait the line was lost in 4 runs of 5, with it in 0 of 10).  Only
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

/* Whether a task was stopped rather than failed.  SIGTERM is how Slurm
 * stops a step (this fail fast, scancel, a time limit, preemption; Slurm
 * 26.05 also sends it to the other tasks when one fails), and a shell that
 * runs the rank's program exits 128+SIGTERM when it is stopped (bash and sh
 * for a child killed by it; the usual wrapper that traps TERM, passes it on
 * and exits 143).  Naming those ranks would only bury the one that failed;
 * srun still lists them. */
static bool stopped_by_slurm (int status)
{
    if (WIFSIGNALED (status))
        return WTERMSIG (status) == SIGTERM;
    return WIFEXITED (status) && WEXITSTATUS (status) == 128 + SIGTERM;
}

int dist_train_remote_task_exit (spank_t sp)
{
    const struct dist_step *st = &dist_train.step;
    char how[96], msg[320];
    uint32_t rank;
    int status, n;

    /* srun armed fail fast for this step, or nothing stops it */
    if (!dist_train.active || reported || !dist_train.have_srun || !dist_train.srun.fail_fast)
        return 0;
    if (spank_get_item (sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS)
        return 0;
    /* exit 0 is no failure */
    if ((WIFEXITED (status) && WEXITSTATUS (status) == 0) || stopped_by_slurm (status))
        return 0;
    reported = true;
    describe (status, how, sizeof (how));
    n = snprintf (msg, sizeof (msg),
                  "%s: rank %lu on %s %s: stopping every rank of step %lu.%lu "
                  "(--dist-train=fail_fast=off lets the others run)\n",
                  PLUGIN_NAME, (unsigned long) rank, dist_train.node_name, how,
                  (unsigned long) st->job_id, (unsigned long) st->step_id);
    if (n <= 0 || (size_t) n >= sizeof (msg))
        return 0;
    /* slurmd's log, without the newline */
    slurm_info ("%.*s", n - 1, msg);
    /* The step's stderr, at once: slurmstepd's own log to it is buffered,
     * and a node whose last task just ended closes it before a flush. */
    if (!write_at_once (msg, (size_t) n)) {
        slurm_verbose ("%s: the step's stderr takes no line now; srun reports the task",
                       PLUGIN_NAME);
        return 0;
    }
    dist_train_wait_forwarded (STDERR_FILENO);
    return 0;
}
