/* hang.c - the probes' lines read back, and the verdict: which rank (or
 * node) the others wait on, and why.  Pure: no I/O but the report's FILE *.
 *
 * The two ends of a TCP connection are matched across nodes by their
 * endpoints (one rank's local address and port is the other's remote), so
 * "who waits on whom" needs neither the layout nor the program's help:
 * data that sits unread in a rank's socket was sent by a rank that waits
 * on it; data a rank sent that is not acknowledged, and is retransmitted,
 * crosses a path that drops it.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hang.h"
#include "text.h"

#define SAMPLE_SOCKETS_MAX (16 * 1048576) /* sockets of a whole step */
#define HANG_CPU_MS_MAX (1LL << 40) /* a rank's CPU in one window, far above any */
#define HANG_WINDOW_MS_MAX 3600000
#define PROCS_PER_RANK_MAX 1000000
/* what hangstack.c's names are made of: gloo::broadcast+MPI_Bcast */
#define COLL_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:+-?"

/* The value of key in a line of key=value words, copied into out. */
static bool word (const char *line, const char *key, char *out, size_t size)
{
    size_t klen = strlen (key);
    const char *p = line;

    while ((p = strstr (p, key)) != NULL) {
        if ((p == line || p[-1] == ' ') && p[klen] == '=') {
            size_t len = strcspn (p + klen + 1, " \n");
            if (len >= size)
                len = size - 1;
            memcpy (out, p + klen + 1, len);
            out[len] = '\0';
            return true;
        }
        p += klen;
    }
    return false;
}

static bool number (const char *line, const char *key, long long *v)
{
    char text[32], *end;

    if (!word (line, key, text, sizeof (text)) || text[0] == '\0')
        return false;
    *v = strtoll (text, &end, 10);
    return *end == '\0';
}

static int grow (void **v, size_t n, size_t *cap, size_t elem, size_t max)
{
    void *nv;

    if (n < *cap)
        return 0;
    if (n >= max)
        return -1;
    nv = realloc (*v, (*cap ? *cap * 2 : 64) * elem);
    if (nv == NULL)
        return -1;
    *v = nv;
    *cap = *cap ? *cap * 2 : 64;
    return 0;
}

/* A number of the line within [lo, hi]. */
static bool bounded (const char *line, const char *key, long long lo, long long hi, long long *v)
{
    return number (line, key, v) && *v >= lo && *v <= hi;
}

static int parse_rank (struct hang_sample *s, const char *line)
{
    struct hang_rank r = {0};
    long long rank, world, cpu, io, window, nproc;
    char state[4];

    /* (the bounds keep the percentages of the report from overflowing) */
    if (!bounded (line, "rank", 0, DOCTOR_RANKS_MAX - 1, &rank) || !number (line, "world", &world)
        || !bounded (line, "cpu_ms", 0, HANG_CPU_MS_MAX, &cpu)
        || !bounded (line, "io", 0, LLONG_MAX, &io)
        || !bounded (line, "window_ms", 0, HANG_WINDOW_MS_MAX, &window)
        || !bounded (line, "nproc", 0, PROCS_PER_RANK_MAX, &nproc)
        || !word (line, "state", state, sizeof (state))
        || !word (line, "node", r.node, sizeof (r.node))
        || !word (line, "syscall", r.syscall, sizeof (r.syscall))
        || !word (line, "wchan", r.wchan, sizeof (r.wchan))
        || grow ((void **) &s->rank, s->nranks, &s->rank_cap, sizeof (r), DOCTOR_RANKS_MAX) < 0)
        return -1;
    r.rank = (long) rank;
    r.state = state[0];
    r.cpu_ms = (long) cpu;
    r.io_bytes = io;
    r.window_ms = window > 0 ? (long) window : 1;
    r.nproc = (int) nproc;
    /* (a probe that could not read the stacks, or a line without them: unknown) */
    if (!word (line, "coll", r.coll, sizeof (r.coll)) || r.coll[0] == '\0'
        || r.coll[strspn (r.coll, COLL_CHARS)] != '\0')
        snprintf (r.coll, sizeof (r.coll), "?");
    if (world > s->world_size && world <= DOCTOR_RANKS_MAX)
        s->world_size = (long) world;
    s->rank[s->nranks++] = r;
    return 0;
}

static int parse_socket (struct hang_sample *s, const char *line)
{
    struct hang_socket k = {0};
    long long rank, txq, rxq, retr;

    if (!number (line, "rank", &rank) || !number (line, "txq", &txq) || !number (line, "rxq", &rxq)
        || !number (line, "retr", &retr) || txq < 0 || rxq < 0 || retr < 0
        || !word (line, "local", k.local, sizeof (k.local))
        || !word (line, "remote", k.remote, sizeof (k.remote)))
        return -1;
    if (grow ((void **) &s->socket, s->nsockets, &s->socket_cap, sizeof (k), SAMPLE_SOCKETS_MAX)
        < 0)
        return -1;
    k.rank = (long) rank;
    k.txq = (unsigned long) txq;
    k.rxq = (unsigned long) rxq;
    k.retransmits = (unsigned long) retr;
    s->socket[s->nsockets++] = k;
    return 0;
}

static int parse_node (struct hang_sample *s, const char *line)
{
    char name[DOCTOR_NAME_MAX];
    long long cpu;

    if (number (line, "cpu_ms", &cpu) && cpu > s->probe_cpu_ms)
        s->probe_cpu_ms = (long) cpu;

    if (!word (line, "node", name, sizeof (name))
        || grow ((void **) &s->node, s->nnodes, &s->node_cap, sizeof (*s->node), DOCTOR_NODES_MAX)
               < 0)
        return -1;
    memcpy (s->node[s->nnodes++], name, sizeof (name));
    return 0;
}

static int parse_reach (struct hang_sample *s, const char *line)
{
    struct hang_reach r = {0};
    long long ok;

    if (!word (line, "node", r.node, sizeof (r.node))
        || !word (line, "addr", r.addr, sizeof (r.addr)) || !number (line, "ok", &ok)
        || grow ((void **) &s->reach, s->nreach, &s->reach_cap, sizeof (r), SAMPLE_SOCKETS_MAX) < 0)
        return -1;
    r.ok = ok != 0;
    s->reach[s->nreach++] = r;
    return 0;
}

int hang_sample_parse_line (struct hang_sample *s, const char *line)
{
    if (strncmp (line, "rank ", 5) == 0)
        return parse_rank (s, line);
    if (strncmp (line, "sock ", 5) == 0)
        return parse_socket (s, line);
    if (strncmp (line, "node ", 5) == 0)
        return parse_node (s, line);
    if (strncmp (line, "reach ", 6) == 0)
        return parse_reach (s, line);
    return line[strspn (line, " \t\r\n")] == '\0' ? 0 : -1;
}

static const char *state_word (char state)
{
    switch (state) {
    case 'R':
        return "running";
    case 'S':
        return "sleeping";
    case 'D':
        return "D state";
    case 'T':
        return "stopped";
    case 't':
        return "traced";
    case 'Z':
        return "exited";
    default:
        return "?";
    }
}

static void bytes_text (long long n, char *out, size_t size)
{
    if (n >= 10LL * 1024 * 1024)
        snprintf (out, size, "%lld MiB", n / (1024 * 1024));
    else if (n >= 10 * 1024)
        snprintf (out, size, "%lld KiB", n / 1024);
    else
        snprintf (out, size, "%lld B", n);
}

/* The ranks r waits on: those holding data it sent unread, or not
 * acknowledging what it sent. */
static void waits_on (const struct hang_sample *s, const long *peer, long r, char *out, size_t size)
{
    long *who = malloc ((s->nsockets + 1) * sizeof (*who));
    size_t n = 0;

    snprintf (out, size, "-");
    if (who == NULL)
        return;
    for (size_t i = 0; i < s->nsockets; i++) {
        if (peer[i] < 0)
            continue;
        if (s->socket[i].rank == r && s->socket[i].txq > 0)
            who[n++] = peer[i];
        else if (peer[i] == r && s->socket[i].rxq > 0)
            who[n++] = s->socket[i].rank;
    }
    if (n > 0)
        doctor_ranges_text (who, n, out, size);
    free (who);
}

size_t hang_report (FILE *f, const char *step, const struct hang_sample *s)
{
    char verdict[DOCTOR_LINE_MAX], wait[2 * HANG_WAIT_MAX + 4], io[32], on[96];
    long *peer = malloc ((s->nsockets + 1) * sizeof (*peer));
    long window = s->nranks > 0 ? s->rank[0].window_ms : 0;
    bool have_peers = peer != NULL && hang_peers (s, peer) == 0;
    size_t n;

    fprintf (f, DOCTOR_PROGRAM " hang: step %s, %zu ranks found on %zu nodes, sampled for %.1f s\n",
             step, s->nranks, s->nnodes, (double) window / 1000);
    fprintf (f, "%-7s %-16s %-9s %-34s %5s %9s  %-16s %s\n", "rank", "node", "state", "waits in",
             "cpu", "i/o", "collective", "waits on");
    for (size_t i = 0; i < s->nranks; i++) {
        const struct hang_rank *r = &s->rank[i];
        if (strcmp (r->syscall, "-") != 0)
            snprintf (wait, sizeof (wait), "%s (%s)", r->syscall, r->wchan);
        else
            snprintf (wait, sizeof (wait), "%s", r->wchan);
        bytes_text (r->io_bytes, io, sizeof (io));
        if (!have_peers)
            snprintf (on, sizeof (on), "?");
        else
            waits_on (s, peer, r->rank, on, sizeof (on));
        fprintf (f, "%-7ld %-16s %-9s %-34s %4ld%% %9s  %-16s %s\n", r->rank, r->node,
                 state_word (r->state), wait, r->cpu_ms * 100 / r->window_ms, io, r->coll, on);
    }
    free (peer);
    n = hang_verdict (s, verdict, sizeof (verdict));
    fprintf (f, "(each node's probe: at most %ld ms of CPU)\n", s->probe_cpu_ms);
    fprintf (f, "verdict: %s\n", verdict);
    return n;
}
