/* hangsample.c - the hang watcher's view of its node: whether any rank of
 * the step made progress since the last look.
 *
 * The ranks are the children of slurmstepd (each task's process, whatever
 * it execs) and their descendants, found from /proc/PID/task/TID/children,
 * which anyone may read.  Each look reads only the known processes' stat
 * (CPU time, and whether the process is runnable) and io (bytes read and
 * written).  A process that is runnable but got little CPU wants a CPU and
 * waits for one, on a node with more work than CPUs: it is slow, not hung,
 * and counts as work (a hung rank sleeps in the kernel, or is stopped, and
 * a spinning one gets its CPU time).  The tree is walked again
 * every HANG_RESCAN_MS, or sooner while tasks are missing or one ended, so
 * that watching costs a few reads a second.  A task's end is seen at once
 * through a pidfd.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hang.h"

#define PROCS_MAX 4096 /* processes of the step on one node that are watched */
#define TASKS_MAX 1024 /* tasks of one node */

struct wproc {
    pid_t pid;
    int task; /* index into task[] */
    unsigned long long ticks, io;
};

struct task {
    pid_t pid;
    int pidfd; /* -1 once it ended */
};

struct hang_sampler {
    pid_t parent;
    long expected; /* the node's tasks */
    int epfd; /* the tasks' pidfds */
    struct task task[TASKS_MAX];
    size_t ntasks, live;
    struct wproc *proc, *spare;
    size_t nproc;
    long rescan_ms, last_ms;
    bool rescan_now;
    long hz;
};

long hang_now_ms (void)
{
    struct timespec t;
    clock_gettime (CLOCK_MONOTONIC, &t);
    return (long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static ssize_t read_small (const char *path, char *buf, size_t size)
{
    int fd = open (path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read (fd, buf, size - 1);
    close (fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* The children of every thread of pid, appended to out[*n] up to max. */
static void children_of (pid_t pid, struct wproc *out, size_t *n, size_t max, int task)
{
    char path[64], buf[4096];
    struct dirent *d;
    DIR *dir;

    snprintf (path, sizeof (path), "/proc/%ld/task", (long) pid);
    if ((dir = opendir (path)) == NULL)
        return;
    while ((d = readdir (dir)) != NULL && *n < max) {
        char *p, *end;
        if (d->d_name[0] < '0' || d->d_name[0] > '9')
            continue;
        snprintf (path, sizeof (path), "/proc/%ld/task/%.16s/children", (long) pid, d->d_name);
        if (read_small (path, buf, sizeof (buf)) <= 0)
            continue;
        for (p = buf; *n < max; p = end) {
            long child = strtol (p, &end, 10);
            if (end == p || child <= 0)
                break;
            out[(*n)++] = (struct wproc){.pid = (pid_t) child, .task = task};
        }
    }
    closedir (dir);
}

/* CPU ticks and bytes of pid, and whether its main thread is runnable (when
 * runnable is not NULL); -1 when it is gone. */
static int read_counts (pid_t pid, unsigned long long *ticks, unsigned long long *io,
                        bool *runnable)
{
    char path[64], buf[1024], *s, *r, *w, state;
    unsigned long long ut, st;

    snprintf (path, sizeof (path), "/proc/%ld/stat", (long) pid);
    if (read_small (path, buf, sizeof (buf)) < 0 || (s = strrchr (buf, ')')) == NULL
        || sscanf (s + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state, &ut, &st)
               != 3)
        return -1;
    if (runnable != NULL)
        *runnable = state == 'R';
    *ticks = ut + st;
    *io = 0;
    snprintf (path, sizeof (path), "/proc/%ld/io", (long) pid);
    if (read_small (path, buf, sizeof (buf)) > 0 && (r = strstr (buf, "rchar:")) != NULL
        && (w = strstr (buf, "wchar:")) != NULL)
        *io = strtoull (r + 6, NULL, 10) + strtoull (w + 6, NULL, 10);
    return 0;
}

static int by_pid (const void *a, const void *b)
{
    const struct wproc *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* A task seen for the first time: watch for its end. */
static int task_index (struct hang_sampler *sm, pid_t pid)
{
    struct epoll_event ev = {.events = EPOLLIN};
    size_t i;

    for (i = 0; i < sm->ntasks; i++)
        if (sm->task[i].pid == pid)
            return sm->task[i].pidfd >= 0 ? (int) i : -1;
    if (sm->ntasks >= TASKS_MAX)
        return -1;
    sm->task[i].pid = pid;
    sm->task[i].pidfd = (int) syscall (SYS_pidfd_open, pid, 0);
    ev.data.u64 = i;
    if (sm->task[i].pidfd < 0 || epoll_ctl (sm->epfd, EPOLL_CTL_ADD, sm->task[i].pidfd, &ev) < 0) {
        if (sm->task[i].pidfd >= 0)
            close (sm->task[i].pidfd);
        return -1;
    }
    sm->ntasks++;
    sm->live++;
    return (int) i;
}

/* Walk the tree again; a process seen before keeps its counts. */
static void rescan (struct hang_sampler *sm)
{
    struct wproc *next = sm->spare, *old;
    size_t n = 0, kept = 0;

    qsort (sm->proc, sm->nproc, sizeof (*sm->proc), by_pid);
    children_of (sm->parent, next, &n, PROCS_MAX, 0);
    for (size_t i = 0; i < n; i++) {
        int t = task_index (sm, next[i].pid);
        if (t >= 0) {
            next[kept] = next[i];
            next[kept++].task = t;
        }
    }
    n = kept;
    /* (n grows as the walk finds children: breadth first) */
    for (size_t i = 0; i < n; i++)
        children_of (next[i].pid, next, &n, PROCS_MAX, next[i].task);
    for (size_t i = 0; i < n; i++) {
        old = bsearch (&next[i], sm->proc, sm->nproc, sizeof (*sm->proc), by_pid);
        if (old != NULL) {
            next[i].ticks = old->ticks;
            next[i].io = old->io;
        } else if (read_counts (next[i].pid, &next[i].ticks, &next[i].io, NULL) < 0) {
            next[i].ticks = next[i].io = 0;
        }
    }
    sm->spare = sm->proc;
    sm->proc = next;
    sm->nproc = n;
    sm->rescan_now = false;
}

struct hang_sampler *hang_sampler_new (pid_t parent, long expected)
{
    struct hang_sampler *sm = calloc (1, sizeof (*sm));

    if (sm == NULL)
        return NULL;
    sm->proc = calloc (PROCS_MAX, sizeof (*sm->proc));
    sm->spare = calloc (PROCS_MAX, sizeof (*sm->spare));
    sm->epfd = epoll_create1 (EPOLL_CLOEXEC);
    sm->hz = sysconf (_SC_CLK_TCK);
    if (sm->proc == NULL || sm->spare == NULL || sm->epfd < 0 || sm->hz <= 0) {
        hang_sampler_free (sm);
        return NULL;
    }
    sm->parent = parent;
    sm->expected = expected;
    sm->last_ms = hang_now_ms ();
    rescan (sm);
    sm->rescan_ms = sm->last_ms;
    return sm;
}

void hang_sampler_free (struct hang_sampler *sm)
{
    if (sm == NULL)
        return;
    for (size_t i = 0; i < sm->ntasks; i++)
        if (sm->task[i].pidfd >= 0)
            close (sm->task[i].pidfd);
    if (sm->epfd >= 0)
        close (sm->epfd);
    free (sm->proc);
    free (sm->spare);
    free (sm);
}

int hang_sampler_fd (const struct hang_sampler *sm)
{
    return sm->epfd;
}

size_t hang_sampler_ended (struct hang_sampler *sm)
{
    struct epoll_event ev[16];
    int n;

    while ((n = epoll_wait (sm->epfd, ev, 16, 0)) > 0)
        for (int i = 0; i < n; i++) {
            struct task *t = &sm->task[ev[i].data.u64];
            epoll_ctl (sm->epfd, EPOLL_CTL_DEL, t->pidfd, NULL);
            close (t->pidfd);
            t->pidfd = -1;
            sm->live--;
            sm->rescan_now = true;
        }
    return sm->live;
}

size_t hang_sampler_tasks (const struct hang_sampler *sm)
{
    return sm->ntasks;
}

bool hang_sampler_tick (struct hang_sampler *sm)
{
    unsigned long long ticks[TASKS_MAX] = {0}, io[TASKS_MAX] = {0};
    long now = hang_now_ms (), window = now - sm->last_ms;
    bool progress = false, runnable;

    for (size_t i = 0; i < sm->nproc; i++) {
        struct wproc *p = &sm->proc[i];
        unsigned long long t, b;
        if (read_counts (p->pid, &t, &b, &runnable) < 0)
            continue;
        ticks[p->task] += t >= p->ticks ? t - p->ticks : 0;
        io[p->task] += b >= p->io ? b - p->io : 0;
        p->ticks = t;
        p->io = b;
        progress = progress || runnable;
    }
    for (size_t i = 0; i < sm->ntasks && !progress; i++)
        progress =
            (long long) ticks[i] * 1000 * 100 >= (long long) HANG_ACTIVE_PERCENT * window * sm->hz
            || io[i] >= HANG_ACTIVE_IO;
    sm->last_ms = now;
    if (sm->rescan_now || (long) sm->ntasks < sm->expected
        || now - sm->rescan_ms >= HANG_RESCAN_MS) {
        rescan (sm);
        sm->rescan_ms = now;
    }
    return progress;
}
