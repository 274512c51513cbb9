/* hangprobe.c - on one node, what the ranks of a step do: found in /proc by
 * their environment, sampled twice a window apart, with the TCP sockets they
 * hold from their own network namespace's table.
 *
 * It reads only what the kernel shows the job's own user: no ptrace, no
 * signal, nothing that stops or slows a rank (the ranks' stacks, too, are
 * read through /proc: hangstack.c).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hang.h"

#define ENVIRON_MAX (1024 * 1024) /* bytes of a task's environment searched */
#define PROCS_MAX 65536 /* processes of the step on one node */
#define FDS_MAX 65536 /* descriptors looked at in one process */
#define RANK_STACKS_MAX 16 /* processes of one rank whose stacks are read */

struct proc {
    long pid, ppid, rank, world;
    char state;
    long long ticks; /* utime + stime */
    long long io; /* rchar + wchar */
    long long ticks0, io0; /* the first sample; -1 when it was not there */
};

struct inode_rank {
    unsigned long inode;
    long rank;
};

struct scan {
    const char *root;
    const char *node; /* SLURMD_NODENAME, NULL outside Slurm */
    const char *conf; /* SLURM_CONF, NULL when unset */
    unsigned long job, step;
    struct proc *proc;
    size_t nproc, cap;
    char *environ_buf;
};

/* Read path into buf (at most size - 1 bytes, NUL-terminated); its length,
 * or -1. */
static ssize_t read_file (const char *path, char *buf, size_t size)
{
    size_t got = 0;
    ssize_t n;
    int fd = open (path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    while (got + 1 < size && (n = read (fd, buf + got, size - 1 - got)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close (fd);
            return -1;
        }
        got += (size_t) n;
    }
    close (fd);
    buf[got] = '\0';
    return (ssize_t) got;
}

/* The value of name in a NUL-separated environment, or NULL. */
static const char *env_value (const char *env, size_t len, const char *name)
{
    size_t nlen = strlen (name), i = 0;

    while (i < len) {
        const char *var = env + i;
        size_t vlen = strnlen (var, len - i);
        if (vlen > nlen && memcmp (var, name, nlen) == 0 && var[nlen] == '=')
            return var + nlen + 1;
        i += vlen + 1;
    }
    return NULL;
}

static long env_number (const char *env, size_t len, const char *name)
{
    const char *v = env_value (env, len, name);
    char *end;
    long n;

    if (v == NULL || !isdigit ((unsigned char) *v))
        return -1;
    errno = 0;
    n = strtol (v, &end, 10);
    return errno == 0 && *end == '\0' ? n : -1;
}

/* State, parent and CPU ticks from /proc/PID/stat; -1 when it is gone. */
static int read_stat (const struct scan *sc, long pid, struct proc *p)
{
    char path[64], buf[1024], *s;
    unsigned long long ut, st;

    snprintf (path, sizeof (path), "%s/%ld/stat", sc->root, pid);
    if (read_file (path, buf, sizeof (buf)) < 0 || (s = strrchr (buf, ')')) == NULL)
        return -1;
    /* after "comm)": state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime */
    if (sscanf (s + 1, " %c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &p->state, &p->ppid,
                &ut, &st)
        != 4)
        return -1;
    p->ticks = (long long) (ut + st);
    return 0;
}

static long long read_io (const struct scan *sc, long pid)
{
    char path[64], buf[512], *r, *w;

    snprintf (path, sizeof (path), "%s/%ld/io", sc->root, pid);
    if (read_file (path, buf, sizeof (buf)) < 0 || (r = strstr (buf, "rchar:")) == NULL
        || (w = strstr (buf, "wchar:")) == NULL)
        return 0;
    return strtoll (r + 6, NULL, 10) + strtoll (w + 6, NULL, 10);
}

static bool same_text (const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp (a, b) == 0);
}

/* Whether pid belongs to the step; its rank and world size if so. */
static bool of_step (struct scan *sc, long pid, long *rank, long *world)
{
    char path[64];
    ssize_t len;

    snprintf (path, sizeof (path), "%s/%ld/environ", sc->root, pid);
    len = read_file (path, sc->environ_buf, ENVIRON_MAX);
    if (len <= 0)
        return false;
    if (env_number (sc->environ_buf, (size_t) len, "SLURM_JOB_ID") != (long) sc->job
        || env_number (sc->environ_buf, (size_t) len, "SLURM_STEP_ID") != (long) sc->step)
        return false;
    /* nodes that share one PID namespace (as on a test cluster) see each
     * other's tasks: each probe reports those of its own node */
    if (sc->node != NULL) {
        const char *node = env_value (sc->environ_buf, (size_t) len, "SLURMD_NODENAME");
        if (node == NULL || strcmp (node, sc->node) != 0)
            return false;
        /* and test clusters beside each other have nodes of one name, whose steps have
         * the same ids: the cluster is told by its slurm.conf (unset on a real one) */
        if (!same_text (env_value (sc->environ_buf, (size_t) len, "SLURM_CONF"), sc->conf))
            return false;
    }
    /* the plugin's RANK when it numbered the ranks, else Slurm's */
    *rank = env_number (sc->environ_buf, (size_t) len, "RANK");
    if (*rank < 0)
        *rank = env_number (sc->environ_buf, (size_t) len, "SLURM_PROCID");
    *world = env_number (sc->environ_buf, (size_t) len, "WORLD_SIZE");
    if (*world < 0)
        *world = env_number (sc->environ_buf, (size_t) len, "SLURM_NTASKS");
    return *rank >= 0;
}

static struct proc *find_proc (const struct scan *sc, long pid)
{
    for (size_t i = 0; i < sc->nproc; i++)
        if (sc->proc[i].pid == pid)
            return &sc->proc[i];
    return NULL;
}

/* One pass over /proc: add the step's processes, or update those known. */
static int scan_pass (struct scan *sc, bool first)
{
    DIR *d = opendir (sc->root);
    struct dirent *e;

    if (d == NULL)
        return -1;
    while ((e = readdir (d)) != NULL) {
        struct proc cur = {0}, *p;
        long pid = strtol (e->d_name, NULL, 10);
        if (pid <= 0 || pid == (long) getpid () || read_stat (sc, pid, &cur) < 0)
            continue;
        if ((p = find_proc (sc, pid)) == NULL) {
            if (sc->nproc >= PROCS_MAX || !of_step (sc, pid, &cur.rank, &cur.world))
                continue;
            if (sc->nproc == sc->cap) {
                size_t cap = sc->cap ? sc->cap * 2 : 64;
                struct proc *n = realloc (sc->proc, cap * sizeof (*n));
                if (n == NULL)
                    break;
                sc->proc = n;
                sc->cap = cap;
            }
            p = &sc->proc[sc->nproc++];
            cur.pid = pid;
            cur.ticks0 = cur.io0 = -1;
            *p = cur;
        }
        p->state = cur.state;
        p->ppid = cur.ppid;
        p->ticks = cur.ticks;
        p->io = read_io (sc, pid);
        if (first) {
            p->ticks0 = p->ticks;
            p->io0 = p->io;
        }
    }
    closedir (d);
    return 0;
}

/* The x86-64 and aarch64 names of the syscalls a waiting rank sits in. */
static const char *syscall_name (long nr)
{
    static const struct {
        long nr;
        const char *name;
    } names[] = {
        {SYS_futex, "futex"},
        {SYS_read, "read"},
        {SYS_write, "write"},
        {SYS_readv, "readv"},
        {SYS_writev, "writev"},
        {SYS_recvfrom, "recvfrom"},
        {SYS_recvmsg, "recvmsg"},
        {SYS_sendto, "sendto"},
        {SYS_sendmsg, "sendmsg"},
        {SYS_accept4, "accept4"},
        {SYS_connect, "connect"},
        {SYS_ppoll, "ppoll"},
        {SYS_pselect6, "pselect6"},
        {SYS_epoll_pwait, "epoll_pwait"},
        {SYS_clock_nanosleep, "clock_nanosleep"},
        {SYS_nanosleep, "nanosleep"},
        {SYS_wait4, "wait4"},
        {SYS_waitid, "waitid"},
        {SYS_rt_sigtimedwait, "rt_sigtimedwait"},
        {SYS_rt_sigsuspend, "rt_sigsuspend"},
        {SYS_sched_yield, "sched_yield"},
        {SYS_ioctl, "ioctl"},
        {SYS_openat, "openat"},
        {SYS_fsync, "fsync"},
#ifdef SYS_poll
        {SYS_poll, "poll"},
        {SYS_select, "select"},
        {SYS_epoll_wait, "epoll_wait"},
        {SYS_pause, "pause"},
        {SYS_accept, "accept"},
#endif
    };

    for (size_t i = 0; i < sizeof (names) / sizeof (names[0]); i++)
        if (names[i].nr == nr)
            return names[i].name;
    return NULL;
}

/* What the main thread of pid waits in: its syscall and kernel function. */
static void read_wait (const struct scan *sc, long pid, struct hang_rank *r)
{
    char path[64], buf[256];
    const char *name;
    long nr;

    snprintf (r->syscall, sizeof (r->syscall), "-");
    snprintf (r->wchan, sizeof (r->wchan), "-");
    snprintf (path, sizeof (path), "%s/%ld/syscall", sc->root, pid);
    if (read_file (path, buf, sizeof (buf)) > 0 && isdigit ((unsigned char) buf[0])) {
        nr = strtol (buf, NULL, 10);
        if ((name = syscall_name (nr)) != NULL)
            snprintf (r->syscall, sizeof (r->syscall), "%s", name);
        else
            snprintf (r->syscall, sizeof (r->syscall), "syscall%ld", nr);
    }
    snprintf (path, sizeof (path), "%s/%ld/wchan", sc->root, pid);
    if (read_file (path, buf, sizeof (buf)) > 0 && strcmp (buf, "0") != 0)
        doctor_printable (r->wchan, sizeof (r->wchan), buf);
    for (char *c = r->wchan; *c; c++)
        if (*c == ' ')
            *c = '_';
}

/* The process of a rank that the others are children of: the task. */
static bool is_task (const struct scan *sc, const struct proc *p)
{
    const struct proc *parent = find_proc (sc, p->ppid);
    return parent == NULL || parent->rank != p->rank;
}

static int by_inode (const void *a, const void *b)
{
    const struct inode_rank *x = a, *y = b;
    return x->inode < y->inode ? -1 : x->inode > y->inode;
}

/* The socket inodes every process of the step holds, sorted. */
static struct inode_rank *socket_inodes (const struct scan *sc, size_t *n)
{
    struct inode_rank *v = NULL;
    size_t cap = 0;

    *n = 0;
    for (size_t i = 0; i < sc->nproc; i++) {
        char path[64], link[64];
        struct dirent *e;
        size_t seen = 0;
        DIR *d;
        snprintf (path, sizeof (path), "%s/%ld/fd", sc->root, sc->proc[i].pid);
        if ((d = opendir (path)) == NULL)
            continue;
        while ((e = readdir (d)) != NULL && seen++ < FDS_MAX) {
            char fdpath[sizeof (path) + 258];
            ssize_t len;
            snprintf (fdpath, sizeof (fdpath), "%s/%s", path, e->d_name);
            len = readlink (fdpath, link, sizeof (link) - 1);
            if (len <= 8 || memcmp (link, "socket:[", 8) != 0)
                continue;
            link[len] = '\0';
            if (*n == cap) {
                struct inode_rank *nv = realloc (v, (cap = cap ? cap * 2 : 64) * sizeof (*v));
                if (nv == NULL)
                    break;
                v = nv;
            }
            v[*n].inode = strtoul (link + 8, NULL, 10);
            v[(*n)++].rank = sc->proc[i].rank;
        }
        closedir (d);
    }
    if (*n > 0)
        qsort (v, *n, sizeof (*v), by_inode);
    return v;
}

/* "addr:port" from the kernel's hex form: 8 digits for IPv4, 32 for IPv6,
 * each 32-bit word as the machine stores it; IPv4-mapped IPv6 as IPv4, so
 * the two ends of one connection read alike whatever family each has;
 * "node/127.0.0.1:port" for loopback, which every node has. */
static int endpoint_text (const char *hex, const char *node, char *out, size_t size)
{
    const char *colon = strchr (hex, ':');
    unsigned char bytes[16];
    char addr[INET6_ADDRSTRLEN];
    size_t len, words;
    unsigned long port;

    if (colon == NULL || ((len = (size_t) (colon - hex)) != 8 && len != 32))
        return -1;
    words = len / 8;
    for (size_t w = 0; w < words; w++) {
        char word[9];
        uint32_t v;
        memcpy (word, hex + w * 8, 8);
        word[8] = '\0';
        v = (uint32_t) strtoul (word, NULL, 16);
        memcpy (bytes + w * 4, &v, 4);
    }
    port = strtoul (colon + 1, NULL, 16);
    if (words == 1 || (memcmp (bytes, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0)) {
        const unsigned char *v4 = words == 1 ? bytes : bytes + 12;
        inet_ntop (AF_INET, v4, addr, sizeof (addr));
        /* loopback names an end only together with its node */
        snprintf (out, size, "%s%s%s:%lu", v4[0] == 127 ? node : "", v4[0] == 127 ? "/" : "", addr,
                  port);
    } else {
        bool loopback = memcmp (bytes, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) == 0;
        inet_ntop (AF_INET6, bytes, addr, sizeof (addr));
        snprintf (out, size, "%s%s[%s]:%lu", loopback ? node : "", loopback ? "/" : "", addr, port);
    }
    return 0;
}

/* Print a "sock" line for each connected socket of the table that a rank
 * holds (path: a task's net/tcp or net/tcp6). */
/* The hosts at the other end of the ranks' connections, each once. */
struct peers {
    char (*host)[HANG_ENDPOINT_MAX];
    size_t n, cap;
    bool stuck; /* a connection retransmits data not acknowledged */
};

static void peers_add (struct peers *p, const char *endpoint)
{
    const char *colon = strrchr (endpoint, ':');
    char host[HANG_ENDPOINT_MAX];

    /* loopback ("node/127.0.0.1:port") stays on the node */
    if (strchr (endpoint, '/') != NULL || colon == NULL)
        return;
    snprintf (host, sizeof (host), "%.*s:0", (int) (colon - endpoint), endpoint);
    for (size_t i = 0; i < p->n; i++)
        if (strcmp (p->host[i], host) == 0)
            return;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        void *nh = cap <= HANG_REACH_MAX ? realloc (p->host, cap * sizeof (*p->host)) : NULL;
        if (nh == NULL)
            return;
        p->host = nh;
        p->cap = cap;
    }
    memcpy (p->host[p->n++], host, sizeof (host));
}

static void print_sockets (FILE *f, const char *path, const char *node,
                           const struct inode_rank *inodes, size_t n, struct peers *peers)
{
    char line[512];
    FILE *t = fopen (path, "re");

    if (t == NULL)
        return;
    while (fgets (line, sizeof (line), t) != NULL) {
        char lhex[64], rhex[64], local[HANG_ENDPOINT_MAX], remote[HANG_ENDPOINT_MAX];
        unsigned int st;
        unsigned long txq, rxq, retr, inode;
        struct inode_rank key, *hit;
        if (sscanf (line, " %*u: %63s %63s %x %lx:%lx %*x:%*x %lx %*u %*u %lu", lhex, rhex, &st,
                    &txq, &rxq, &retr, &inode)
            != 7)
            continue;
        key.inode = inode;
        /* only connections: a listening socket has no one at the other end */
        if (st == 0x0A || (hit = bsearch (&key, inodes, n, sizeof (key), by_inode)) == NULL)
            continue;
        if (endpoint_text (lhex, node, local, sizeof (local)) < 0
            || endpoint_text (rhex, node, remote, sizeof (remote)) < 0)
            continue;
        fprintf (f, "sock rank=%ld local=%s remote=%s txq=%lu rxq=%lu retr=%lu\n", hit->rank, local,
                 remote, txq, rxq, retr);
        peers_add (peers, remote);
        peers->stuck |= txq > 0 && retr > 0;
    }
    fclose (t);
}

/* The collectives the rank's processes are in, from their threads' stacks: "-" when
 * none shows one, "?" when none could be read. */
static void rank_collectives (const struct scan *sc, long rank, char *out, size_t size)
{
    size_t read = 0, tried = 0;

    out[0] = '\0';
    for (size_t i = 0; i < sc->nproc && tried < RANK_STACKS_MAX; i++)
        if (sc->proc[i].rank == rank) {
            tried++;
            read += hang_stack_collectives (sc->root, sc->proc[i].pid, hang_collective_symbol, out,
                                            size)
                    == 0;
        }
    if (out[0] == '\0')
        snprintf (out, size, "%s", read > 0 ? "-" : "?");
}

static void print_ranks (FILE *f, const struct scan *sc, const char *node, long window_ms)
{
    long hz = sysconf (_SC_CLK_TCK) > 0 ? sysconf (_SC_CLK_TCK) : 100;

    for (size_t i = 0; i < sc->nproc; i++) {
        const struct proc *task = &sc->proc[i];
        struct hang_rank r = {0};
        long long ticks = 0, io = 0;
        if (!is_task (sc, task))
            continue;
        for (size_t j = 0; j < sc->nproc; j++) {
            const struct proc *p = &sc->proc[j];
            if (p->rank != task->rank)
                continue;
            ticks += p->ticks - (p->ticks0 >= 0 ? p->ticks0 : p->ticks);
            io += p->io - (p->io0 >= 0 ? p->io0 : p->io);
            r.nproc++;
        }
        read_wait (sc, task->pid, &r);
        rank_collectives (sc, task->rank, r.coll, sizeof (r.coll));
        fprintf (f,
                 "rank rank=%ld world=%ld node=%s pid=%ld state=%c syscall=%s wchan=%s "
                 "cpu_ms=%lld io=%lld window_ms=%ld nproc=%d coll=%s\n",
                 task->rank, task->world, node, task->pid, task->state, r.syscall, r.wchan,
                 ticks * 1000 / hz, io, window_ms, r.nproc, r.coll);
    }
}

static long cpu_ms_used (void)
{
    struct rusage u;

    if (getrusage (RUSAGE_SELF, &u) < 0)
        return -1;
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000
           + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000;
}

int hang_probe (FILE *f, const char *proc_root, unsigned long job, unsigned long step,
                long window_ms)
{
    struct scan sc = {.root = proc_root, .job = job, .step = step};
    char node[DOCTOR_NAME_MAX], host[DOCTOR_NAME_MAX], path[96];
    const char *slurm_node = getenv ("SLURMD_NODENAME");
    struct inode_rank *inodes;
    struct peers peers = {0};
    size_t ninodes = 0;
    int rc = -1;

    sc.node = slurm_node;
    sc.conf = getenv ("SLURM_CONF");
    if (slurm_node == NULL && gethostname (host, sizeof (host)) == 0)
        slurm_node = host;
    doctor_printable (node, sizeof (node), slurm_node != NULL ? slurm_node : "?");
    for (char *c = node; *c; c++)
        if (*c == ' ' || *c == '=')
            *c = '_';
    if ((sc.environ_buf = malloc (ENVIRON_MAX)) == NULL || scan_pass (&sc, true) < 0)
        goto out;
    poll (NULL, 0, (int) window_ms);
    if (scan_pass (&sc, false) < 0)
        goto out;
    print_ranks (f, &sc, node, window_ms);
    inodes = socket_inodes (&sc, &ninodes);
    /* the ranks' own table: they may sit in another network namespace */
    if (ninodes > 0) {
        snprintf (path, sizeof (path), "%s/%ld/net/tcp", proc_root, sc.proc[0].pid);
        print_sockets (f, path, node, inodes, ninodes, &peers);
        snprintf (path, sizeof (path), "%s/%ld/net/tcp6", proc_root, sc.proc[0].pid);
        print_sockets (f, path, node, inodes, ninodes, &peers);
    }
    /* which end of a connection that drops data is cut off: ask the path */
    if (peers.stuck)
        hang_reach (f, node, peers.host, peers.n);
    free (peers.host);
    free (inodes);
    /* last: what sampling this node cost, the whole probe's CPU */
    fprintf (f, "node node=%s procs=%zu cpu_ms=%ld\n", node, sc.nproc, cpu_ms_used ());
    rc = 0;
out:
    free (sc.environ_buf);
    free (sc.proc);
    return rc;
}
