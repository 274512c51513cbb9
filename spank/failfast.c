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
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
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

/* The step's stderr is a pipe that slurmstepd's I/O thread forwards to
 * srun.  srun learns of the failure from the task's exit message, which
 * slurmstepd sends after this callback, and once it has had the step
 * killed it drops output still on its way.  So the line goes first: wait
 * until the I/O thread has read it (FIONREAD on a pipe counts the bytes not
 * yet read; at most 0.5 s), then 0.1 s for it to reach srun (measured:
 * without the wait the line was lost in 4 runs of 5, with it in 0 of 10). */
static void wait_until_forwarded (int fd)
{
    int pending, i;

    for (i = 0; i < 100; i++) {
        if (ioctl (fd, FIONREAD, &pending) < 0 || pending <= 0)
            break;
        usleep (5000);
    }
    usleep (100000);
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
    /* Exit 0 is no failure.  SIGTERM is how Slurm stops a step (this fail
     * fast, scancel, a time limit, preemption): a rank ended by it was
     * stopped, it did not fail, and naming it would only bury the rank that
     * did.  srun still lists it. */
    if ((WIFEXITED (status) && WEXITSTATUS (status) == 0)
        || (WIFSIGNALED (status) && WTERMSIG (status) == SIGTERM))
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
    if (write (STDERR_FILENO, msg, (size_t) n) < 0)
        slurm_verbose ("%s: cannot write to the step's stderr", PLUGIN_NAME);
    else
        wait_until_forwarded (STDERR_FILENO);
    return 0;
}
