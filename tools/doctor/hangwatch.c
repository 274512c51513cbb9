/* hangwatch.c - dist-train-doctor hang-watch: the step watches itself
 * (--dist-train=hang=SECONDS).
 *
 * The plugin starts one watcher per node, as the job's user, from the task
 * of the node's first local rank just before it execs the program
 * (spank/hangwatch.c).  Each watcher looks at its node's ranks once a
 * second (hangsample.c): a rank that used HANG_ACTIVE_PERCENT of a CPU, or
 * read and wrote HANG_ACTIVE_IO bytes, made progress.
 *
 * The watcher on rank 0's node decides.  The others tell it, over TCP to
 * MASTER_ADDR on the step's second port, each line signed with the step's
 * key (auth.h), how long their ranks have made no progress: when that turns
 * from busy to idle or back, and every heartbeat while busy.  When no rank
 * of any node has made progress for SECONDS (a node that stops telling
 * counts as idle since its last word), the decider samples the step as
 * dist-train-doctor hang does, writes one line with that verdict to its
 * task's stderr, and has Slurm stop the step on every node, the one cut off
 * included (stop_step).
 *
 * A watcher ends with its node's tasks (pidfds) or with slurmstepd.
 *
 *   dist-train-doctor hang-watch STEP SECONDS NODES NODEID TASKS NAME STEPD
 *                                ADDR PORT lead|follow
 * with the step's key in DIST_TRAIN_STEP_KEY.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "hang.h"

#define W DOCTOR_PROGRAM " hang-watch: "
#define EXIT_SETUP 2
#define TICK_MS 1000
#define WLINE_MAX 256
#define UNPROVEN_MAX 64 /* connections that have not shown the key yet */
#define UNPROVEN_MS 10000 /* and the time they get to */
/* The doctor's sample of the step: every rank is known to be idle, so a
 * short window; a node that cannot answer (cut off) is waited for only so
 * long, in each of the sample's two rounds; and the whole within VERDICT_MS. */
#define VERDICT_WINDOW_MS 1000
#define VERDICT_WAIT_MS 2500
#define VERDICT_MS 8000
#define STOP_GRACE_MS 10000 /* from SIGTERM to Slurm's cancel */
#define TAG_SAMPLER 1
#define TAG_STEPD 2
#define TAG_LISTEN 3
#define TAG_LINK 4 /* a follower's link to the decider; a decider's are pointers */

struct args {
    char step[48];
    long seconds;
    unsigned long nnodes, node_id;
    long ntasks;
    char name[DOCTOR_NAME_MAX];
    pid_t stepd;
    const char *addr, *port;
    bool lead;
    struct doctor_key key;
};

/* A connection to the decider, or one of its from a follower. */
struct conn {
    int fd;
    bool proven, greeted;
    char nonce[DOCTOR_NONCE_HEX + 1];
    char buf[WLINE_MAX];
    size_t len;
    unsigned long seq;
    long since_ms; /* accepted (the decider's) */
    long node; /* the follower's node id, -1 before its first line */
};

struct watch {
    struct args a;
    int epfd;
    struct hang_sampler *sm;
    long start_ms, progress_ms;
    /* the decider's */
    struct hang_watch_node *node;
    struct conn *unproven[UNPROVEN_MAX];
    bool stopped;
    long kill_ms; /* when to cancel what SIGTERM left, 0 for never */
    /* a follower's */
    struct conn link;
    long next_try_ms, sent_ms;
    bool sent_busy;
};

long hang_watch_quiet_since (const struct hang_watch_node *node, size_t n, long start_ms)
{
    long since = 0;

    for (size_t i = 0; i < n; i++) {
        long t = node[i].heard ? node[i].idle_since_ms : start_ms;
        if (i == 0 || t > since)
            since = t;
    }
    return since;
}

long hang_watch_heartbeat_ms (long seconds)
{
    long h = seconds * 1000 / 4;
    return h < 1000 ? 1000 : h > 15000 ? 15000 : h;
}

static int parse_long (const char *text, long lo, long hi, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol (text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_args (int argc, char **argv, struct args *a)
{
    long nodes, id, stepd;
    const char *key = getenv (DOCTOR_KEY_VAR);

    if (argc != 11 || parse_long (argv[2], 1, 100000000, &a->seconds) < 0
        || parse_long (argv[3], 1, DOCTOR_NODES_MAX, &nodes) < 0
        || parse_long (argv[4], 0, nodes - 1, &id) < 0
        || parse_long (argv[5], 1, 100000, &a->ntasks) < 0
        || parse_long (argv[7], 2, 0x7fffffff, &stepd) < 0
        || (strcmp (argv[10], "lead") != 0 && strcmp (argv[10], "follow") != 0)) {
        fprintf (stderr, W "run by the plugin for --dist-train=hang=SECONDS, not by hand\n");
        return -1;
    }
    if (doctor_key_parse (key, &a->key) < 0) {
        fprintf (stderr, W "this step has no key (%s): hang= does not watch it\n", DOCTOR_KEY_VAR);
        return -1;
    }
    snprintf (a->step, sizeof (a->step), "%.40s", argv[1]);
    doctor_printable (a->name, sizeof (a->name), argv[6]);
    a->name[strcspn (a->name, " ")] = '\0';
    a->nnodes = (unsigned long) nodes;
    a->node_id = (unsigned long) id;
    a->stepd = (pid_t) stepd;
    a->addr = argv[8];
    a->port = argv[9];
    a->lead = strcmp (argv[10], "lead") == 0;
    return 0;
}

static int watch_fd (struct watch *w, int fd, uint32_t events, uint64_t tag)
{
    struct epoll_event ev = {.events = events, .data.u64 = tag};
    return epoll_ctl (w->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int watch_conn (struct watch *w, struct conn *c, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    return epoll_ctl (w->epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

/* ---- the decider ---- */

static void conn_close (struct watch *w, struct conn *c)
{
    for (size_t i = 0; i < UNPROVEN_MAX; i++)
        if (w->unproven[i] == c)
            w->unproven[i] = NULL;
    epoll_ctl (w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close (c->fd);
    free (c);
}

/* A place among the unproven: a free one, else the oldest's. */
static void unproven_add (struct watch *w, struct conn *c)
{
    size_t at = 0;

    for (size_t i = 0; i < UNPROVEN_MAX; i++) {
        if (w->unproven[i] == NULL) {
            at = i;
            break;
        }
        if (w->unproven[i]->since_ms < w->unproven[at]->since_ms)
            at = i;
    }
    if (w->unproven[at] != NULL)
        conn_close (w, w->unproven[at]);
    w->unproven[at] = c;
}

static void accept_all (struct watch *w, int lfd)
{
    int fd;

    while ((fd = accept4 (lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        struct conn *c = calloc (1, sizeof (*c));
        char greet[DOCTOR_AUTH_LINE_MAX];
        int n;
        if (c == NULL || doctor_nonce (c->nonce) < 0) {
            free (c);
            close (fd);
            continue;
        }
        c->fd = fd;
        c->node = -1;
        c->since_ms = hang_now_ms ();
        n = snprintf (greet, sizeof (greet), DOCTOR_WATCH_GREETING "%s\n", c->nonce);
        if (send (fd, greet, (size_t) n, MSG_NOSIGNAL) != n || watch_conn (w, c, EPOLLIN) < 0) {
            close (fd);
            free (c);
            continue;
        }
        unproven_add (w, c);
    }
}

/* One line from a follower; -1 when the connection is to be closed. */
static int take_line (struct watch *w, struct conn *c, const char *line, size_t len)
{
    struct doctor_watch m;

    if (doctor_watch_check (&w->a.key, c->nonce, line, len, &m) < 0 || m.node_id >= w->a.nnodes
        || (c->proven && (m.seq <= c->seq || (long) m.node_id != c->node)))
        return -1;
    if (!c->proven)
        for (size_t i = 0; i < UNPROVEN_MAX; i++)
            if (w->unproven[i] == c)
                w->unproven[i] = NULL;
    c->proven = true;
    c->seq = m.seq;
    c->node = (long) m.node_id;
    w->node[m.node_id].heard = true;
    w->node[m.node_id].idle_since_ms = hang_now_ms () - m.idle_ms;
    return 0;
}

static void conn_read (struct watch *w, struct conn *c)
{
    ssize_t n = recv (c->fd, c->buf + c->len, sizeof (c->buf) - c->len, 0);
    char *nl;

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        conn_close (w, c);
        return;
    }
    c->len += (size_t) n;
    while ((nl = memchr (c->buf, '\n', c->len)) != NULL) {
        size_t len = (size_t) (nl - c->buf) + 1;
        if (take_line (w, c, c->buf, len) < 0) {
            conn_close (w, c);
            return;
        }
        memmove (c->buf, c->buf + len, c->len - len);
        c->len -= len;
    }
    if (c->len == sizeof (c->buf))
        conn_close (w, c);
}

static int decider_listen (struct watch *w)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int fd = -1, one = 1, rc;

    if ((rc = getaddrinfo (w->a.addr, w->a.port, &hints, &ai)) != 0) {
        fprintf (stderr, W "cannot resolve MASTER_ADDR %.64s: %s; hang= does not watch this step\n",
                 w->a.addr, gai_strerror (rc));
        return -1;
    }
    fd = socket (ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one)) < 0
        || bind (fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen (fd, 4096) < 0
        || watch_fd (w, fd, EPOLLIN, TAG_LISTEN) < 0) {
        fprintf (stderr,
                 W
                 "cannot listen on %.64s port %s: %s; hang= does not watch this step (a port_range "
                 "with free ports beside MASTER_PORT lets it)\n",
                 w->a.addr, w->a.port, strerror (errno));
        if (fd >= 0)
            close (fd);
        fd = -1;
    }
    freeaddrinfo (ai);
    return fd;
}

/* The doctor's verdict on the step, one line, within VERDICT_MS: sampled
 * in a child of its own process group (the probes' srun among them), whose
 * stray output goes nowhere. */
static void verdict (const struct watch *w, char *out, size_t size)
{
    int fds[2], null = open ("/dev/null", O_RDWR | O_CLOEXEC);
    long deadline = hang_now_ms () + VERDICT_MS;
    size_t len = 0;
    pid_t pid;

    snprintf (out, size, "the doctor's sample of the step did not finish within %d s",
              VERDICT_MS / 1000);
    if (null < 0 || pipe2 (fds, O_CLOEXEC) < 0 || (pid = fork ()) < 0) {
        if (null >= 0)
            close (null);
        return;
    }
    if (pid == 0) {
        struct hang_sample s = HANG_SAMPLE_INIT;
        char line[DOCTOR_LINE_MAX] = "the doctor could not sample the step";
        setpgid (0, 0);
        dup2 (null, STDIN_FILENO);
        dup2 (null, STDERR_FILENO);
        if (hang_sample_running (w->a.step, VERDICT_WINDOW_MS, VERDICT_WAIT_MS, &s) == 0)
            hang_verdict (&s, line, sizeof (line));
        if (write (fds[1], line, strlen (line)) < 0)
            _exit (1);
        _exit (0);
    }
    close (fds[1]);
    close (null);
    for (;;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        long left = deadline - hang_now_ms ();
        ssize_t n;
        if (left <= 0 || poll (&p, 1, (int) left) <= 0 || len + 1 >= size)
            break;
        if ((n = read (fds[0], out + len, size - 1 - len)) <= 0)
            break;
        len += (size_t) n;
        out[len] = '\0';
    }
    close (fds[0]);
    kill (-pid, SIGKILL);
    while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
        ;
    for (char *p = out; *p != '\0'; p++)
        if (*p == '\n')
            *p = ' ';
}

/* scancel [--signal=SIG] STEP, waited for. */
static void scancel (const struct watch *w, const char *signal_opt)
{
    char *argv[] = {"scancel", (char *) signal_opt, (char *) w->a.step, NULL};
    int status = 0;
    pid_t pid;

    if (signal_opt == NULL) {
        argv[1] = (char *) w->a.step;
        argv[2] = NULL;
    }
    /* (its complaint that the step has ended already is no news to the user) */
    if ((pid = fork ()) == 0) {
        int null = open ("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2 (null, STDIN_FILENO);
            dup2 (null, STDOUT_FILENO);
            dup2 (null, STDERR_FILENO);
        }
        execvp (argv[0], argv);
        _exit (127);
    }
    while (pid > 0 && waitpid (pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pid < 0 || (WIFEXITED (status) && WEXITSTATUS (status) == 127))
        fprintf (stderr, W "cannot run scancel: Slurm's commands are not on the PATH\n");
}

/* Stop the step as Slurm stops one at its time limit: every task, stopped
 * ones too, gets SIGCONT and SIGTERM (which fail fast takes for Slurm's
 * own stop, and names nobody), and STOP_GRACE_MS later Slurm cancels what
 * is left (a rank that traps SIGTERM, or blocks in the kernel). */
static void stop_step (struct watch *w, long now)
{
    scancel (w, "--signal=CONT");
    scancel (w, "--signal=TERM");
    w->kill_ms = now + STOP_GRACE_MS;
}

static void decide (struct watch *w, long now)
{
    char line[DOCTOR_LINE_MAX], msg[2 * DOCTOR_LINE_MAX];
    long quiet;
    int n;

    w->node[w->a.node_id].heard = true;
    w->node[w->a.node_id].idle_since_ms = w->progress_ms;
    quiet = now - hang_watch_quiet_since (w->node, w->a.nnodes, w->start_ms);
    if (w->stopped || quiet < w->a.seconds * 1000)
        return;
    w->stopped = true;
    verdict (w, line, sizeof (line));
    n = snprintf (msg, sizeof (msg),
                  "dist-train: step %s: no rank made progress for %ld s (hang=%ld): %s; stopping "
                  "every rank (--dist-train=hang=off lets it run)\n",
                  w->a.step, quiet / 1000, w->a.seconds, line);
    if (n > 0 && (size_t) n >= sizeof (msg))
        n = (int) sizeof (msg) - 1;
    /* (a line that cannot be written does not keep the step) */
    if (n > 0 && write (STDERR_FILENO, msg, (size_t) n) < 0)
        n = 0;
    stop_step (w, hang_now_ms ());
}

static void drop_unproven (struct watch *w, long now)
{
    for (size_t i = 0; i < UNPROVEN_MAX; i++)
        if (w->unproven[i] != NULL && now - w->unproven[i]->since_ms > UNPROVEN_MS)
            conn_close (w, w->unproven[i]);
}

/* ---- a follower ---- */

static void link_close (struct watch *w, long now)
{
    if (w->link.fd >= 0) {
        epoll_ctl (w->epfd, EPOLL_CTL_DEL, w->link.fd, NULL);
        close (w->link.fd);
    }
    w->link.fd = -1;
    w->link.greeted = false;
    w->link.len = 0;
    w->next_try_ms = now + TICK_MS;
}

static void link_connect (struct watch *w, long now)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int fd;

    w->next_try_ms = now + TICK_MS;
    if (getaddrinfo (w->a.addr, w->a.port, &hints, &ai) != 0)
        return;
    fd = socket (ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect (fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
        close (fd);
        fd = -1;
    }
    freeaddrinfo (ai);
    if (fd < 0)
        return;
    w->link.fd = fd;
    if (watch_fd (w, fd, EPOLLIN, TAG_LINK) < 0)
        link_close (w, now);
}

/* The decider's greeting: its nonce, which every line then carries. */
static void link_read (struct watch *w, long now)
{
    const size_t glen = strlen (DOCTOR_WATCH_GREETING);
    ssize_t n = recv (w->link.fd, w->link.buf + w->link.len, sizeof (w->link.buf) - w->link.len, 0);
    char *nl;

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0 || w->link.greeted) {
        link_close (w, now);
        return;
    }
    w->link.len += (size_t) n;
    if ((nl = memchr (w->link.buf, '\n', w->link.len)) == NULL) {
        if (w->link.len == sizeof (w->link.buf))
            link_close (w, now);
        return;
    }
    if ((size_t) (nl - w->link.buf) != glen + DOCTOR_NONCE_HEX
        || memcmp (w->link.buf, DOCTOR_WATCH_GREETING, glen) != 0
        || !dist_lower_hex (w->link.buf + glen, DOCTOR_NONCE_HEX)) {
        link_close (w, now);
        return;
    }
    memcpy (w->link.nonce, w->link.buf + glen, DOCTOR_NONCE_HEX);
    w->link.nonce[DOCTOR_NONCE_HEX] = '\0';
    w->link.greeted = true;
    w->sent_ms = 0; /* tell at once */
}

/* Tell the decider when busy turns idle or back, and every heartbeat while
 * busy; a line that the socket cannot take now is dropped (the next comes
 * within a heartbeat). */
static void link_tell (struct watch *w, long now)
{
    long idle = now - w->progress_ms;
    bool busy = idle < 2 * TICK_MS;
    struct doctor_watch m = {.node_id = w->a.node_id, .idle_ms = busy ? 0 : idle};
    char line[DOCTOR_AUTH_LINE_MAX];
    int n;

    if (w->link.fd < 0 || !w->link.greeted)
        return;
    if (w->sent_ms != 0 && busy == w->sent_busy
        && (!busy || now - w->sent_ms < hang_watch_heartbeat_ms (w->a.seconds)))
        return;
    m.seq = ++w->link.seq;
    snprintf (m.name, sizeof (m.name), "%s", w->a.name);
    if ((n = doctor_watch_format (&w->a.key, w->link.nonce, &m, line, sizeof (line))) < 0)
        return;
    if (send (w->link.fd, line, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) {
        link_close (w, now);
        return;
    }
    w->sent_ms = now;
    w->sent_busy = busy;
}

/* ---- both ---- */

static void tick (struct watch *w, long now)
{
    if (hang_sampler_tick (w->sm))
        w->progress_ms = now;
    if (w->a.lead) {
        drop_unproven (w, now);
        decide (w, now);
        if (w->kill_ms != 0 && now >= w->kill_ms) {
            scancel (w, NULL);
            w->kill_ms = 0;
        }
    } else {
        if (w->link.fd < 0 && now >= w->next_try_ms)
            link_connect (w, now);
        link_tell (w, now);
    }
}

/* What woke the loop; false when the watch is over. */
static bool handle (struct watch *w, const struct epoll_event *ev, int lfd, long now)
{
    if (!w->a.lead && ev->data.u64 == TAG_LINK) {
        link_read (w, now);
        return true;
    }
    if (w->a.lead && ev->data.u64 != TAG_SAMPLER && ev->data.u64 != TAG_STEPD
        && ev->data.u64 != TAG_LISTEN) {
        conn_read (w, ev->data.ptr);
        return true;
    }
    switch (ev->data.u64) {
    case TAG_SAMPLER:
        return hang_sampler_ended (w->sm) > 0 || hang_sampler_tasks (w->sm) == 0;
    case TAG_STEPD:
        return false;
    case TAG_LISTEN:
        accept_all (w, lfd);
        return true;
    default:
        return true;
    }
}

static int watch_loop (struct watch *w, int lfd)
{
    long next = hang_now_ms () + TICK_MS;

    for (;;) {
        /* (one event a wait: handling one may close another's connection) */
        struct epoll_event ev[1];
        long now = hang_now_ms ();
        int n;
        if (now >= next) {
            tick (w, now);
            next = now + TICK_MS;
        }
        n = epoll_wait (w->epfd, ev, 1, (int) (next - now > 0 ? next - now : 0));
        if (n < 0 && errno != EINTR)
            return EXIT_SETUP;
        for (int i = 0; i < n; i++)
            if (!handle (w, &ev[i], lfd, hang_now_ms ()))
                return 0;
    }
}

static int watch_start (struct watch *w)
{
    int stepd = (int) syscall (SYS_pidfd_open, w->a.stepd, 0);

    w->epfd = epoll_create1 (EPOLL_CLOEXEC);
    w->sm = hang_sampler_new (w->a.stepd, w->a.ntasks);
    w->start_ms = w->progress_ms = hang_now_ms ();
    w->link.fd = -1;
    if (w->epfd < 0 || w->sm == NULL || stepd < 0
        || watch_fd (w, hang_sampler_fd (w->sm), EPOLLIN, TAG_SAMPLER) < 0
        || watch_fd (w, stepd, EPOLLIN, TAG_STEPD) < 0) {
        fprintf (stderr, W "cannot watch the tasks of node %s: %s; hang= does not watch it\n",
                 w->a.name, strerror (errno));
        return -1;
    }
    if (w->a.lead && (w->node = calloc (w->a.nnodes, sizeof (*w->node))) == NULL)
        return -1;
    return 0;
}

int hang_watch_main (int argc, char **argv)
{
    struct watch w = {0};
    int lfd = -1, rc;

    signal (SIGPIPE, SIG_IGN);
    if (parse_args (argc, argv, &w.a) < 0 || watch_start (&w) < 0)
        return EXIT_SETUP;
    if (w.a.lead && w.a.nnodes > 1 && (lfd = decider_listen (&w)) < 0)
        return EXIT_SETUP;
    rc = watch_loop (&w, lfd);
    hang_sampler_free (w.sm);
    free (w.node);
    return rc;
}
