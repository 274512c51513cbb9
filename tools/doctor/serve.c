/* serve.c - rank 0: take each rank's signed record until every task
 * checked in or the deadline passed, check them, report, and answer each
 * rank with a signed verdict.
 *
 * Anyone can connect to MASTER_PORT, so what a connection costs before it
 * shows it knows the step's key is bounded: a few hundred bytes of state,
 * DOCTOR_HANDSHAKE_MS of time, a place among at most as many unproven
 * connections as the step has ranks and 64 more, and one HMAC.  When those
 * places are full a new connection takes one from the source address that
 * holds the most (its oldest), so a stranger's flood of connections pushes
 * out its own.  A connection whose hello carried the key's MAC moves to
 * places of its own, which no new connection takes: a rank of the step that
 * got that far keeps its place until its record is in or its time is up.
 * Only signed records count as ranks. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "doctor.h"
#include "auth.h"
#include "net.h"
#include "fabricstar.h"
#include "serve.h"
#include "text.h"

#define PENDING_MAX 4096 /* unproven connections at once */
#define EXTRA_RECORDS 64 /* signed records beyond WORLD_SIZE - 1 kept for the report */
#define ACCEPT_BACKOFF_MS 100 /* out of file descriptors: wait before accepting again */
#define ACCEPT_BATCH                                                                               \
    64 /* connections taken per wake, so that a flood of them
                           cannot keep the ones already in from being read */

enum stage { HELLO, HEADER, RECORD };

/* A connection that has not shown a valid record yet. */
struct pending {
    int fd;
    enum stage stage;
    bool proven; /* its hello carried the key's MAC */
    long since_ms;
    char addr[DOCTOR_NAME_MAX];
    char pn[DOCTOR_NONCE_HEX + 1], sn[DOCTOR_NONCE_HEX + 1];
    char line[DOCTOR_AUTH_LINE_MAX];
    size_t llen;
    char mac[DOCTOR_MAC_HEX + 1];
    char *rec; /* DOCTOR_MSG_MAX bytes, only once a header came */
    size_t reclen, recgot;
};

/* A rank that signed its record: it waits for the verdict. */
struct signed_rank {
    int fd;
    char pn[DOCTOR_NONCE_HEX + 1], sn[DOCTOR_NONCE_HEX + 1];
    struct doctor_rank rec;
};

/* A source address and how many unproven connections it holds, for the
 * choice of the one that gives way (a table rebuilt at each choice). */
struct addr_count {
    const char *addr; /* NULL: a free slot */
    size_t n;
};

struct server {
    const struct doctor_key *key;
    int lfd;
    long backoff_until;
    size_t world;
    struct pending *pending; /* unproven and proven, in any order */
    size_t npending, pending_max;
    size_t nproven, unproven_max, proven_max; /* unproven: npending - nproven */
    struct addr_count *counts; /* count_slots slots, a power of two */
    size_t count_slots;
    struct signed_rank *ranks;
    size_t nranks, ranks_max;
    long *procid_of_rank; /* the task whose record holds each rank, -2: none */
    size_t unauthenticated;
    char unauthenticated_from[DOCTOR_LINE_MAX / 2];
};

/* One fd per rank: raise the soft limit to the hard one for big steps. */
static void raise_fd_limit (void)
{
    struct rlimit rl;

    if (getrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit (RLIMIT_NOFILE, &rl);
    }
}

/* Close pending connection i; one that never showed the key is counted
 * for the report. */
static void drop (struct server *s, size_t i)
{
    struct pending *p = &s->pending[i];

    close (p->fd);
    free (p->rec);
    if (p->proven)
        s->nproven--;
    else {
        s->unauthenticated++;
        doctor_set_add (s->unauthenticated_from, sizeof (s->unauthenticated_from), p->addr);
    }
    s->pending[i] = s->pending[--s->npending];
}

static uint32_t addr_hash (const char *addr)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *addr != '\0'; addr++)
        h = (h ^ (unsigned char) *addr) * 16777619u;
    return h;
}

/* The count of addr's unproven connections, in a table of s->count_slots
 * slots (more than there are connections, so a free one is always found). */
static struct addr_count *count_of (struct server *s, const char *addr)
{
    size_t mask = s->count_slots - 1, i = addr_hash (addr) & mask;

    while (s->counts[i].addr != NULL && strcmp (s->counts[i].addr, addr) != 0)
        i = (i + 1) & mask;
    s->counts[i].addr = addr;
    return &s->counts[i];
}

/* Make room among the unproven connections: close the oldest of the
 * source address that holds the most.  Two passes over them, so a flood
 * costs rank 0 time in proportion to the places, not to their square. */
static void give_way (struct server *s)
{
    size_t i, victim = SIZE_MAX, most = 0;

    memset (s->counts, 0, s->count_slots * sizeof (*s->counts));
    for (i = 0; i < s->npending; i++)
        if (!s->pending[i].proven)
            count_of (s, s->pending[i].addr)->n++;
    for (i = 0; i < s->npending; i++) {
        struct pending *p = &s->pending[i];
        size_t n;
        if (p->proven)
            continue;
        n = count_of (s, p->addr)->n;
        if (victim == SIZE_MAX || n > most
            || (n == most && p->since_ms < s->pending[victim].since_ms)) {
            victim = i;
            most = n;
        }
    }
    if (victim != SIZE_MAX)
        drop (s, victim);
}

static void accept_all (struct server *s)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, batch;

    for (batch = 0; batch < ACCEPT_BATCH; batch++) {
        len = sizeof (ss);
        fd = accept4 (s->lfd, (struct sockaddr *) &ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            /* the waiting connection stays in the backlog and poll says so
             * at once: without a pause this loop would spin */
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                if (s->npending > s->nproven) {
                    give_way (s);
                    continue;
                }
                s->backoff_until = doctor_now_ms () + ACCEPT_BACKOFF_MS;
            }
            return;
        }
        if (s->npending - s->nproven == s->unproven_max)
            give_way (s);
        struct pending *p = &s->pending[s->npending++];
        memset (p, 0, sizeof (*p));
        p->fd = fd;
        p->stage = HELLO;
        p->since_ms = doctor_now_ms ();
        doctor_addr_text (&ss, p->addr, sizeof (p->addr));
    }
}

/* A signed record: it counts once per task, and the rank, told so, waits
 * for the verdict on its connection. */
static void admit (struct server *s, size_t i, const struct doctor_rank *rec)
{
    struct pending *p = &s->pending[i];
    struct signed_rank *r = NULL;
    bool in_range = rec->rank >= 0 && (size_t) rec->rank < s->world;
    char out[DOCTOR_AUTH_LINE_MAX];
    int n;

    /* the same task again: it connected anew, not told its first record was
     * taken, and this connection is the one it now waits on */
    if (in_range && s->procid_of_rank[rec->rank] == rec->procid)
        for (size_t k = 0; k < s->nranks && r == NULL; k++)
            if (s->ranks[k].rec.rank == rec->rank && s->ranks[k].rec.procid == rec->procid)
                r = &s->ranks[k];
    /* more records than the report has room for: closed, not counted */
    if ((r == NULL && s->nranks == s->ranks_max)
        || (n = doctor_taken_format (s->key, p->pn, p->sn, out, sizeof (out))) < 0
        || send (p->fd, out, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
        drop (s, i);
        return;
    }
    if (r != NULL)
        close (r->fd);
    else {
        if (in_range && s->procid_of_rank[rec->rank] == -2)
            s->procid_of_rank[rec->rank] = rec->procid;
        r = &s->ranks[s->nranks++];
    }
    r->fd = p->fd;
    memcpy (r->pn, p->pn, sizeof (r->pn));
    memcpy (r->sn, p->sn, sizeof (r->sn));
    r->rec = *rec;
    free (p->rec);
    s->nproven--;
    s->pending[i] = s->pending[--s->npending];
}

/* One complete handshake line of pending connection i; -1 when it is not
 * the line its stage expects, or a proven one has no place (the connection
 * is dropped; a rank tries again). */
static int on_line (struct server *s, struct pending *p)
{
    char out[DOCTOR_AUTH_LINE_MAX];
    int n;

    if (p->stage == HELLO) {
        if (doctor_hello_check (s->key, p->line, p->llen, p->pn) < 0) {
            (void) send (p->fd, DOCTOR_REFUSED_LINE, strlen (DOCTOR_REFUSED_LINE),
                         MSG_NOSIGNAL | MSG_DONTWAIT);
            return -1;
        }
        p->proven = true;
        if (s->nproven++ == s->proven_max || doctor_nonce (p->sn) < 0
            || (n = doctor_proof_format (s->key, p->pn, p->sn, out, sizeof (out))) < 0)
            return -1;
        /* (a fresh socket's buffer holds a line: a short send is a peer
         * that is not reading) */
        if (send (p->fd, out, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
            return -1;
        p->stage = HEADER;
        return 0;
    }
    if (doctor_record_header_parse (p->line, p->llen, &p->reclen, p->mac) < 0
        || (p->rec = malloc (p->reclen)) == NULL)
        return -1;
    p->stage = RECORD;
    return 0;
}

/* Read into p's line up to its '\n', no further: what follows it is the
 * record, read whole into its own buffer. */
static ssize_t recv_line (struct pending *p)
{
    size_t room = sizeof (p->line) - p->llen;
    char *nl;
    ssize_t n = recv (p->fd, p->line + p->llen, room, MSG_PEEK);

    if (n <= 0)
        return n;
    if ((nl = memchr (p->line + p->llen, '\n', (size_t) n)) != NULL)
        n = nl - (p->line + p->llen) + 1;
    n = recv (p->fd, p->line + p->llen, (size_t) n, 0);
    if (n > 0)
        p->llen += (size_t) n;
    return n;
}

/* Read what pending connection i sent.  Returns 1 when it was admitted or
 * dropped (slot i now holds another connection), else 0. */
static int read_pending (struct server *s, size_t i)
{
    struct pending *p = &s->pending[i];
    struct doctor_rank rec;
    ssize_t n;

    for (;;) {
        if (p->stage == RECORD) {
            n = recv (p->fd, p->rec + p->recgot, p->reclen - p->recgot, 0);
            if (n > 0 && (p->recgot += (size_t) n) == p->reclen) {
                if (doctor_record_check (s->key, p->sn, p->pn, p->rec, p->reclen, p->mac) < 0
                    || doctor_wire_decode (p->rec, p->reclen, &rec) < 0)
                    break;
                admit (s, i, &rec);
                return 1;
            }
        } else if ((n = recv_line (p)) > 0 && p->line[p->llen - 1] == '\n') {
            if (on_line (s, p) < 0)
                break;
            p->llen = 0;
        } else if (n > 0 && p->llen == sizeof (p->line))
            break;
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (n <= 0)
            break;
    }
    drop (s, i);
    return 1;
}

/* Close the connections that took too long to prove themselves. */
static void expire (struct server *s, long now)
{
    size_t i = 0;

    while (i < s->npending)
        if (now - s->pending[i].since_ms >= DOCTOR_HANDSHAKE_MS)
            drop (s, i);
        else
            i++;
}

/* How long poll may sleep: until the deadline, the next handshake to
 * expire, or the end of an accept pause. */
static int poll_wait (const struct server *s, long now, long deadline_ms)
{
    long until = deadline_ms;

    for (size_t i = 0; i < s->npending; i++)
        if (s->pending[i].since_ms + DOCTOR_HANDSHAKE_MS < until)
            until = s->pending[i].since_ms + DOCTOR_HANDSHAKE_MS;
    if (s->backoff_until > now && s->backoff_until < until)
        until = s->backoff_until;
    return until > now ? (int) (until - now) : 0;
}

static void gather (struct server *s, size_t want, long deadline_ms)
{
    struct pollfd *pfd = calloc (s->pending_max + 1, sizeof (*pfd));
    size_t *slot = calloc (s->pending_max + 1, sizeof (*slot));
    size_t i, n;
    long now;

    while (pfd != NULL && slot != NULL && s->nranks < want
           && (now = doctor_now_ms ()) < deadline_ms) {
        n = 0;
        if (s->backoff_until <= now) {
            pfd[n].fd = s->lfd;
            pfd[n++].events = POLLIN;
        }
        for (i = 0; i < s->npending; i++) {
            pfd[n].fd = s->pending[i].fd;
            pfd[n].events = POLLIN;
            slot[n++] = i;
        }
        if (poll (pfd, n, poll_wait (s, now, deadline_ms)) < 0 && errno != EINTR)
            break;
        /* from the last: a finished connection's slot takes the last one's */
        for (i = n; i-- > 0;)
            if (pfd[i].fd != s->lfd && pfd[i].revents != 0)
                read_pending (s, slot[i]);
        if (s->backoff_until <= now && pfd[0].revents != 0)
            accept_all (s);
        expire (s, doctor_now_ms ());
    }
    free (pfd);
    free (slot);
}

/* Answer every signed rank, then let them hang up first: the TIME_WAIT
 * state stays on their side, and MASTER_PORT is free again at once for the
 * training program (which may not set SO_REUSEADDR). */
static void answer_all (struct server *s, bool ok)
{
    long until = doctor_now_ms () + 3000;
    struct pollfd *pfd = calloc (s->nranks + 1, sizeof (*pfd));
    char line[DOCTOR_AUTH_LINE_MAX], sink[256];
    size_t i, open;
    int n;

    for (i = 0; i < s->nranks; i++) {
        struct signed_rank *r = &s->ranks[i];
        n = doctor_verdict_format (s->key, r->pn, r->sn, ok, line, sizeof (line));
        if (n < 0 || doctor_send_all (r->fd, line, (size_t) n, doctor_now_ms () + 1000) < 0) {
            close (r->fd);
            r->fd = -1;
        }
    }
    while (pfd != NULL && doctor_now_ms () < until) {
        for (open = 0, i = 0; i < s->nranks; i++)
            if (s->ranks[i].fd >= 0) {
                pfd[open].fd = s->ranks[i].fd;
                pfd[open++].events = POLLIN;
            }
        if (open == 0 || poll (pfd, open, (int) (until - doctor_now_ms ())) <= 0)
            break;
        for (i = 0; i < s->nranks; i++)
            if (s->ranks[i].fd >= 0) {
                ssize_t got = recv (s->ranks[i].fd, sink, sizeof (sink), 0);
                if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
                    close (s->ranks[i].fd);
                    s->ranks[i].fd = -1;
                }
            }
    }
    free (pfd);
    for (i = 0; i < s->nranks; i++)
        if (s->ranks[i].fd >= 0)
            close (s->ranks[i].fd);
}

static int server_init (struct server *s, int lfd, const struct doctor_key *key, size_t world)
{
    memset (s, 0, sizeof (*s));
    s->key = key;
    s->lfd = lfd;
    s->world = world;
    s->unproven_max = world + 64 < PENDING_MAX ? world + 64 : PENDING_MAX;
    /* (a rank connects again when its connection closed before its record
     * was taken: the one before may still hold its place) */
    s->proven_max = world - 1 + EXTRA_RECORDS;
    s->pending_max = s->unproven_max + s->proven_max;
    s->ranks_max = world - 1 + EXTRA_RECORDS;
    for (s->count_slots = 1; s->count_slots <= 2 * s->unproven_max;)
        s->count_slots *= 2;
    s->pending = calloc (s->pending_max, sizeof (*s->pending));
    s->counts = calloc (s->count_slots, sizeof (*s->counts));
    s->ranks = calloc (s->ranks_max, sizeof (*s->ranks));
    s->procid_of_rank = malloc (world * sizeof (*s->procid_of_rank));
    if (s->pending == NULL || s->counts == NULL || s->ranks == NULL || s->procid_of_rank == NULL)
        return -1;
    for (size_t i = 0; i < world; i++)
        s->procid_of_rank[i] = -2;
    return 0;
}

static void server_free (struct server *s)
{
    for (size_t i = 0; i < s->npending; i++) {
        close (s->pending[i].fd);
        free (s->pending[i].rec);
    }
    free (s->pending);
    free (s->counts);
    free (s->ranks);
    free (s->procid_of_rank);
}

/* The fabric check over the signed ranks, into res. */
static int fabric (struct server *s, const struct doctor_rank *self, enum fabric_mode mode,
                   struct doctor_result *res)
{
    struct fabric_peer *peers = calloc (s->nranks + 1, sizeof (*peers));
    int rc;

    if (peers == NULL)
        return -1;
    for (size_t i = 0; i < s->nranks; i++)
        peers[i] = (struct fabric_peer){.fd = s->ranks[i].fd,
                                        .pn = s->ranks[i].pn,
                                        .sn = s->ranks[i].sn,
                                        .rec = &s->ranks[i].rec};
    rc = fabric_lead (s->key, self, peers, s->nranks, mode, res);
    free (peers);
    return rc;
}

/* Check rank 0's own facts and the signed records, then the paths between
 * the nodes when the rest is healthy; print the report.  0 when the step
 * is healthy, 1 when not, -1 when out of memory. */
static int report (struct server *s, const struct doctor_rank *self,
                   const struct doctor_layout *layout, const struct serve_options *o)
{
    struct doctor_rank *recs = calloc (s->nranks + 1, sizeof (*recs));
    struct doctor_result res;
    int rc;

    if (recs == NULL)
        return -1;
    recs[0] = *self;
    for (size_t i = 0; i < s->nranks; i++)
        recs[i + 1] = s->ranks[i].rec;
    if (doctor_check (recs, s->nranks + 1, layout, &res) < 0) {
        free (recs);
        return -1;
    }
    free (recs);
    res.unauthenticated = s->unauthenticated;
    memcpy (res.unauthenticated_from, s->unauthenticated_from, sizeof (res.unauthenticated_from));
    if (doctor_result_ok (&res) && o->fabric != FABRIC_OFF
        && fabric (s, self, o->fabric, &res) < 0) {
        doctor_result_free (&res);
        return -1;
    }
    if (o->json)
        doctor_report_json (stdout, &res, o->timeout_s);
    else
        doctor_report_text (stdout, &res, o->timeout_s);
    fflush (stdout);
    rc = doctor_result_ok (&res) ? 0 : 1;
    doctor_result_free (&res);
    return rc;
}

int doctor_serve (int lfd, const struct doctor_key *key, const struct doctor_rank *self,
                  const struct doctor_layout *layout, long deadline_ms,
                  const struct serve_options *o)
{
    size_t world = self->world_size > 0 ? (size_t) self->world_size : 1;
    struct server s;
    int rc = 1;

    if (server_init (&s, lfd, key, world) < 0) {
        fprintf (stderr, DOCTOR_PROGRAM ": out of memory for %zu ranks\n", world);
        goto out;
    }
    raise_fd_limit ();
    gather (&s, world - 1, deadline_ms);
    /* the count of the ones still in their handshake, for the report */
    while (s.npending > 0)
        drop (&s, s.npending - 1);
    /* nobody new gets in, and MASTER_PORT is free for the fabric check */
    close (lfd);
    lfd = -1;
    if ((rc = report (&s, self, layout, o)) < 0) {
        fprintf (stderr, DOCTOR_PROGRAM ": out of memory checking %zu ranks\n", s.nranks + 1);
        rc = 1;
    }
out:
    if (lfd >= 0)
        close (lfd);
    if (s.ranks != NULL)
        answer_all (&s, rc == 0);
    server_free (&s);
    return rc;
}
