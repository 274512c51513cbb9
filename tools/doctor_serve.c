/* doctor_serve.c - rank 0: gather every other rank's message until all came
 * or the deadline passed, check them, report, and answer each rank. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "doctor.h"
#include "doctor_net.h"
#include "doctor_serve.h"

struct peer {
    int fd;
    size_t len;
    bool done, valid;
    char addr[DOCTOR_NAME_MAX];
    char *buf; /* DOCTOR_MSG_MAX bytes until the message is read */
    struct doctor_rank *rec; /* then what it said (a few KiB: only for real ranks) */
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

static void accept_all (int lfd, struct peer *peers, size_t *npeers, size_t max)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof (ss);
    int fd;

    while ((fd = accept4 (lfd, (struct sockaddr *) &ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        struct peer *p = &peers[*npeers];
        /* more connections than ranks: not ours, and not worth the memory */
        if (*npeers >= max || (p->buf = malloc (DOCTOR_MSG_MAX)) == NULL) {
            close (fd);
            len = sizeof (ss);
            continue;
        }
        p->fd = fd;
        doctor_addr_text (&ss, p->addr, sizeof (p->addr));
        (*npeers)++;
        len = sizeof (ss);
    }
}

/* Read what a peer sent; done once its message ended, was too long, or it
 * hung up. */
static void read_peer (struct peer *p)
{
    ssize_t n;

    while (!p->done) {
        n = recv (p->fd, p->buf + p->len, DOCTOR_MSG_MAX - p->len, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            p->done = true;
            break;
        }
        p->len += (size_t) n;
        if (p->len >= 4 && memcmp (p->buf + p->len - 4, "end\n", 4) == 0
            && (p->rec = malloc (sizeof (*p->rec))) != NULL) {
            if (doctor_wire_decode (p->buf, p->len, p->rec) == 0) {
                p->done = p->valid = true;
                free (p->buf);
                p->buf = NULL;
                return;
            }
            free (p->rec);
            p->rec = NULL;
        }
        if (p->len == DOCTOR_MSG_MAX)
            p->done = true;
    }
}

static void gather (int lfd, struct peer *peers, size_t *npeers, size_t max, size_t want,
                    long deadline_ms)
{
    struct pollfd *pfd = calloc (max + 1, sizeof (*pfd));
    size_t valid = 0, i, n;

    if (pfd == NULL)
        return;
    while (valid < want) {
        long left = deadline_ms - doctor_now_ms ();
        if (left <= 0)
            break;
        pfd[0].fd = lfd;
        pfd[0].events = POLLIN;
        for (n = 1, i = 0; i < *npeers; i++)
            if (!peers[i].done) {
                pfd[n].fd = peers[i].fd;
                pfd[n++].events = POLLIN;
            }
        if (poll (pfd, n, (int) left) < 0 && errno != EINTR)
            break;
        accept_all (lfd, peers, npeers, max);
        for (valid = 0, i = 0; i < *npeers; i++) {
            read_peer (&peers[i]);
            valid += peers[i].valid;
        }
    }
    free (pfd);
}

/* Answer every peer, then let them hang up first: the TIME_WAIT state stays
 * on their side, and MASTER_PORT is free again at once for the training
 * program (which may not set SO_REUSEADDR). */
static void answer_all (struct peer *peers, size_t npeers, bool ok)
{
    const char *line = ok ? "ok\n" : "problem: see rank 0's report\n";
    long until = doctor_now_ms () + 3000;
    struct pollfd *pfd = calloc (npeers + 1, sizeof (*pfd));
    char sink[256];
    size_t i, open;

    for (i = 0; i < npeers; i++)
        if (doctor_send_all (peers[i].fd, line, strlen (line), doctor_now_ms () + 1000) < 0) {
            close (peers[i].fd);
            peers[i].fd = -1;
        }
    while (pfd != NULL && doctor_now_ms () < until) {
        for (open = 0, i = 0; i < npeers; i++)
            if (peers[i].fd >= 0) {
                pfd[open].fd = peers[i].fd;
                pfd[open++].events = POLLIN;
            }
        if (open == 0 || poll (pfd, open, (int) (until - doctor_now_ms ())) <= 0)
            break;
        for (i = 0; i < npeers; i++)
            if (peers[i].fd >= 0) {
                ssize_t n = recv (peers[i].fd, sink, sizeof (sink), 0);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                    close (peers[i].fd);
                    peers[i].fd = -1;
                }
            }
    }
    free (pfd);
    for (i = 0; i < npeers; i++)
        if (peers[i].fd >= 0)
            close (peers[i].fd);
}

int doctor_serve (int lfd, const struct doctor_rank *self, const struct doctor_layout *layout,
                  long deadline_ms, double timeout_s, bool json)
{
    size_t world = self->world_size > 0 ? (size_t) self->world_size : 1;
    size_t max = world + 64, npeers = 0, nrecs = 1, i;
    struct peer *peers = calloc (max, sizeof (*peers));
    struct doctor_rank *recs = NULL;
    struct doctor_result res;
    int rc = 1;

    if (peers == NULL) {
        fprintf (stderr, DOCTOR_PROGRAM ": out of memory for %zu ranks\n", world);
        goto out;
    }
    raise_fd_limit ();
    gather (lfd, peers, &npeers, max, world - 1, deadline_ms);
    if ((recs = calloc (npeers + 1, sizeof (*recs))) == NULL) {
        fprintf (stderr, DOCTOR_PROGRAM ": out of memory for %zu ranks\n", npeers + 1);
        goto out;
    }
    recs[0] = *self;
    for (i = 0; i < npeers; i++)
        if (peers[i].valid)
            recs[nrecs++] = *peers[i].rec;
    if (doctor_check (recs, nrecs, layout, &res) < 0) {
        fprintf (stderr, DOCTOR_PROGRAM ": out of memory checking %zu ranks\n", nrecs);
        goto out;
    }
    /* a connection that sent something else: named, it fails the check */
    for (i = 0; i < npeers; i++)
        if (peers[i].done && !peers[i].valid) {
            char line[DOCTOR_LINE_MAX];
            snprintf (line, sizeof (line), "an unreadable message from %s (not a doctor's)",
                      peers[i].addr);
            if (res.nproblems < DOCTOR_PROBLEMS_MAX)
                memcpy (res.problem[res.nproblems], line, sizeof (line));
            res.nproblems++;
        }
    if (json)
        doctor_report_json (stdout, &res, timeout_s);
    else
        doctor_report_text (stdout, &res, timeout_s);
    fflush (stdout);
    rc = doctor_result_ok (&res) ? 0 : 1;
    doctor_result_free (&res);
out:
    /* (the listener closes first: nobody new gets in while we answer) */
    close (lfd);
    if (peers != NULL)
        answer_all (peers, npeers, rc == 0);
    for (i = 0; peers != NULL && i < npeers; i++) {
        free (peers[i].buf);
        free (peers[i].rec);
    }
    free (peers);
    free (recs);
    return rc;
}
