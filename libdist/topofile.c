/* topofile.c - a site's topology XML file read by hwloc in a child process, so that a
 * corrupt file costs the child, not the caller (slurmstepd, or dist-train-plan).
 *
 * hwloc 2.9's XML import crashes on some corrupt files (a NULL strcmp in its libxml
 * backend, a heap overflow in hwloc_bitmap_sscanf).  The child loads the file and sends
 * back hwloc's own export of what it loaded; the caller then parses only that, with the
 * same hwloc that wrote it, and keeps it sealed in the node's cache, so the site's file is
 * parsed once per change, not at every step. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "topo.h"

#define EXPORT_MAX (64 << 20)
#define VALIDATE_TIMEOUT_MS 30000

static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };

/* In the child: load, export, write "0" + XML or "1" + message to fd, exit. */
static void child (int fd, const char *path, unsigned flags)
{
    struct dist_topo t;
    char err[512];
    char *xml = NULL;
    int len = 0;
    size_t off = 0, total;
    ssize_t n;
    const char *out;

    /* A crash ends this child, whatever handlers the caller had (a test framework's
     * longjmp back into the caller's code, a sanitizer's report and exit status). */
    for (size_t i = 0; i < sizeof (fatal) / sizeof (fatal[0]); i++)
        signal (fatal[i], SIG_DFL);
    /* And it dumps no core: that would be a copy of slurmstepd's memory, root's, left in
     * the user's working directory (or handed to the node's core collector). */
    const struct rlimit no_core = { 0, 0 };
    (void) setrlimit (RLIMIT_CORE, &no_core);
    (void) prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
    err[0] = '1';
    if (dist_topo_load (&t, path, flags, err + 1, sizeof (err) - 1) < 0) {
        out = err;
        total = strlen (err);
    } else if (hwloc_topology_export_xmlbuffer (t.topo, &xml, &len, 0) < 0 || len < 2) {
        out = "1hwloc cannot export the topology it read";
        total = strlen (out);
    } else {
        if (write (fd, "0", 1) != 1)
            _exit (2);
        out = xml;
        total = (size_t) len - 1; /* without the NUL */
    }
    while (off < total) {
        n = write (fd, out + off, total - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit (2);
        off += (size_t) n;
    }
    _exit (out == xml ? 0 : 1);
}

static double now_ms (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* Everything the child writes, until EOF; NULL after the deadline or beyond EXPORT_MAX. */
static char *read_all (int fd, size_t *len, const char **why)
{
    double deadline = now_ms () + VALIDATE_TIMEOUT_MS;
    size_t size = 1 << 16, got = 0;
    char *buf = malloc (size), *bigger;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n;
    int left;

    while (buf != NULL) {
        left = (int) (deadline - now_ms ());
        if (left <= 0) {
            *why = "hwloc took longer than 30 s to read it";
            break;
        }
        if (poll (&p, 1, left) < 0 && errno != EINTR) {
            *why = "cannot wait for hwloc's reading of it";
            break;
        }
        n = read (fd, buf + got, size - got - 1);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            *why = "cannot read hwloc's answer";
            break;
        }
        if (n == 0) {
            buf[got] = '\0';
            *len = got;
            return buf;
        }
        got += (size_t) n;
        if (got + 1 == size) {
            if (size >= EXPORT_MAX || (bigger = realloc (buf, size * 2)) == NULL) {
                *why = "hwloc's export of it is larger than 64 MiB";
                break;
            }
            buf = bigger;
            size *= 2;
        }
    }
    if (buf == NULL)
        *why = "out of memory";
    free (buf);
    return NULL;
}

char *dist_topo_validate_file (const char *path, unsigned flags, size_t *len, char *err,
                               size_t errsz)
{
    const char *why = NULL;
    char *text = NULL;
    size_t got = 0;
    int fds[2], status = 0;
    pid_t pid;

    if (pipe2 (fds, O_CLOEXEC) < 0) {
        snprintf (err, errsz, "topology=%s: cannot start hwloc's reading of it: %s", path,
                  strerror (errno));
        return NULL;
    }
    pid = fork ();
    if (pid < 0) {
        snprintf (err, errsz, "topology=%s: cannot start hwloc's reading of it: %s", path,
                  strerror (errno));
        close (fds[0]);
        close (fds[1]);
        return NULL;
    }
    if (pid == 0) {
        close (fds[0]);
        child (fds[1], path, flags);
    }
    close (fds[1]);
    text = read_all (fds[0], &got, &why);
    close (fds[0]);
    if (text == NULL)
        kill (pid, SIGKILL);
    while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED (status) && text != NULL) {
        snprintf (err, errsz, "topology=%s: hwloc crashed reading it (signal %d, %s): the file is corrupt",
                  path, WTERMSIG (status), strsignal (WTERMSIG (status)));
    } else if (text == NULL) {
        snprintf (err, errsz, "topology=%s: %s", path, why);
    } else if (WIFEXITED (status) && WEXITSTATUS (status) == 0 && got > 1 && text[0] == '0') {
        /* the export without its status byte, NUL-terminated */
        memmove (text, text + 1, got);
        *len = got - 1;
        return text;
    } else if (got > 1 && text[0] == '1') {
        snprintf (err, errsz, "%s", text + 1);
    } else {
        snprintf (err, errsz, "topology=%s: hwloc's reading of it failed", path);
    }
    free (text);
    return NULL;
}
