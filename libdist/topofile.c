/* topofile.c - a site's topology XML file read by hwloc in a child process, so that a
 * corrupt file, a hung mount or a FIFO costs the child, not the caller (slurmstepd, or
 * dist-train-plan).
 *
 * hwloc 2.9's XML import crashes on some corrupt files (a NULL strcmp in its libxml
 * backend, a heap overflow in hwloc_bitmap_sscanf).  The child loads the file and sends
 * back hwloc's own export of what it loaded; the caller then parses only that, with the
 * same hwloc that wrote it, and keeps it sealed in the node's cache, so the site's file is
 * parsed once per change, not at every step.  Even the stat that tells whether the file
 * changed is the child's: on a hung NFS or FUSE mount it never returns.
 *
 * The two talk over a socket pair: a write to a child that died must not raise SIGPIPE
 * in slurmstepd (send with MSG_NOSIGNAL), and the caller's "no more" is a shutdown the
 * child reads as end of file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "topo.h"

#define EXPORT_MAX (64 << 20)
#define REAP_MS 2000 /* a killed child that does not go within this is left behind */

int dist_topo_file_timeout_ms = 30000;
void (*dist_topo_file_child_prepare) (void);

static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};

/* In the child: "1" + why it cannot go on, and exit. */
static void child_refuses (int fd, const char *why)
{
    bool sent = dist_write_all (fd, "1", 1) == 0 && dist_write_all (fd, why, strlen (why)) == 0;

    _exit (sent ? 1 : 2);
}

/* Whether st (a file's or a directory's) is root's alone: owned by root, and writable by
 * no group or other user, unless it is a directory with the sticky bit. */
static bool roots (const struct stat *st)
{
    return st->st_uid == 0
           && (!(st->st_mode & (S_IWGRP | S_IWOTH))
               || (S_ISDIR (st->st_mode) && (st->st_mode & S_ISVTX)));
}

/* In the child: path's real path into real, when the file (st, already a regular file)
 * and every directory on that path are root's alone; else NULL, and why in err.  The
 * file is read by that path then: nothing on it can change but by root. */
static const char *root_only (const char *path, const struct stat *st, char *real, char *err,
                              size_t errsz)
{
    struct stat dst;
    char dir[PATH_MAX], *slash;

    if (realpath (path, real) == NULL) {
        snprintf (err, errsz, "cannot resolve its path: %s", strerror (errno));
        return NULL;
    }
    if (!roots (st)) {
        snprintf (err, errsz,
                  "it is owned by uid %u with mode %04o, and whoever can write it decides "
                  "every user's binding: make it root's, writable by root only",
                  (unsigned) st->st_uid, (unsigned) (st->st_mode & 07777));
        return NULL;
    }
    /* (each directory above it, cut from a copy of the path) */
    memcpy (dir, real, strlen (real) + 1);
    for (slash = strrchr (dir, '/'); slash != NULL; slash = strrchr (dir, '/')) {
        *slash = '\0';
        if (stat (dir[0] != '\0' ? dir : "/", &dst) < 0) {
            snprintf (err, errsz, "cannot read the directory %s on its path: %s", dir,
                      strerror (errno));
            return NULL;
        }
        if (!roots (&dst)) {
            snprintf (err, errsz,
                      "the directory %s on its path is owned by uid %u with mode %04o, and whoever "
                      "can write it can replace the file: keep it in a directory only root can "
                      "write",
                      dir[0] != '\0' ? dir : "/", (unsigned) dst.st_uid,
                      (unsigned) (dst.st_mode & 07777));
            return NULL;
        }
        if (dir[0] == '\0')
            break;
    }
    return real;
}

/* In the child: "I dev ino size sec nsec\n" and, when asked to go on ('L'), "0" + XML or
 * "1" + the reason; then exit. */
static void child (int fd, const char *path, unsigned flags, bool ask)
{
    struct dist_topo t;
    struct stat st;
    char line[160], err[PATH_MAX + 256], real[PATH_MAX];
    char *xml = NULL;
    int len = 0;
    char go = '\0';

    /* A crash ends this child, whatever handlers the caller had (a test framework's
     * longjmp back into the caller's code, a sanitizer's report and exit status). */
    for (size_t i = 0; i < sizeof (fatal) / sizeof (fatal[0]); i++)
        signal (fatal[i], SIG_DFL);
    /* And it dumps no core: that would be a copy of slurmstepd's memory, root's, left in
     * the user's working directory (or handed to the node's core collector). */
    const struct rlimit no_core = {0, 0};
    (void) setrlimit (RLIMIT_CORE, &no_core);
    (void) prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (dist_topo_file_child_prepare != NULL)
        dist_topo_file_child_prepare ();
    /* (one thread here: the environment is this process's own to change) */
    if (getenv (DIST_TOPO_PLUGINS_ENV) == NULL)
        (void) setenv (DIST_TOPO_PLUGINS_ENV, DIST_TOPO_PLUGINS_FOR_SITE_XML, 1);
    if (stat (path, &st) < 0) {
        snprintf (err, sizeof (err), "cannot read it: %s", strerror (errno));
        child_refuses (fd, err);
    }
    /* a FIFO or a device would hold hwloc until the deadline, for nothing */
    if (!S_ISREG (st.st_mode))
        child_refuses (fd, "it is not a regular file");
    if ((flags & DIST_TOPO_ROOT_FILE)
        && (path = root_only (path, &st, real, err, sizeof (err))) == NULL)
        child_refuses (fd, err);
    if (ask) {
        snprintf (line, sizeof (line), "I %llu %llu %lld %lld %ld\n",
                  (unsigned long long) st.st_dev, (unsigned long long) st.st_ino,
                  (long long) st.st_size, (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        if (dist_write_all (fd, line, strlen (line)) < 0)
            _exit (2);
        while (read (fd, &go, 1) < 0 && errno == EINTR)
            ;
        if (go != 'L')
            _exit (0);
    }
    if (dist_topo_load (&t, path, flags, err, sizeof (err)) < 0)
        child_refuses (fd, "hwloc cannot read it as a topology");
    if (hwloc_topology_export_xmlbuffer (t.topo, &xml, &len, 0) < 0 || len < 2)
        child_refuses (fd, "hwloc cannot export the topology it read");
    /* (len counts the NUL) */
    if (dist_write_all (fd, "0", 1) < 0 || dist_write_all (fd, xml, (size_t) len - 1) < 0)
        _exit (2);
    _exit (0);
}

static double now_ms (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* What the child sent so far, read without ever blocking past the deadline, and how the
 * child ended. */
struct answer {
    int fd;
    double deadline;
    char *buf;
    size_t size, got;
    bool late; /* the deadline passed */
    const char *why; /* another failure */
    bool stopped; /* the caller's copy is current: the child was told to go */
    bool reaped; /* and status is how it ended */
    int status;
};

/* Wait for and read the next bytes: 1 when some came, 0 at end of file, -1 when the
 * deadline passed or reading failed. */
static int more (struct answer *a)
{
    struct pollfd p = {.fd = a->fd, .events = POLLIN};
    char *bigger;
    ssize_t n;
    int left;

    for (;;) {
        left = (int) (a->deadline - now_ms ());
        if (left <= 0) {
            a->late = true;
            return -1;
        }
        if (a->got + 1 >= a->size) {
            if (a->size >= EXPORT_MAX || (bigger = realloc (a->buf, a->size * 2)) == NULL) {
                a->why = a->size >= EXPORT_MAX ? "hwloc's export of it is larger than 64 MiB"
                                               : "out of memory";
                return -1;
            }
            a->buf = bigger;
            a->size *= 2;
        }
        /* a poll that times out or is interrupted goes round: the deadline decides */
        if (poll (&p, 1, left) <= 0)
            continue;
        n = read (a->fd, a->buf + a->got, a->size - a->got - 1);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            a->why = "cannot read hwloc's answer";
            return -1;
        }
        a->got += (size_t) n;
        a->buf[a->got] = '\0';
        return n > 0 ? 1 : 0;
    }
}

/* Reap the child, which was killed or is about to exit; a child that stays (a kill not yet
 * delivered in the kernel) is left rather than waited for.  The naps start short and
 * double: a child told to go exits within a few hundred microseconds, and this wait is
 * part of every step that reads a site's file. */
static int reap (pid_t pid, int *status)
{
    double until = now_ms () + REAP_MS;
    useconds_t nap = 20;
    pid_t r;

    for (;;) {
        r = waitpid (pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        if (now_ms () > until)
            return -1;
        usleep (nap);
        if (nap < 1000)
            nap *= 2;
    }
}

/* The identity line at the start of the answer, removed from it; -1 when the child sent
 * something else first (its reason). */
static int take_identity (struct answer *a, struct dist_topo_file_id *id)
{
    char *nl;
    size_t used;

    if (a->got < 2 || a->buf[0] != 'I' || (nl = memchr (a->buf, '\n', a->got)) == NULL
        || sscanf (a->buf, "I %llu %llu %lld %lld %ld\n", &id->dev, &id->ino, &id->size,
                   &id->mtime_s, &id->mtime_ns)
               != 5)
        return -1;
    used = (size_t) (nl - a->buf) + 1;
    memmove (a->buf, a->buf + used, a->got - used + 1);
    a->got -= used;
    return 0;
}

static void cannot_start (const char *label, const char *path, char *err, size_t errsz)
{
    snprintf (err, errsz, "%s=%s: cannot start hwloc's reading of it: %s", label, path,
              strerror (errno));
}

/* Fork the child that reads path, a->fd the caller's end of their socket pair; the
 * child's pid, or -1 with err set. */
static pid_t start_child (struct answer *a, const char *label, const char *path, unsigned flags,
                          bool ask, char *err, size_t errsz)
{
    int sv[2];
    pid_t pid;

    if ((a->buf = malloc (a->size = 1 << 16)) == NULL) {
        snprintf (err, errsz, "%s=%s: out of memory", label, path);
        return -1;
    }
    if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        cannot_start (label, path, err, errsz);
        free (a->buf);
        return -1;
    }
    a->buf[0] = '\0';
    a->deadline = now_ms () + dist_topo_file_timeout_ms;
    pid = fork ();
    if (pid < 0) {
        cannot_start (label, path, err, errsz);
        close (sv[0]);
        close (sv[1]);
        free (a->buf);
        return -1;
    }
    if (pid == 0) {
        close (sv[0]);
        child (sv[1], path, flags, ask);
    }
    close (sv[1]);
    a->fd = sv[0];
    (void) fcntl (a->fd, F_SETFL, O_NONBLOCK);
    return pid;
}

/* The file's identity, from the child, shown to want: the child goes on to load the file
 * when want says so, and is stopped when the caller's copy is current. */
static void ask_caller (struct answer *a, dist_topo_want_fn want, void *arg)
{
    struct dist_topo_file_id id;
    int got;

    while ((got = more (a)) > 0 && memchr (a->buf, '\n', a->got) == NULL)
        ;
    if (got < 0 || take_identity (a, &id) < 0)
        return;
    if (!want (&id, arg)) {
        /* the caller's copy is current: the child reads end of file and goes */
        shutdown (a->fd, SHUT_WR);
        a->stopped = true;
    } else if (send (a->fd, "L", 1, MSG_NOSIGNAL) != 1) {
        a->why = "cannot start hwloc's reading of it";
    }
}

/* The rest of the answer, then the child reaped: killed first when it was late or the
 * answer could not be read. */
static void finish_child (struct answer *a, pid_t pid)
{
    if (!a->stopped && a->why == NULL && !a->late)
        while (more (a) > 0)
            ;
    close (a->fd);
    if (a->late || a->why != NULL)
        kill (pid, SIGKILL);
    /* (and a child that does not end by itself, after its answer) */
    if (!(a->reaped = reap (pid, &a->status) == 0)) {
        kill (pid, SIGKILL);
        a->reaped = reap (pid, &a->status) == 0;
    }
}

/* What the answer and the child's end make of the reading: dist_topo_read_file's result,
 * the answer's buffer handed over in *xml or freed. */
static int verdict (struct answer *a, const char *label, const char *path, char **xml, size_t *len,
                    char *err, size_t errsz)
{
    if (a->late) {
        snprintf (err, errsz,
                  "%s=%s: reading it took longer than %g s (a hung file system, or hwloc "
                  "stuck): stopped",
                  label, path, dist_topo_file_timeout_ms / 1000.0);
    } else if (a->why != NULL) {
        snprintf (err, errsz, "%s=%s: %s", label, path, a->why);
    } else if (a->stopped) {
        free (a->buf);
        return 0;
    } else if (a->reaped && WIFSIGNALED (a->status)) {
        snprintf (err, errsz,
                  "%s=%s: hwloc crashed reading it (signal %d, %s): the file is corrupt", label,
                  path, WTERMSIG (a->status), strsignal (WTERMSIG (a->status)));
    } else if (a->reaped && WIFEXITED (a->status) && WEXITSTATUS (a->status) == 0 && a->got > 1
               && a->buf[0] == '0') {
        /* the export without its status byte, NUL-terminated */
        memmove (a->buf, a->buf + 1, a->got);
        *len = a->got - 1;
        *xml = a->buf;
        return 1;
    } else if (a->got > 1 && a->buf[0] == '1') {
        snprintf (err, errsz, "%s=%s: %s", label, path, a->buf + 1);
    } else {
        snprintf (err, errsz, "%s=%s: hwloc's reading of it failed", label, path);
    }
    free (a->buf);
    return -1;
}

int dist_topo_read_file (const char *label, const char *path, unsigned flags,
                         dist_topo_want_fn want, void *arg, char **xml, size_t *len, char *err,
                         size_t errsz)
{
    struct answer a = {.fd = -1};
    pid_t pid;

    *xml = NULL;
    if ((pid = start_child (&a, label, path, flags, want != NULL, err, errsz)) < 0)
        return -1;
    if (want != NULL)
        ask_caller (&a, want, arg);
    finish_child (&a, pid);
    return verdict (&a, label, path, xml, len, err, errsz);
}
