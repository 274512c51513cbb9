/* test_failfast.c - fail fast's task_exit in slurmstepd (spank/failfast.c)
 * against real file descriptors as its fd 2: it names a rank that failed,
 * never one that Slurm stopped, and it never blocks on the step's stderr,
 * whatever that is (a full pipe, a pipe nobody reads, a file).
 *
 * Each case runs task_exit in a child with fd 2 set up for it; the parent
 * gives the child 5 s, so a write that blocks fails the test instead of
 * hanging it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "spank/dist_train.h"

/* A node's fail fast, as user_init leaves it for a step that srun armed
 * fail fast for. */
static struct failfast ff;

static int task_status; /* the wait status task_exit is given */
static uint32_t task_rank;

spank_err_t spank_get_item (spank_t spank, spank_item_t item, ...)
{
    spank_err_t rc = ESPANK_SUCCESS;
    va_list ap;

    (void) spank;
    va_start (ap, item);
    if (item == S_TASK_EXIT_STATUS)
        *va_arg (ap, int *) = task_status;
    else if (item == S_TASK_GLOBAL_ID)
        *va_arg (ap, uint32_t *) = task_rank;
    else
        rc = ESPANK_BAD_ARG;
    va_end (ap);
    return rc;
}

void slurm_info (const char *format, ...)
{
    (void) format;
}

void slurm_verbose (const char *format, ...)
{
    (void) format;
}

static double now (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* task_exit in a child whose fd 2 is stderr_fd, for a rank with a wait
 * status; returns the seconds it took, or fails the test when the child
 * did not return within 5 s or died. */
static double task_exit_in_child (int stderr_fd, uint32_t rank, int status)
{
    double start = now ();
    int wstatus = 0;
    pid_t pid, done = 0;

    pid = fork ();
    assert_true (pid >= 0);
    if (pid == 0) {
        /* SIGPIPE as the default: a write to a pipe nobody reads kills */
        signal (SIGPIPE, SIG_DFL);
        if (dup2 (stderr_fd, STDERR_FILENO) < 0)
            _exit (90);
        task_status = status;
        task_rank = rank;
        _exit (dist_train_failfast_task_exit (NULL, &ff) == 0 ? 0 : 91);
    }
    while (now () - start < 5.0 && (done = waitpid (pid, &wstatus, WNOHANG)) == 0)
        usleep (10000);
    if (done == 0) {
        kill (pid, SIGKILL);
        waitpid (pid, &wstatus, 0);
        fail_msg ("task_exit still blocked after 5 s");
    }
    if (!WIFEXITED (wstatus) || WEXITSTATUS (wstatus) != 0)
        fail_msg ("task_exit's child ended with wait status 0x%x", (unsigned) wstatus);
    return now () - start;
}

/* What is waiting in a pipe's read end (non-blocking), as a string. */
static void drain (int fd, char *buf, size_t size)
{
    ssize_t n, len = 0;

    fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
    while ((size_t) len + 1 < size && (n = read (fd, buf + len, size - 1 - (size_t) len)) > 0)
        len += n;
    buf[len] = '\0';
}

static int setup (void **state)
{
    (void) state;
    memset (&ff, 0, sizeof (ff));
    ff.armed = true;
    ff.job_id = 42;
    ff.step_id = 0;
    snprintf (ff.node_name, sizeof (ff.node_name), "node7");
    return 0;
}

/* The line reaches a pipe with room, whole, naming the rank and status. */
static void test_failed_rank_named (void **state)
{
    int p[2];
    char out[512];

    (void) state;
    assert_int_equal (pipe (p), 0);
    (void) task_exit_in_child (p[1], 13, 3 << 8);
    drain (p[0], out, sizeof (out));
    assert_non_null (strstr (out, "dist-train: rank 13 on node7 exited with status 3: "
                                  "stopping every rank of step 42.0"));
    assert_int_equal (out[strlen (out) - 1], '\n');
    close (p[0]);
    close (p[1]);
}

/* A pipe as slurmstepd's fd 2 is: blocking, and full (srun stopped, task 0
 * flooding it).  task_exit returns at once and leaves the pipe as it was. */
static void test_full_pipe_does_not_block (void **state)
{
    int p[2], flags;
    long filled = 0;
    ssize_t n;
    char block[4096], out[512];
    double took;

    (void) state;
    memset (block, 'x', sizeof (block));
    assert_int_equal (pipe (p), 0);
    flags = fcntl (p[1], F_GETFL);
    fcntl (p[1], F_SETFL, flags | O_NONBLOCK);
    while ((n = write (p[1], block, sizeof (block))) > 0)
        filled += n;
    assert_int_equal (errno, EAGAIN);
    fcntl (p[1], F_SETFL, flags); /* blocking again, as the task has it */
    took = task_exit_in_child (p[1], 5, 1 << 8);
    print_message ("full pipe (%ld bytes): task_exit returned in %.3f s\n", filled, took);
    assert_true (took < 1.0);
    /* nothing of the line got in (a part of it would garble the task's output) */
    drain (p[0], out, sizeof (out));
    assert_null (strstr (out, "dist-train"));
    close (p[0]);
    close (p[1]);
}

/* A pipe whose reader is gone (srun's I/O gone, a FIFO nobody opened):
 * no SIGPIPE for slurmstepd, no line. */
static void test_pipe_without_reader (void **state)
{
    int p[2];

    (void) state;
    assert_int_equal (pipe (p), 0);
    close (p[0]);
    assert_true (task_exit_in_child (p[1], 2, 9) < 1.0);
    close (p[1]);
}

/* --error FILE: a file of the user's could block even the fstat and the poll (a FUSE
 * mount that never answers, a hung NFS mount): it is never touched, and what the tasks
 * wrote stays as it was (slurmd's log has the line; srun reports the task). */
static void test_regular_file_untouched (void **state)
{
    char path[] = "/tmp/test_failfast_XXXXXX", buf[1024];
    int fd;
    ssize_t n;

    (void) state;
    fd = mkstemp (path);
    assert_true (fd >= 0);
    unlink (path);
    assert_int_equal (write (fd, "the task's own line\n", 20), 20);
    (void) task_exit_in_child (fd, 4, 7 << 8);
    n = pread (fd, buf, sizeof (buf) - 1, 0);
    assert_int_equal (n, 20);
    close (fd);
}

/* --pty, or --error naming a terminal: a terminal whose other end the user holds can take
 * a line after a poll said there was room, and still block the write.  Not written. */
static void test_terminal_untouched (void **state)
{
    char out[512];
    int master, slave;

    (void) state;
    master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true (master >= 0);
    assert_int_equal (grantpt (master), 0);
    assert_int_equal (unlockpt (master), 0);
    slave = open (ptsname (master), O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true (slave >= 0);
    fcntl (master, F_SETFL, fcntl (master, F_GETFL) | O_NONBLOCK);
    (void) task_exit_in_child (slave, 4, 7 << 8);
    drain (master, out, sizeof (out));
    assert_null (strstr (out, "dist-train"));
    close (slave);
    close (master);
}

/* --error naming a FIFO: its open goes through the path's file system (a FUSE mount can
 * hold it).  Not written, even with a reader there. */
static void test_named_fifo_untouched (void **state)
{
    char dir[] = "/tmp/test_failfast_XXXXXX", path[64], out[512];
    int r, w;

    (void) state;
    assert_non_null (mkdtemp (dir));
    snprintf (path, sizeof (path), "%s/fifo", dir);
    assert_int_equal (mkfifo (path, 0600), 0);
    r = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true (r >= 0);
    w = open (path, O_WRONLY | O_CLOEXEC);
    assert_true (w >= 0);
    (void) task_exit_in_child (w, 4, 7 << 8);
    drain (r, out, sizeof (out));
    assert_null (strstr (out, "dist-train"));
    close (w);
    close (r);
    unlink (path);
    rmdir (dir);
}

/* Ranks Slurm stopped are not named: death by SIGTERM, and the shell's
 * 128+SIGTERM when it runs the rank's program.  Exit 0 is no failure.
 * 128+SIGKILL is a failure (the OOM killer's victim under bash). */
static void test_stopped_ranks_not_named (void **state)
{
    static const struct {
        int status;
        bool named;
    } cases[] = {
        {SIGTERM, false}, {(128 + SIGTERM) << 8, false},
        {0, false},       {(128 + SIGKILL) << 8, true},
        {SIGKILL, true},  {SIGSEGV | 0x80, true},
        {1 << 8, true},
    };
    char out[512];

    (void) state;
    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
        int p[2];

        assert_int_equal (pipe (p), 0);
        (void) task_exit_in_child (p[1], 1, cases[i].status);
        drain (p[0], out, sizeof (out));
        if (cases[i].named != (strstr (out, "dist-train: rank 1 on node7") != NULL))
            fail_msg ("wait status 0x%x: %s, got '%s'", (unsigned) cases[i].status,
                      cases[i].named ? "expected a line" : "expected no line", out);
        close (p[0]);
        close (p[1]);
    }
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup (test_failed_rank_named, setup),
        cmocka_unit_test_setup (test_full_pipe_does_not_block, setup),
        cmocka_unit_test_setup (test_pipe_without_reader, setup),
        cmocka_unit_test_setup (test_regular_file_untouched, setup),
        cmocka_unit_test_setup (test_terminal_untouched, setup),
        cmocka_unit_test_setup (test_named_fifo_untouched, setup),
        cmocka_unit_test_setup (test_stopped_ranks_not_named, setup),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
