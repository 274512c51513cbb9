/* test_io.c - the whole-read and whole-write helpers against pipes, FIFOs, /proc and
 * /sys files, files at and past their bound, and files that fail the owner rule. */
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
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "libdist/io.h"

/* (the temporary directory; paths in it have room for a name after it) */
static char dir[256];

static int make_dir (void **state)
{
    const char *tmp = getenv ("TMPDIR");

    snprintf (dir, sizeof (dir), "%s/test_io.XXXXXX", tmp != NULL ? tmp : "/tmp");
    return mkdtemp (dir) == NULL ? -1 : 0;
}

static int remove_dir (void **state)
{
    char cmd[sizeof (dir) + 16];

    snprintf (cmd, sizeof (cmd), "rm -rf '%s'", dir);
    return system (cmd) == 0 ? 0 : -1;
}

/* dir/name, made with len bytes of 'x' and the given mode (umask aside). */
static const char *file_of (const char *name, size_t len, mode_t mode)
{
    static char path[2 * sizeof (dir)];
    char *text = malloc (len + 1);
    int fd;

    assert_non_null (text);
    memset (text, 'x', len);
    snprintf (path, sizeof (path), "%s/%s", dir, name);
    unlink (path);
    fd = open (path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true (fd >= 0);
    assert_int_equal (dist_write_all (fd, text, len), 0);
    assert_int_equal (fchmod (fd, mode), 0);
    close (fd);
    free (text);
    return path;
}

/* dist_read_file's answer: the length read, or -1 with errno. */
static long read_file (const char *path, size_t max, enum dist_file_owner owner)
{
    size_t len = 0;
    char *text = dist_read_file (path, max, owner, &len);

    if (text == NULL)
        return -1;
    assert_int_equal (strlen (text), len);
    free (text);
    return (long) len;
}

static void expect_refused (const char *path, size_t max, enum dist_file_owner owner, int err)
{
    errno = 0;
    assert_int_equal (read_file (path, max, owner), -1);
    assert_int_equal (errno, err);
}

static volatile sig_atomic_t alarms;

static void count_alarm (int sig)
{
    alarms++;
}

#define PATTERN(i) ((char) ((i) *7 % 251))

/* A reader slower than the writer, checking every byte: 0 when all came, in order. */
static int slow_reader (int fd, size_t expected)
{
    char buf[4096];
    size_t got = 0, i;
    ssize_t n;

    while ((n = read (fd, buf, sizeof (buf))) > 0) {
        for (i = 0; i < (size_t) n; i++)
            if (buf[i] != PATTERN (got + i))
                return 1;
        got += (size_t) n;
        usleep (100);
    }
    return n == 0 && got == expected ? 0 : 1;
}

/* A timer's signal, without SA_RESTART, cuts the writer's blocking writes into
 * short counts (some bytes went) and EINTR (none went): every byte still arrives. */
static void test_write_all_short_writes_to_pipe (void **state)
{
    const size_t len = 8 << 20;
    struct sigaction sa = {.sa_handler = count_alarm}, old;
    struct itimerval every_ms = {{0, 1000}, {0, 1000}}, stop = {{0, 0}, {0, 0}};
    char *buf = malloc (len);
    int fds[2], status;
    size_t i;
    pid_t pid;

    assert_non_null (buf);
    for (i = 0; i < len; i++)
        buf[i] = PATTERN (i);
    assert_int_equal (pipe (fds), 0);
    pid = fork ();
    assert_true (pid >= 0);
    if (pid == 0) {
        close (fds[1]);
        _exit (slow_reader (fds[0], len));
    }
    close (fds[0]);
    alarms = 0;
    sigemptyset (&sa.sa_mask);
    assert_int_equal (sigaction (SIGALRM, &sa, &old), 0);
    assert_int_equal (setitimer (ITIMER_REAL, &every_ms, NULL), 0);
    assert_int_equal (dist_write_all (fds[1], buf, len), 0);
    setitimer (ITIMER_REAL, &stop, NULL);
    sigaction (SIGALRM, &old, NULL);
    close (fds[1]);
    assert_int_equal (waitpid (pid, &status, 0), pid);
    assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
    /* the writes were interrupted, or this test proved nothing */
    assert_true (alarms > 0);
    free (buf);
}

/* A reader that went away: EPIPE (SIGPIPE ignored), not a loop. */
static void test_write_all_reader_gone (void **state)
{
    void (*old) (int) = signal (SIGPIPE, SIG_IGN);
    int fds[2];

    assert_int_equal (pipe (fds), 0);
    close (fds[0]);
    errno = 0;
    assert_int_equal (dist_write_all (fds[1], "abc", 3), -1);
    assert_int_equal (errno, EPIPE);
    close (fds[1]);
    signal (SIGPIPE, old);
}

/* A pipe holding n bytes of 'y' and then its end. */
static int pipe_of (size_t n)
{
    char text[64];
    int fds[2];

    assert_true (n <= sizeof (text));
    memset (text, 'y', n);
    assert_int_equal (pipe (fds), 0);
    assert_int_equal (dist_write_all (fds[1], text, n), 0);
    close (fds[1]);
    return fds[0];
}

/* size - 1 bytes fill the buffer; one more is EFBIG, not a cut text. */
static void test_read_all_bound (void **state)
{
    char buf[16];
    int fd;

    fd = pipe_of (sizeof (buf) - 1);
    assert_int_equal (dist_read_all (fd, buf, sizeof (buf)), sizeof (buf) - 1);
    assert_int_equal (strlen (buf), sizeof (buf) - 1);
    close (fd);

    fd = pipe_of (sizeof (buf));
    errno = 0;
    assert_int_equal (dist_read_all (fd, buf, sizeof (buf)), -1);
    assert_int_equal (errno, EFBIG);
    close (fd);

    fd = pipe_of (0);
    assert_int_equal (dist_read_all (fd, buf, 1), 0);
    assert_string_equal (buf, "");
    errno = 0;
    assert_int_equal (dist_read_all (fd, buf, 0), -1);
    assert_int_equal (errno, EINVAL);
    close (fd);
}

/* A writer that sends its text in pieces: the reader gets it whole. */
static void test_read_all_short_reads (void **state)
{
    char buf[64];
    int fds[2], status;
    pid_t pid;

    assert_int_equal (pipe (fds), 0);
    pid = fork ();
    assert_true (pid >= 0);
    if (pid == 0) {
        close (fds[0]);
        if (dist_write_all (fds[1], "one ", 4) < 0)
            _exit (1);
        usleep (20000);
        if (dist_write_all (fds[1], "two ", 4) < 0)
            _exit (1);
        usleep (20000);
        _exit (dist_write_all (fds[1], "three", 5) < 0);
    }
    close (fds[1]);
    assert_int_equal (dist_read_all (fds[0], buf, sizeof (buf)), 13);
    assert_string_equal (buf, "one two three");
    close (fds[0]);
    assert_int_equal (waitpid (pid, &status, 0), pid);
    assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
}

static void test_read_file_bound (void **state)
{
    assert_int_equal (read_file (file_of ("max", 100, 0644), 100, DIST_FILE_ANYONE), 100);
    expect_refused (file_of ("max+1", 101, 0644), 100, DIST_FILE_ANYONE, EFBIG);
    assert_int_equal (read_file (file_of ("empty", 0, 0644), 100, DIST_FILE_ANYONE), 0);
    assert_int_equal (read_file (file_of ("empty", 0, 0644), 0, DIST_FILE_ANYONE), 0);
}

/* A FIFO with no writer would hold a blocking open, or read, for ever: the alarm
 * (its default action) ends the test if it does. */
static void test_read_file_fifo_does_not_block (void **state)
{
    char path[2 * sizeof (dir)];

    snprintf (path, sizeof (path), "%s/fifo", dir);
    assert_int_equal (mkfifo (path, 0644), 0);
    alarm (10);
    expect_refused (path, 100, DIST_FILE_ANYONE, EACCES);
    expect_refused (path, 100, DIST_FILE_ROOT_ONLY, EACCES);
    alarm (0);
}

static void test_read_file_not_regular (void **state)
{
    expect_refused (dir, 100, DIST_FILE_ANYONE, EACCES);
    expect_refused ("/dev/null", 100, DIST_FILE_ANYONE, EACCES);
    expect_refused ("/nonexistent/file", 100, DIST_FILE_ANYONE, ENOENT);
}

/* Root's cache files: root's, written by no one else, not reached through a symlink. */
static void test_read_file_root_only (void **state)
{
    char link[2 * sizeof (dir)];
    const char *path;

    if (geteuid () != 0)
        skip ();
    path = file_of ("root", 10, 0644);
    assert_int_equal (read_file (path, 100, DIST_FILE_ROOT_ONLY), 10);
    snprintf (link, sizeof (link), "%s/link", dir);
    assert_int_equal (symlink (path, link), 0);
    expect_refused (link, 100, DIST_FILE_ROOT_ONLY, ELOOP);
    /* anyone's file may be reached through one */
    assert_int_equal (read_file (link, 100, DIST_FILE_ANYONE), 10);
    expect_refused (file_of ("group-writes", 10, 0664), 100, DIST_FILE_ROOT_ONLY, EACCES);
    expect_refused (file_of ("others-write", 10, 0646), 100, DIST_FILE_ROOT_ONLY, EACCES);
    assert_int_equal (read_file (file_of ("others-write", 10, 0646), 100, DIST_FILE_ANYONE), 10);
    path = file_of ("daemon's", 10, 0644);
    assert_int_equal (chown (path, 1, 1), 0);
    expect_refused (path, 100, DIST_FILE_ROOT_ONLY, EACCES);
}

/* /proc's files say size 0 in stat: read whole up to the bound, and refused past it. */
static void test_read_file_proc (void **state)
{
    const char *path = "/proc/sys/kernel/random/boot_id";
    size_t len = 0;
    struct stat st;
    char *text;

    if (stat (path, &st) < 0)
        skip ();
    assert_int_equal (st.st_size, 0);
    text = dist_read_file (path, 64, DIST_FILE_ANYONE, &len);
    assert_non_null (text);
    /* a UUID and its newline */
    assert_int_equal (len, 37);
    assert_int_equal (text[8], '-');
    assert_int_equal (text[36], '\n');
    free (text);
    expect_refused (path, 36, DIST_FILE_ANYONE, EFBIG);
    assert_int_equal (read_file (path, 37, DIST_FILE_ANYONE), 37);
}

/* /sys's files say a page in stat, whatever their text: a small bound still reads them. */
static void test_read_file_sys (void **state)
{
    const char *path = "/sys/class/net/lo/address";
    struct stat st;

    if (stat (path, &st) < 0)
        skip ();
    assert_true (st.st_size > 64);
    /* "00:00:00:00:00:00\n" */
    assert_int_equal (read_file (path, 64, DIST_FILE_ANYONE), 18);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_write_all_short_writes_to_pipe),
        cmocka_unit_test (test_write_all_reader_gone),
        cmocka_unit_test (test_read_all_bound),
        cmocka_unit_test (test_read_all_short_reads),
        cmocka_unit_test (test_read_file_bound),
        cmocka_unit_test (test_read_file_fifo_does_not_block),
        cmocka_unit_test (test_read_file_not_regular),
        cmocka_unit_test (test_read_file_root_only),
        cmocka_unit_test (test_read_file_proc),
        cmocka_unit_test (test_read_file_sys),
    };
    return cmocka_run_group_tests (tests, make_dir, remove_dir);
}
