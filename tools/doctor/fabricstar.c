/* fabricstar.c - the fabric check on the doctor's star: each node's
 * leader listens before its record goes to rank 0 and runs the plan that
 * comes back on the same connection; rank 0 plans, runs its own node's
 * part, gathers the results and judges them with the report's other
 * findings. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "fabric.h"
#include "facts.h"
#include "fabricstar.h"
#include "net.h"
#include "text.h"

#define P DOCTOR_PROGRAM ": "

long fabric_budget_ms (size_t nodes)
{
    return (long) fabric_rounds (nodes) * FABRIC_PAIR_MS + 1000;
}

/* The address this node's collectives use: that of the interface
 * NCCL_SOCKET_IFNAME names, else the one the kernel sends from to
 * MASTER_ADDR (NCCL and gloo pick theirs the same way). */
static int self_addr (const struct doctor_rank *self, char *out, size_t size)
{
    struct sockaddr_storage dst, src;
    socklen_t dlen;
    const char *ifname = doctor_facts_ifname ();
    char found[DOCTOR_NAME_MAX];

    if (doctor_sockaddr (self->master_addr, self->master_port, &dst, &dlen) < 0)
        return -1;
    if (ifname != NULL && ifname[0] != '^'
            ? doctor_interface_address (ifname, dst.ss_family, &src, found, sizeof (found)) < 0
            : doctor_route_source (&dst, dlen, &src) < 0)
        return -1;
    doctor_addr_text (&src, out, size);
    return 0;
}

bool fabric_on_master_node (const struct doctor_rank *self)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd;
    bool local;

    if (doctor_sockaddr (self->master_addr, "0", &ss, &len) < 0
        || (fd = socket (ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return false;
    /* (only a local address can be bound) */
    local = bind (fd, (const struct sockaddr *) &ss, len) == 0;
    close (fd);
    return local;
}

int fabric_open (struct doctor_rank *self, int *tfd, int *ufd)
{
    char *end;
    long port = strtol (self->master_port, &end, 10);

    *tfd = *ufd = -1;
    self->fabric_port = 0;
    if (*end != '\0' || port < 1 || port > 65535) {
        snprintf (self->fabric_note, sizeof (self->fabric_note), "MASTER_PORT is not a port");
        return -1;
    }
    if (self_addr (self, self->fabric_addr, sizeof (self->fabric_addr)) < 0) {
        snprintf (self->fabric_note, sizeof (self->fabric_note),
                  "it has no address of its own toward MASTER_ADDR");
        return -1;
    }
    (void) fabric_interface (self->fabric_addr, self->fabric_if, sizeof (self->fabric_if),
                             &self->fabric_mtu);
    if (fabric_listen (self->fabric_addr, port, tfd, ufd) < 0) {
        snprintf (self->fabric_note, sizeof (self->fabric_note), "cannot listen on %s port %ld: %s",
                  self->fabric_addr, port, strerror (errno));
        return -1;
    }
    self->fabric_port = port;
    return 0;
}

/* A block of word from fd: its body into buf (DOCTOR_MSG_MAX), checked;
 * the length, or -1. */
static long read_block (int fd, const struct doctor_key *key, const char *word, const char *a,
                        const char *b, const char *line, size_t got, char *buf, long deadline)
{
    char mac[DOCTOR_MAC_HEX + 1];
    size_t len;

    if (doctor_block_header_parse (word, line, got, &len, mac) < 0
        || doctor_read_exact (fd, buf, len, deadline) < 0
        || doctor_block_check (key, word, a, b, buf, len, mac) < 0)
        return -1;
    return (long) len;
}

/* A block to fd: header and body in one send. */
static int send_block (int fd, const struct doctor_key *key, const char *word, const char *a,
                       const char *b, char *msg, size_t len, long deadline)
{
    char line[DOCTOR_AUTH_LINE_MAX];
    int n =
        doctor_block_header (key, word, a, b, msg + DOCTOR_AUTH_LINE_MAX, len, line, sizeof (line));

    if (n < 0)
        return -1;
    memcpy (msg + DOCTOR_AUTH_LINE_MAX - n, line, (size_t) n);
    return doctor_send_all (fd, msg + DOCTOR_AUTH_LINE_MAX - n, (size_t) n + len, deadline);
}

/* Where a leader's results go: rank 0, on the connection its record came on. */
struct reply {
    int fd;
    const struct doctor_key *key;
    const char *pn, *sn;
    const struct doctor_rank *self;
    char *msg;
    bool sent;
};

static void reply_done (void *arg, const struct fabric_pair *out, size_t n)
{
    struct reply *r = arg;
    int len = fabric_result_encode (out, n, r->msg + DOCTOR_AUTH_LINE_MAX, DOCTOR_MSG_MAX);

    r->sent = len > 0
              && send_block (r->fd, r->key, "fabric-result", r->sn, r->pn, r->msg, (size_t) len,
                             doctor_now_ms () + 5000)
                     == 0;
    if (!r->sent)
        fprintf (stderr, P "rank %ld on %s: cannot send the fabric check's results to rank 0\n",
                 r->self->rank, r->self->node);
}

/* One plan from rank 0 (its header line in line): run, its results sent
 * when its paths are done, the others' paths served until rank 0 says
 * more.  0, or -1 said on stderr. */
static int follow_one (int fd, const struct doctor_key *key, const char *pn, const char *sn,
                       const char *line, size_t got, const struct doctor_rank *self, int tfd,
                       int ufd)
{
    struct reply r = {.fd = fd, .key = key, .pn = pn, .sn = sn, .self = self};
    struct fabric_pair out[FABRIC_ROUNDS_MAX];
    struct fabric_plan plan;
    long len;

    if ((r.msg = malloc (DOCTOR_AUTH_LINE_MAX + DOCTOR_MSG_MAX)) == NULL
        || (len = read_block (fd, key, "fabric-plan", pn, sn, line, got, r.msg,
                              doctor_now_ms () + 5000))
               < 0
        || fabric_plan_decode (r.msg, (size_t) len, &plan) < 0) {
        fprintf (stderr,
                 P "rank %ld on %s: the fabric check's plan from rank 0 is not signed "
                   "with this step's key, or is not one\n",
                 self->rank, self->node);
        free (r.msg);
        return -1;
    }
    struct fabric_end end = {.key = key,
                             .addr = self->fabric_addr,
                             .mtu = self->fabric_mtu,
                             .tfd = tfd,
                             .ufd = ufd,
                             .stop_fd = fd,
                             .done = reply_done,
                             .arg = &r};
    fabric_run (&end, &plan, doctor_now_ms () + fabric_budget_ms (plan.nodes), out);
    free (r.msg);
    return r.sent ? 0 : -1;
}

int fabric_follow (int fd, const struct doctor_key *key, const char *pn, const char *sn, char *line,
                   size_t size, size_t *got, const struct doctor_rank *self, int tfd, int ufd)
{
    const char *word = "fabric-plan ";
    int ran = 0;

    /* the plan, then maybe another for the paths rank 0 wants measured
     * again, then the verdict */
    while (*got > strlen (word) && strncmp (line, word, strlen (word)) == 0) {
        if (follow_one (fd, key, pn, sn, line, *got, self, tfd, ufd) < 0)
            return -1;
        ran = 1;
        *got = doctor_read_line (fd, line, size, doctor_now_ms () + FABRIC_BUDGET_MAX_MS);
    }
    return ran;
}

/* ---- rank 0 ---- */

struct lead {
    const struct doctor_key *key;
    struct fabric_node *nodes;
    const struct fabric_peer **leader; /* leader[i]: node i's, NULL for rank 0's */
    size_t n;
    bool *planned;
    long *ref_to; /* per node, the target of its reference path measured again, -1 none */
    struct fabric_pair *pairs;
    size_t npairs;
};

static int by_rank (const void *a, const void *b)
{
    const struct fabric_peer *x = *(const struct fabric_peer *const *) a;
    const struct fabric_peer *y = *(const struct fabric_peer *const *) b;
    return (x->rec->rank > y->rec->rank) - (x->rec->rank < y->rec->rank);
}

static void node_of (struct fabric_node *node, const struct doctor_rank *r)
{
    memcpy (node->name, r->node, sizeof (node->name));
    memcpy (node->addr, r->fabric_addr, sizeof (node->addr));
    memcpy (node->ifname, r->fabric_if, sizeof (node->ifname));
    memcpy (node->note, r->fabric_note, sizeof (node->note));
    node->port = r->fabric_port > 0 ? r->fabric_port : 0;
    node->mtu = r->fabric_mtu;
}

/* The nodes in rank order: rank 0's first, then each leader's. */
static int lead_nodes (struct lead *l, const struct doctor_rank *me,
                       const struct fabric_peer *peers, size_t npeers)
{
    size_t k = 1;

    l->nodes = calloc (npeers + 1, sizeof (*l->nodes));
    l->leader = calloc (npeers + 1, sizeof (*l->leader));
    l->planned = calloc (npeers + 1, sizeof (*l->planned));
    l->ref_to = calloc (npeers + 1, sizeof (*l->ref_to));
    if (l->nodes == NULL || l->leader == NULL || l->planned == NULL || l->ref_to == NULL)
        return -1;
    for (size_t i = 0; i < npeers; i++)
        if (peers[i].rec->fabric_port >= 0)
            l->leader[k++] = &peers[i];
    qsort (l->leader + 1, k - 1, sizeof (*l->leader), by_rank);
    node_of (&l->nodes[0], me);
    for (size_t i = 1; i < k; i++)
        node_of (&l->nodes[i], l->leader[i]->rec);
    l->n = k;
    l->pairs = calloc (k * FABRIC_ROUNDS_MAX + 1, sizeof (*l->pairs));
    return l->pairs != NULL ? 0 : -1;
}

/* A plan to its node's leader; whether it went. */
static bool send_plan (const struct lead *l, const struct fabric_plan *plan, char *msg)
{
    const struct fabric_peer *p = l->leader[plan->index];
    int n = fabric_plan_encode (plan, msg + DOCTOR_AUTH_LINE_MAX, DOCTOR_MSG_MAX);

    return n > 0
           && send_block (p->fd, l->key, "fabric-plan", p->pn, p->sn, msg, (size_t) n,
                          doctor_now_ms () + 1000)
                  == 0;
}

static void lead_plans (struct lead *l, char *msg)
{
    struct fabric_plan plan;

    for (size_t i = 1; i < l->n; i++) {
        if (l->nodes[i].port == 0)
            continue;
        fabric_plan_make (l->nodes, l->n, (uint32_t) i, &plan);
        l->planned[i] = send_plan (l, &plan, msg);
    }
}

/* A node's paths measured again, out[k]: each suspect with its reference. */
static void merge_again (struct lead *l, const struct fabric_pair *out, size_t k)
{
    const struct fabric_pair *ref = NULL;

    for (size_t j = 0; j < k; j++)
        if ((long) out[j].to == l->ref_to[out[j].from])
            ref = &out[j];
    for (size_t j = 0; j < k; j++)
        if (&out[j] != ref)
            fabric_remeasured (l->pairs, l->npairs, &out[j], ref);
}

/* The results of the leaders in `which`: appended, or when again, each
 * path measured again merged with its first sample. */
static void lead_gather (struct lead *l, struct doctor_result *res, char *msg, long deadline,
                         bool again)
{
    struct fabric_pair more[FABRIC_ROUNDS_MAX];
    char line[DOCTOR_AUTH_LINE_MAX];

    for (size_t i = 1; i < l->n; i++) {
        const struct fabric_peer *p = l->leader[i];
        struct fabric_pair *into = again ? more : l->pairs + l->npairs;
        size_t got, k = 0;
        long len;
        if (!l->planned[i])
            continue;
        got = doctor_read_line (p->fd, line, sizeof (line), deadline);
        if (got == 0
            || (len = read_block (p->fd, l->key, "fabric-result", p->sn, p->pn, line, got, msg,
                                  deadline))
                   < 0
            || fabric_result_decode (msg, (size_t) len, (uint32_t) i, (uint32_t) l->n, into,
                                     FABRIC_ROUNDS_MAX, &k)
                   < 0) {
            doctor_warning (res,
                            "fabric: %s sent no results of its paths in time (its rank %ld's "
                            "stderr says why)",
                            l->nodes[i].name, p->rec->rank);
            continue;
        }
        if (again)
            merge_again (l, more, k);
        else
            l->npairs += k;
    }
}

/* Each node's plan of the suspects it sent: again[n]. */
static void add_target (const struct lead *l, struct fabric_plan *a, const struct fabric_pair *p)
{
    struct fabric_target *t = &a->target[a->ntargets];

    if (a->ntargets == FABRIC_ROUNDS_MAX)
        return;
    t->round = p->round;
    t->to = p->to;
    memcpy (t->name, l->nodes[p->to].name, sizeof (t->name));
    memcpy (t->addr, l->nodes[p->to].addr, sizeof (t->addr));
    t->port = l->nodes[p->to].port;
    t->mtu = l->nodes[p->to].mtu;
    a->ntargets++;
}

/* The fastest path of node `from` in the first samples that is not a
 * suspect: its reference; NULL for none. */
static const struct fabric_pair *reference (const struct lead *l, uint32_t from,
                                            const bool *suspect)
{
    const struct fabric_pair *best = NULL;

    for (size_t i = 0; i < l->npairs; i++) {
        const struct fabric_pair *p = &l->pairs[i];
        if (p->from != from || suspect[i] || p->conn != FABRIC_OK || p->usecs <= 0)
            continue;
        if (best == NULL || (double) p->bytes / p->usecs > (double) best->bytes / best->usecs)
            best = p;
    }
    return best;
}

/* Each node's plan: its reference path first, then the suspects it sent:
 * again[n].  Timed samples, each as long as the others. */
static void plans_again (struct lead *l, const size_t *idx, size_t k, struct fabric_plan *again)
{
    bool *suspect = calloc (l->npairs + 1, sizeof (*suspect));
    size_t *sent = calloc (l->n, sizeof (*sent));

    for (size_t i = 0; i < l->n; i++) {
        again[i] = (struct fabric_plan){.index = (uint32_t) i,
                                        .nodes = (uint32_t) l->n,
                                        .sample_ms = FABRIC_AGAIN_SAMPLE_MS,
                                        .timed = true};
        l->ref_to[i] = -1;
    }
    for (size_t j = 0; j < k && suspect != NULL && sent != NULL; j++) {
        suspect[idx[j]] = true;
        sent[l->pairs[idx[j]].from]++;
    }
    for (size_t i = 0; i < l->n && suspect != NULL && sent != NULL; i++) {
        const struct fabric_pair *ref = reference (l, (uint32_t) i, suspect);
        if (sent[i] == 0 || sent[i] == FABRIC_ROUNDS_MAX || ref == NULL)
            continue;
        add_target (l, &again[i], ref);
        l->ref_to[i] = ref->to;
    }
    for (size_t j = 0; j < k; j++)
        add_target (l, &again[l->pairs[idx[j]].from], &l->pairs[idx[j]]);
    free (suspect);
    free (sent);
}

/* Whether plan's nodes (its sender, its targets) are free in `busy`;
 * marks them busy when they are. */
static bool take_nodes (bool *busy, const struct fabric_plan *plan)
{
    if (busy[plan->index])
        return false;
    for (size_t j = 0; j < plan->ntargets; j++)
        if (busy[plan->target[j].to])
            return false;
    busy[plan->index] = true;
    for (size_t j = 0; j < plan->ntargets; j++)
        busy[plan->target[j].to] = true;
    return true;
}

/* One batch of the nodes' paths measured again, no two touching one node:
 * the others' by their plans, rank 0's here (its node's listener still
 * serves in the child), then the others' results.  Each plan run is taken
 * out of again (ntargets 0). */
static void again_batch (struct lead *l, struct doctor_result *res, char *msg,
                         const struct doctor_rank *me, struct fabric_plan *again, bool *busy)
{
    long deadline = doctor_now_ms () + FABRIC_ROUNDS_MAX * FABRIC_PAIR_MS + 1000;
    struct fabric_pair out[FABRIC_ROUNDS_MAX];
    bool own = false;

    memset (busy, 0, l->n * sizeof (*busy));
    memset (l->planned, 0, l->n * sizeof (*l->planned));
    for (size_t i = 0; i < l->n; i++) {
        if (again[i].ntargets == 0 || !take_nodes (busy, &again[i]))
            continue;
        if (i == 0) {
            own = true;
            continue;
        }
        l->planned[i] = send_plan (l, &again[i], msg);
        again[i].ntargets = 0;
    }
    if (own) {
        struct fabric_end end = {.key = l->key,
                                 .addr = me->fabric_addr,
                                 .mtu = me->fabric_mtu,
                                 .tfd = -1,
                                 .ufd = -1,
                                 .stop_fd = -1};
        fabric_run (&end, &again[0], deadline, out);
        merge_again (l, out, again[0].ntargets);
        again[0].ntargets = 0;
    }
    lead_gather (l, res, msg, deadline, true);
}

/* The paths that came out slow, measured again while the rest of the step
 * is quiet, in batches of nodes that share no node: on a busy node a
 * sample can lose the CPU, a slow link stays slow.  For at most
 * FABRIC_AGAIN_MS. */
static void lead_again (struct lead *l, struct doctor_result *res, char *msg,
                        const struct doctor_rank *me)
{
    size_t *idx = calloc (l->npairs + 1, sizeof (*idx)), k, left;
    struct fabric_plan *again = calloc (l->n, sizeof (*again));
    bool *busy = calloc (l->n, sizeof (*busy));
    long until = doctor_now_ms () + FABRIC_AGAIN_MS;

    if (idx != NULL && again != NULL && busy != NULL
        && (k = fabric_suspects (l->pairs, l->npairs, idx)) > 0) {
        plans_again (l, idx, k, again);
        do {
            again_batch (l, res, msg, me, again, busy);
            for (left = 0, k = 0; k < l->n; k++)
                left += again[k].ntargets > 0;
        } while (left > 0 && doctor_now_ms () < until);
    }
    free (idx);
    free (again);
    free (busy);
}

static void pipe_done (void *arg, const struct fabric_pair *out, size_t n)
{
    char buf[DOCTOR_MSG_MAX];
    int len = fabric_result_encode (out, n, buf, sizeof (buf));

    /* (a pipe: the whole block fits in its buffer) */
    if (len > 0 && write (*(int *) arg, buf, (size_t) len) != len)
        fprintf (stderr, P "cannot pass rank 0's node's fabric results on\n");
    close (*(int *) arg);
}

/* Rank 0's own node's part, in a child, so that rank 0 gathers the others'
 * results while its node serves their paths: its results come on *rfd,
 * and it stops when *stop is closed.  The child's pid, or -1. */
static pid_t own_part (const struct fabric_end *base, const struct fabric_plan *plan, long deadline,
                       int *rfd, int *stop)
{
    int res[2], halt[2];
    pid_t pid;

    if (pipe2 (res, O_CLOEXEC) < 0)
        return -1;
    if (pipe2 (halt, O_CLOEXEC) < 0) {
        close (res[0]);
        close (res[1]);
        return -1;
    }
    if ((pid = fork ()) < 0) {
        close (res[0]);
        close (res[1]);
        close (halt[0]);
        close (halt[1]);
        return -1;
    }
    if (pid == 0) {
        struct fabric_pair out[FABRIC_ROUNDS_MAX];
        struct fabric_end end = *base;
        close (res[0]);
        close (halt[1]);
        end.stop_fd = halt[0];
        end.done = pipe_done;
        end.arg = &res[1];
        fabric_run (&end, plan, deadline, out);
        _exit (0);
    }
    close (res[1]);
    close (halt[0]);
    *rfd = res[0];
    *stop = halt[1];
    return pid;
}

/* The child's results, into l's pairs. */
static void own_results (struct lead *l, int rfd, long deadline)
{
    char buf[DOCTOR_MSG_MAX];
    size_t got = 0, k = 0;
    struct pollfd p = {.fd = rfd, .events = POLLIN};
    ssize_t n;

    while (got < sizeof (buf) && poll (&p, 1, (int) (deadline - doctor_now_ms ())) > 0
           && (n = read (rfd, buf + got, sizeof (buf) - got)) > 0)
        got += (size_t) n;
    if (fabric_result_decode (buf, got, 0, (uint32_t) l->n, l->pairs, FABRIC_ROUNDS_MAX, &k) == 0)
        l->npairs = k;
}

static void own_end (pid_t pid, int stop)
{
    long until = doctor_now_ms () + 2000;

    close (stop);
    while (waitpid (pid, NULL, WNOHANG) == 0) {
        if (doctor_now_ms () > until) {
            kill (pid, SIGKILL);
            (void) waitpid (pid, NULL, 0);
            return;
        }
        poll (NULL, 0, 10);
    }
}

int fabric_lead (const struct doctor_key *key, const struct doctor_rank *self,
                 const struct fabric_peer *peers, size_t npeers, enum fabric_mode mode,
                 struct doctor_result *res)
{
    struct lead l = {.key = key};
    struct doctor_rank me = *self;
    struct fabric_plan plan;
    char *msg = malloc (DOCTOR_AUTH_LINE_MAX + DOCTOR_MSG_MAX);
    int tfd = -1, ufd = -1, rc = -1, rfd = -1, stop = -1;
    pid_t pid = -1;
    long deadline;

    (void) fabric_open (&me, &tfd, &ufd);
    if (msg == NULL || lead_nodes (&l, &me, peers, npeers) < 0)
        goto out;
    rc = 0;
    if (l.n < 2) {
        snprintf (res->fabric, sizeof (res->fabric),
                  "fabric: one node, no path between nodes to check");
        goto out;
    }
    deadline = doctor_now_ms () + fabric_budget_ms (l.n);
    if (tfd >= 0) {
        struct fabric_end end = {
            .key = key, .addr = me.fabric_addr, .mtu = me.fabric_mtu, .tfd = tfd, .ufd = ufd};
        fabric_plan_make (l.nodes, l.n, 0, &plan);
        pid = own_part (&end, &plan, deadline, &rfd, &stop);
    }
    lead_plans (&l, msg);
    if (pid > 0)
        own_results (&l, rfd, deadline + 1000);
    lead_gather (&l, res, msg, deadline + 2000, false);
    lead_again (&l, res, msg, &me);
    rc = fabric_judge (res, l.nodes, l.n, l.pairs, l.npairs, mode, res->fabric,
                       sizeof (res->fabric));
out:
    if (pid > 0)
        own_end (pid, stop);
    if (rfd >= 0)
        close (rfd);
    if (tfd >= 0)
        close (tfd);
    if (ufd >= 0)
        close (ufd);
    free (msg);
    free (l.nodes);
    free (l.leader);
    free (l.planned);
    free (l.ref_to);
    free (l.pairs);
    return rc;
}
