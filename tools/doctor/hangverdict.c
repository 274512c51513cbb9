/* hangverdict.c - from what every node's probe saw, the rank or node that
 * the step waits on, in the order a user would look: a rank that is
 * stopped, gone or stuck in the kernel; a path that drops data; a rank
 * that works while the others wait; the one rank that waits somewhere
 * else than the others; the rank that leaves its peers' data unread.
 */
#include <stdlib.h>
#include <string.h>

#include "hang.h"
#include "text.h"

#define LIST_MAX 160

struct endpoint {
    const char *addr;
    long rank;
};

/* What the verdict looks at: the sample, and the other end of each socket. */
struct view {
    const struct hang_sample *s;
    long *peer; /* per socket: the rank at its other end, -1 outside the step */
    long *culprit;
    size_t nculprits, culprit_cap;
    bool idle; /* no rank works */
    unsigned char *marked; /* by rank number: a culprit */
    size_t nmarked;
};

static int by_addr (const void *a, const void *b)
{
    return strcmp (((const struct endpoint *) a)->addr, ((const struct endpoint *) b)->addr);
}

static int by_rank (const void *a, const void *b)
{
    const struct hang_rank *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

void hang_sample_finish (struct hang_sample *s)
{
    size_t out = 0;

    if (s->nranks == 0)
        return;
    qsort (s->rank, s->nranks, sizeof (*s->rank), by_rank);
    for (size_t i = 0; i < s->nranks; i++)
        if (out == 0 || s->rank[out - 1].rank != s->rank[i].rank)
            s->rank[out++] = s->rank[i];
    s->nranks = out;
}

void hang_sample_free (struct hang_sample *s)
{
    free (s->rank);
    free (s->socket);
    free (s->node);
    free (s->reach);
    *s = (struct hang_sample) HANG_SAMPLE_INIT;
}

static const struct hang_rank *rank_of (const struct hang_sample *s, long rank)
{
    struct hang_rank key = {.rank = rank};
    return s->nranks ? bsearch (&key, s->rank, s->nranks, sizeof (key), by_rank) : NULL;
}

int hang_peers (const struct hang_sample *s, long *peer)
{
    struct endpoint *ends = malloc ((s->nsockets + 1) * sizeof (*ends));

    if (ends == NULL)
        return -1;
    for (size_t i = 0; i < s->nsockets; i++)
        ends[i] = (struct endpoint){s->socket[i].local, s->socket[i].rank};
    qsort (ends, s->nsockets, sizeof (*ends), by_addr);
    for (size_t i = 0; i < s->nsockets; i++) {
        struct endpoint key = {.addr = s->socket[i].remote}, *hit;
        hit = bsearch (&key, ends, s->nsockets, sizeof (key), by_addr);
        peer[i] = hit != NULL && hit->rank != s->socket[i].rank ? hit->rank : -1;
    }
    free (ends);
    return 0;
}

static void view_free (struct view *v)
{
    free (v->peer);
    free (v->culprit);
    free (v->marked);
}

static bool all_idle (const struct hang_sample *s);

static int view_build (struct view *v, const struct hang_sample *s)
{
    *v = (struct view){.s = s, .idle = all_idle (s)};
    v->peer = malloc ((s->nsockets + 1) * sizeof (*v->peer));
    /* the culprits: ranks found, or ranks of the world that were not */
    v->culprit_cap = s->nranks + (size_t) (s->world_size > 0 ? s->world_size : 0) + 1;
    v->culprit = malloc (v->culprit_cap * sizeof (*v->culprit));
    /* ranks are below DOCTOR_RANKS_MAX (hang.c), sorted: the last is the largest */
    v->nmarked = (size_t) (s->world_size > 0 ? s->world_size : 0);
    if (s->nranks > 0 && (size_t) s->rank[s->nranks - 1].rank >= v->nmarked)
        v->nmarked = (size_t) s->rank[s->nranks - 1].rank + 1;
    v->marked = calloc (v->nmarked + 1, 1);
    if (v->peer == NULL || v->culprit == NULL || v->marked == NULL || hang_peers (s, v->peer) < 0) {
        view_free (v);
        return -1;
    }
    return 0;
}

static bool active (const struct hang_rank *r)
{
    return r->cpu_ms * 100 >= (long) HANG_ACTIVE_PERCENT * r->window_ms
           || r->io_bytes >= HANG_ACTIVE_IO;
}

static bool is_culprit (const struct view *v, long rank)
{
    return rank >= 0 && (size_t) rank < v->nmarked && v->marked[rank];
}

static void culprits_clear (struct view *v)
{
    for (size_t i = 0; i < v->nculprits; i++)
        if (v->culprit[i] >= 0 && (size_t) v->culprit[i] < v->nmarked)
            v->marked[v->culprit[i]] = 0;
    v->nculprits = 0;
}

/* The ranks that are neither culprits nor working: those that wait. */
static size_t waiting (const struct view *v)
{
    size_t n = 0;

    for (size_t i = 0; i < v->s->nranks; i++)
        if (!is_culprit (v, v->s->rank[i].rank) && !active (&v->s->rank[i]))
            n++;
    return n;
}

/* "rank 5 on node3" or "ranks 5,9 on node3,node4" for the culprits. */
static void culprits_text (const struct view *v, char *out, size_t size)
{
    char ranks[LIST_MAX] = "", nodes[LIST_MAX] = "";
    long *copy = malloc ((v->nculprits + 1) * sizeof (*copy));

    if (copy != NULL) {
        memcpy (copy, v->culprit, v->nculprits * sizeof (*copy));
        doctor_ranges_text (copy, v->nculprits, ranks, sizeof (ranks));
        free (copy);
    }
    for (size_t i = 0; i < v->nculprits; i++) {
        const struct hang_rank *r = rank_of (v->s, v->culprit[i]);
        if (r != NULL)
            doctor_set_add (nodes, sizeof (nodes), r->node);
    }
    snprintf (out, size, "%s %s%s%s", v->nculprits == 1 ? "rank" : "ranks", ranks,
              nodes[0] ? " on " : "", nodes);
}

static void add_culprit (struct view *v, long rank)
{
    if (v->nculprits >= v->culprit_cap || rank < 0 || (size_t) rank >= v->nmarked
        || v->marked[rank])
        return;
    v->marked[rank] = 1;
    v->culprit[v->nculprits++] = rank;
}

/* Ranks in a state that no peer can end: stopped, traced, in D state, gone.
 * A rank in D state that worked in the window is not stuck there: a rank
 * that writes a checkpoint to a slow disk sits in D state between its
 * writes, and is a rank at work (below). */
static size_t by_state (struct view *v, char *out, size_t size)
{
    static const struct {
        const char *states, *what;
    } kinds[] = {
        {"T", "stopped (SIGSTOP or SIGTSTP: SIGCONT resumes it)"},
        {"t", "stopped by a debugger (ptrace)"},
        {"D", "in D state: uninterruptible, waiting on a file system or device"},
        {"Z", "exited (a zombie its parent has not reaped)"},
    };
    char who[2 * LIST_MAX];

    for (size_t k = 0; k < sizeof (kinds) / sizeof (kinds[0]); k++) {
        for (size_t i = 0; i < v->s->nranks; i++)
            if (strchr (kinds[k].states, v->s->rank[i].state) != NULL
                && (v->s->rank[i].state != 'D' || !active (&v->s->rank[i])))
                add_culprit (v, v->s->rank[i].rank);
        if (v->nculprits == 0)
            continue;
        culprits_text (v, who, sizeof (who));
        snprintf (out, size, "%s %s %s; %zu ranks wait on %s", who,
                  v->nculprits == 1 ? "is" : "are", kinds[k].what, waiting (v),
                  v->nculprits == 1 ? "it" : "them");
        return v->nculprits;
    }
    return 0;
}

/* Ranks of the step that no node's probe found. */
static size_t missing (struct view *v, char *out, size_t size)
{
    char ranks[LIST_MAX];

    for (long r = 0; r < v->s->world_size; r++)
        if (rank_of (v->s, r) == NULL)
            add_culprit (v, r);
    if (v->nculprits == 0)
        return 0;
    doctor_ranges_text (v->culprit, v->nculprits, ranks, sizeof (ranks));
    if (v->s->silent[0] != '\0')
        snprintf (out, size,
                  "%s %s did not answer, and %zu ranks wait on %s %s: cut off from the "
                  "others, or down",
                  strchr (v->s->silent, ',') != NULL ? "nodes" : "node", v->s->silent, waiting (v),
                  v->nculprits == 1 ? "rank" : "ranks", ranks);
    else
        snprintf (out, size,
                  "%s %s has no process on the nodes that answered: it ended while %zu ranks "
                  "wait on it, or its node did not answer",
                  v->nculprits == 1 ? "rank" : "ranks", ranks, waiting (v));
    return v->nculprits;
}

/* The node whose rank holds the local address addr ("10.0.0.3"), or NULL. */
static const char *node_of_addr (const struct hang_sample *s, const char *addr)
{
    size_t len = strlen (addr);

    for (size_t i = 0; i < s->nsockets; i++) {
        const char *local = s->socket[i].local, *colon = strrchr (local, ':');
        if (colon != NULL && (size_t) (colon - local) == len && memcmp (local, addr, len) == 0) {
            const struct hang_rank *r = rank_of (s, s->socket[i].rank);
            return r != NULL ? r->node : NULL;
        }
    }
    return NULL;
}

/* How many other nodes node could not reach, or were not reached from,
 * when the probes tried (hangreach.c). */
static size_t unreachable_partners (const struct hang_sample *s, const char *node)
{
    const char *seen[64];
    size_t n = 0;

    for (size_t i = 0; i < s->nreach && n < sizeof (seen) / sizeof (seen[0]); i++) {
        const char *to = node_of_addr (s, s->reach[i].addr), *other = NULL;
        bool known = false;
        if (s->reach[i].ok || to == NULL)
            continue;
        if (strcmp (s->reach[i].node, node) == 0)
            other = to;
        else if (strcmp (to, node) == 0)
            other = s->reach[i].node;
        for (size_t j = 0; other != NULL && j < n && !known; j++)
            known = strcmp (seen[j], other) == 0;
        if (other != NULL && !known && strcmp (other, node) != 0)
            seen[n++] = other;
    }
    return n;
}

/* The connections that retransmit unacknowledged data: their count, the
 * nodes at their ends (nodes), and the one or two nodes at an end of every
 * one of them (cand, NULL where none). */
/* Whether no rank works: the step waits, all of it. */
static bool all_idle (const struct hang_sample *s)
{
    for (size_t i = 0; i < s->nranks; i++)
        if (active (&s->rank[i]))
            return false;
    return true;
}

/* Data sent and not acknowledged: retransmitted, or held while the whole
 * step waits (a send through a route that fails locally, as to a node cut
 * off, is not counted as a retransmission). */
static bool stuck (const struct view *v, const struct hang_socket *k)
{
    return k->txq > 0 && (k->retransmits > 0 || v->idle);
}

static bool retransmitting (const struct hang_sample *s)
{
    for (size_t i = 0; i < s->nsockets; i++)
        if (s->socket[i].txq > 0 && s->socket[i].retransmits > 0)
            return true;
    return false;
}

static size_t stuck_connections (const struct view *v, const char *cand[2], char *nodes,
                                 size_t size)
{
    const struct hang_sample *s = v->s;
    size_t nstuck = 0;

    for (size_t i = 0; i < s->nsockets; i++) {
        const struct hang_rank *a = rank_of (s, s->socket[i].rank), *b;
        const char *bnode;
        if (!stuck (v, &s->socket[i]) || a == NULL)
            continue;
        b = v->peer[i] >= 0 ? rank_of (s, v->peer[i]) : NULL;
        bnode = b != NULL ? b->node : s->socket[i].remote;
        doctor_set_add (nodes, size, a->node);
        doctor_set_add (nodes, size, bnode);
        if (nstuck++ == 0) {
            cand[0] = a->node;
            cand[1] = strcmp (a->node, bnode) != 0 ? bnode : NULL;
            continue;
        }
        for (int c = 0; c < 2; c++)
            if (cand[c] != NULL && strcmp (cand[c], a->node) != 0 && strcmp (cand[c], bnode) != 0)
                cand[c] = NULL;
    }
    return nstuck;
}

/* Which of the pair cand[2] is cut off, by what the probes could reach: 0
 * or 1, -1 when that does not tell. */
static int cut_end (const struct hang_sample *s, const char *cand[2])
{
    size_t f0 = unreachable_partners (s, cand[0]), f1 = unreachable_partners (s, cand[1]);

    if (f0 >= 2 && f0 > f1)
        return 0;
    if (f1 >= 2 && f1 > f0)
        return 1;
    return -1;
}

/* An address of node, from its ranks' sockets, without the port. */
static int node_addr (const struct hang_sample *s, const char *node, char *out, size_t size)
{
    for (size_t i = 0; i < s->nsockets; i++) {
        const struct hang_rank *r = rank_of (s, s->socket[i].rank);
        const char *local = s->socket[i].local, *colon = strrchr (local, ':');
        if (r == NULL || strcmp (r->node, node) != 0 || strchr (local, '/') != NULL || !colon)
            continue;
        snprintf (out, size, "%.*s", (int) (colon - local), local);
        return 0;
    }
    return -1;
}

int hang_suspect_pair (const struct hang_sample *s, char pair[2][HANG_ENDPOINT_MAX])
{
    const char *cand[2] = {NULL, NULL};
    char nodes[LIST_MAX] = "";
    struct view v;
    int rc = -1;

    if (view_build (&v, s) < 0)
        return -1;
    if (stuck_connections (&v, cand, nodes, sizeof (nodes)) > 0 && cand[0] != NULL
        && cand[1] != NULL && cut_end (s, cand) < 0
        && node_addr (s, cand[0], pair[0], HANG_ENDPOINT_MAX) == 0
        && node_addr (s, cand[1], pair[1], HANG_ENDPOINT_MAX) == 0)
        rc = 0;
    view_free (&v);
    return rc;
}

/* Connections that retransmit data nobody acknowledges: a path that drops
 * it.  When one node is at an end of every such connection, it is cut off;
 * when two are, the one that other nodes cannot reach either; else the
 * path between them. */
static size_t dropped (struct view *v, char *out, size_t size)
{
    const char *cand[2] = {NULL, NULL};
    char nodes[LIST_MAX] = "", who[2 * LIST_MAX];
    size_t nstuck = stuck_connections (v, cand, nodes, sizeof (nodes));
    const char *plural = nstuck == 1 ? "" : "s", *verb = nstuck == 1 ? "s" : "";

    if (nstuck == 0)
        return 0;
    if (cand[0] != NULL && cand[1] != NULL) {
        int end = cut_end (v->s, cand);
        if (end >= 0)
            cand[1 - end] = NULL;
        /* held data that every node can still reach: a peer that does not
         * read (its window is full), for the rules below */
        else if (!retransmitting (v->s))
            return 0;
    }
    if ((cand[0] == NULL) == (cand[1] == NULL)) {
        snprintf (out, size,
                  "the network between %s drops data: %zu connection%s retransmit%s what is "
                  "not acknowledged",
                  nodes, nstuck, plural, verb);
        return 1;
    }
    if (cand[0] == NULL)
        cand[0] = cand[1];
    for (size_t i = 0; i < v->s->nranks; i++)
        if (strcmp (v->s->rank[i].node, cand[0]) == 0)
            add_culprit (v, v->s->rank[i].rank);
    culprits_text (v, who, sizeof (who));
    snprintf (out, size,
              "node %s is cut off: %zu connection%s to and from it retransmit%s data that is "
              "not acknowledged (%s)",
              cand[0], nstuck, plural, verb, v->nculprits > 0 ? who : "none of its ranks answered");
    return v->nculprits > 0 ? v->nculprits : 1;
}

/* Ranks that compute or do I/O while the others wait: the others wait on
 * them, a straggler or a loop that never reaches the next collective. */
static size_t working (struct view *v, char *out, size_t size)
{
    const struct hang_sample *s = v->s;
    char who[2 * LIST_MAX];
    size_t nwait;

    for (size_t i = 0; i < s->nranks; i++)
        if (active (&s->rank[i]))
            add_culprit (v, s->rank[i].rank);
    if (v->nculprits == 0)
        return 0;
    if ((nwait = waiting (v)) == 0) {
        snprintf (out, size,
                  "no hang seen: every rank used CPU or moved data in the window (ranks that "
                  "spin while they wait, as NCCL's do, look the same: sample again)");
        culprits_clear (v);
        return 0;
    }
    culprits_text (v, who, sizeof (who));
    snprintf (out, size, "%s %s while %zu ranks wait: the others wait on %s", who,
              v->nculprits == 1 ? "works (CPU or I/O)" : "work (CPU or I/O)", nwait,
              v->nculprits == 1 ? "it" : "them");
    return v->nculprits;
}

/* What a waiting rank sits in: its syscall, or its kernel wait. */
static const char *wait_of (const struct hang_rank *r)
{
    return strcmp (r->syscall, "-") != 0 ? r->syscall : r->wchan;
}

static const char *coll_of (const struct hang_rank *r)
{
    return r->coll;
}

/* The value of key that more than half the ranks share, but not all; the ranks with
 * another value become the culprits, and *count the ranks with it.  NULL when there is
 * no such value. */
static const char *odd_ones (struct view *v, const char *(*key) (const struct hang_rank *),
                             size_t *count)
{
    const struct hang_sample *s = v->s;
    const char *most = NULL;
    size_t best = 0;

    for (size_t i = 0; i < s->nranks && best * 2 <= s->nranks; i++) {
        size_t same = 0;
        for (size_t j = 0; j < s->nranks; j++)
            same += strcmp (key (&s->rank[i]), key (&s->rank[j])) == 0;
        if (same > best) {
            best = same;
            most = key (&s->rank[i]);
        }
    }
    if (most == NULL || best * 2 <= s->nranks || best == s->nranks)
        return NULL;
    for (size_t i = 0; i < s->nranks; i++)
        if (strcmp (key (&s->rank[i]), most) != 0)
            add_culprit (v, s->rank[i].rank);
    *count = best;
    return most;
}

/* The few ranks that wait in another call than the rest: they are not in
 * the collective the rest wait in (a sleep, a read of a file, a lock). */
static size_t odd_wait (struct view *v, char *out, size_t size)
{
    const struct hang_sample *s = v->s;
    const char *most;
    size_t best = 0;
    char who[2 * LIST_MAX];

    if ((most = odd_ones (v, wait_of, &best)) == NULL)
        return 0;
    culprits_text (v, who, sizeof (who));
    snprintf (out, size,
              "%s %s in %s, where the %zu others wait in %s: %s outside the collective they "
              "wait in",
              who, v->nculprits == 1 ? "waits" : "wait", wait_of (rank_of (s, v->culprit[0])), best,
              most, v->nculprits == 1 ? "it is" : "they are");
    return v->nculprits;
}

/* The ranks whose stacks show another collective than the rest's: all wait alike in
 * /proc, and a rank that broadcasts where the others all-reduce looks as they do.  Only
 * where every rank's stack was read; "-" (no collective of a library that names its
 * functions: torch's own all-reduce is hidden in Debian's libtorch) is a value too. */
static size_t odd_collective (struct view *v, char *out, size_t size)
{
    const struct hang_sample *s = v->s;
    const char *most, *theirs;
    size_t best = 0;
    bool alike = true;
    char who[2 * LIST_MAX], others[HANG_WAIT_MAX + 32];

    for (size_t i = 0; i < s->nranks; i++)
        if (strcmp (s->rank[i].coll, "?") == 0)
            return 0;
    if ((most = odd_ones (v, coll_of, &best)) == NULL)
        return 0;
    theirs = rank_of (s, v->culprit[0])->coll;
    for (size_t i = 1; i < v->nculprits; i++)
        alike &= strcmp (rank_of (s, v->culprit[i])->coll, theirs) == 0;
    culprits_text (v, who, sizeof (who));
    if (strcmp (most, "-") == 0)
        snprintf (others, sizeof (others), "another collective");
    else
        snprintf (others, sizeof (others), "%s", most);
    if (alike && strcmp (theirs, "-") != 0)
        snprintf (out, size,
                  "%s %s in %s, where the %zu others are in %s: the ranks do not call the same "
                  "collective",
                  who, v->nculprits == 1 ? "is" : "are", theirs, best, others);
    else
        snprintf (out, size,
                  "%s %s not in %s, where the %zu others are: the ranks do not call the same "
                  "collective",
                  who, v->nculprits == 1 ? "is" : "are", others, best);
    return v->nculprits;
}

/* Ranks whose sockets hold data that peers sent and they never read. */
static size_t unread (struct view *v, char *out, size_t size)
{
    const struct hang_sample *s = v->s;
    char who[2 * LIST_MAX];

    for (size_t i = 0; i < s->nsockets; i++)
        if (s->socket[i].rxq > 0 && v->peer[i] >= 0 && rank_of (s, s->socket[i].rank) != NULL)
            add_culprit (v, s->socket[i].rank);
    if (v->nculprits == 0 || v->nculprits * 2 > s->nranks) {
        culprits_clear (v);
        return 0;
    }
    culprits_text (v, who, sizeof (who));
    snprintf (out, size,
              "%s %s not read what peers sent %s; %zu ranks wait: %s in another collective "
              "than theirs, or in none",
              who, v->nculprits == 1 ? "has" : "have", v->nculprits == 1 ? "it" : "them",
              waiting (v), v->nculprits == 1 ? "it is" : "they are");
    return v->nculprits;
}

size_t hang_verdict (const struct hang_sample *s, char *out, size_t size)
{
    size_t (*const rules[]) (struct view *, char *, size_t) = {
        by_state, missing, dropped, working, odd_wait, odd_collective, unread,
    };
    struct view v;
    size_t n = 0;

    snprintf (out, size,
              "no rank stands out: all %zu ranks wait alike. Ranks that call the "
              "same collective with other sizes look so, and other collectives where "
              "their library does not name its functions; run with "
              "TORCH_DISTRIBUTED_DEBUG=DETAIL to have PyTorch name them",
              s->nranks);
    if (s->nranks == 0) {
        snprintf (out, size, "no process of the step was found on the nodes that answered");
        return 0;
    }
    if (view_build (&v, s) < 0) {
        snprintf (out, size, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < sizeof (rules) / sizeof (rules[0]); i++) {
        culprits_clear (&v);
        if ((n = rules[i](&v, out, size)) > 0 || strncmp (out, "no hang", 7) == 0)
            break;
    }
    view_free (&v);
    return n;
}
