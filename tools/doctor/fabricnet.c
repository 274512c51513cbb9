/* fabricnet.c - the fabric check's sockets: one node's listener, which
 * serves the paths that come to it, and its own paths, one round after the
 * other, in one poll loop.
 *
 * A path, from its sender S to its receiver R (lines, then the sample):
 *   S: "dist-train-doctor 3 fabric FN MAC\n"      (auth.h)
 *   R: "dist-train-doctor 3 fabric-ok RN MAC\n"
 *   S: UDP datagrams with DF set to R's port, each "dtfab FN" and padding
 *      to its size; then "ping K\n", R: "pong K\n", FABRIC_PINGS times;
 *   S: "data\n", then bytes for at most the plan's sample_ms or
 *      FABRIC_SAMPLE_BYTES (a timed plan: for its sample_ms), then it shuts
 *      its side down;
 *   R: "got BYTES USECS UDPMAX\n" (what came, from its first byte to its
 *      last; the largest datagram of FN, IP header included) and closes.
 * What a connection costs R before its hello shows the key is bounded: a
 * place among SERVE_MAX, for HELLO_MS.  A sample is counted, not kept.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "fabric.h"
#include "net.h"
#include "libdist/netif.h"

#define SERVE_MAX 64 /* paths served at once */
#define HELLO_MS 2000 /* from accept to a hello that shows the key */
#define LINE_MAX_ 160
#define CHUNK 65536
/* what waits in our buffer, unsent, when the sample's time is up: on a
 * slow link it still has to drain (the buffer itself grows as TCP wants,
 * so a fast link with a long round trip is not held back) */
#define NOTSENT (64 << 10)
#define PROBE_TAG "dtfab "
#define PROBES_MAX 12

static long now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int ip_overhead (int family)
{
    return family == AF_INET6 ? 48 : 28; /* IP and UDP headers */
}

int fabric_interface (const char *addr, char *ifname, size_t size, long *mtu)
{
    struct sockaddr_storage ss;
    socklen_t len;
    struct ifreq ifr;
    int fd, rc = -1;

    *mtu = -1;
    if (doctor_sockaddr (addr, "0", &ss, &len) < 0
        || dist_interface_of ((const struct sockaddr *) &ss, ifname, size) < 0)
        return -1;
    memset (&ifr, 0, sizeof (ifr));
    snprintf (ifr.ifr_name, sizeof (ifr.ifr_name), "%s", ifname);
    if ((fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0) {
        if (ioctl (fd, SIOCGIFMTU, &ifr) == 0) {
            *mtu = ifr.ifr_mtu;
            rc = 0;
        }
        close (fd);
    }
    return rc;
}

int fabric_listen (const char *addr, long port, int *tfd, int *ufd)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char text[16];
    int saved;

    *tfd = *ufd = -1;
    snprintf (text, sizeof (text), "%ld", port);
    if (doctor_sockaddr (addr, text, &ss, &len) < 0) {
        errno = EINVAL;
        return -1;
    }
    if ((*tfd = doctor_listen (&ss, len)) < 0)
        return -1;
    *ufd = socket (ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (*ufd >= 0 && bind (*ufd, (const struct sockaddr *) &ss, len) == 0)
        return 0;
    saved = errno;
    close (*tfd);
    if (*ufd >= 0)
        close (*ufd);
    *tfd = *ufd = -1;
    errno = saved;
    return -1;
}

/* ---- the receiver's side ---- */

struct served {
    int fd;
    bool proven, data, done;
    long since_ms;
    char fn[DOCTOR_NONCE_HEX + 1];
    char line[LINE_MAX_];
    size_t llen;
    long bytes, first_us, last_us, udp_max;
};

struct engine {
    const struct doctor_key *key;
    int tfd, ufd, family;
    struct served serve[SERVE_MAX];
    size_t nserve;
    unsigned served; /* paths served to their end */
};

static void serve_close (struct engine *e, size_t i)
{
    close (e->serve[i].fd);
    e->serve[i] = e->serve[--e->nserve];
}

static void serve_accept (struct engine *e)
{
    int fd;

    while ((fd = accept4 (e->tfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        struct served *s;
        if (e->nserve == SERVE_MAX) {
            /* the oldest that has not shown the key gives way; else the new one */
            size_t i, victim = SIZE_MAX;
            for (i = 0; i < e->nserve; i++)
                if (!e->serve[i].proven
                    && (victim == SIZE_MAX || e->serve[i].since_ms < e->serve[victim].since_ms))
                    victim = i;
            if (victim == SIZE_MAX) {
                close (fd);
                continue;
            }
            serve_close (e, victim);
        }
        s = &e->serve[e->nserve++];
        memset (s, 0, sizeof (*s));
        s->fd = fd;
        s->since_ms = doctor_now_ms ();
    }
}

/* One line of a served path; -1 to close it. */
static int serve_line (struct engine *e, struct served *s)
{
    char out[DOCTOR_AUTH_LINE_MAX];
    unsigned long k;
    int n;

    if (!s->proven) {
        if (doctor_fabric_hello_check (e->key, s->line, s->llen, s->fn) < 0)
            return -1;
        char rn[DOCTOR_NONCE_HEX + 1];
        if (doctor_nonce (rn) < 0
            || (n = doctor_fabric_proof_format (e->key, s->fn, rn, out, sizeof (out))) < 0
            || send (s->fd, out, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
            return -1;
        s->proven = true;
        return 0;
    }
    if (s->llen == 5 && memcmp (s->line, "data\n", 5) == 0) {
        s->data = true;
        return 0;
    }
    if (s->llen == 5 && memcmp (s->line, "udp?\n", 5) == 0) {
        n = snprintf (out, sizeof (out), "udp %ld\n", s->udp_max);
        return send (s->fd, out, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT) == n ? 0 : -1;
    }
    if (sscanf (s->line, "ping %lu", &k) == 1) {
        n = snprintf (out, sizeof (out), "pong %lu\n", k);
        return send (s->fd, out, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT) == n ? 0 : -1;
    }
    return -1;
}

/* The sample is in: say what came, and close. */
static void serve_done (struct engine *e, size_t i)
{
    struct served *s = &e->serve[i];
    char out[LINE_MAX_];
    int n;

    n = snprintf (out, sizeof (out), "got %ld %ld %ld\n", s->bytes,
                  s->bytes > 0 ? s->last_us - s->first_us : 0, s->udp_max);
    (void) send (s->fd, out, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
    e->served++;
    serve_close (e, i);
}

/* Read what a served path sent; 1 when slot i now holds another. */
static int serve_read (struct engine *e, size_t i)
{
    struct served *s = &e->serve[i];
    char buf[CHUNK];
    ssize_t n;

    for (;;) {
        if (s->data) {
            n = recv (s->fd, buf, sizeof (buf), 0);
            if (n > 0) {
                long t = now_us ();
                if (s->bytes == 0)
                    s->first_us = t;
                s->last_us = t;
                s->bytes += n;
                /* (a sender that does not stop is not ours: a sample
                 * measured again is bounded by its time alone) */
                if (t - s->first_us > FABRIC_PAIR_MS * 1000L)
                    break;
                continue;
            }
            if (n == 0) {
                serve_done (e, i);
                return 1;
            }
        } else {
            char *nl;
            n = recv (s->fd, s->line + s->llen, sizeof (s->line) - s->llen, MSG_PEEK);
            if (n > 0 && (nl = memchr (s->line + s->llen, '\n', (size_t) n)) != NULL)
                n = nl - (s->line + s->llen) + 1;
            if (n > 0)
                n = recv (s->fd, s->line + s->llen, (size_t) n, 0);
            if (n > 0) {
                s->llen += (size_t) n;
                if (s->line[s->llen - 1] == '\n') {
                    if (serve_line (e, s) < 0)
                        break;
                    s->llen = 0;
                } else if (s->llen == sizeof (s->line))
                    break;
                continue;
            }
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        break;
    }
    serve_close (e, i);
    return 1;
}

/* A probe: counted for the path whose nonce it carries. */
static void serve_udp (struct engine *e)
{
    char buf[65536];
    ssize_t n;

    while ((n = recv (e->ufd, buf, sizeof (buf), 0)) >= 0) {
        size_t tag = strlen (PROBE_TAG);
        if ((size_t) n < tag + DOCTOR_NONCE_HEX || memcmp (buf, PROBE_TAG, tag) != 0)
            continue;
        for (size_t i = 0; i < e->nserve; i++)
            if (e->serve[i].proven && memcmp (e->serve[i].fn, buf + tag, DOCTOR_NONCE_HEX) == 0
                && n + ip_overhead (e->family) > e->serve[i].udp_max)
                e->serve[i].udp_max = n + ip_overhead (e->family);
    }
}

static void serve_expire (struct engine *e, long now)
{
    for (size_t i = 0; i < e->nserve;)
        if (!e->serve[i].proven && now - e->serve[i].since_ms >= HELLO_MS)
            serve_close (e, i);
        else
            i++;
}

/* ---- the sender's side ---- */

enum stage { CONNECTING, HELLO, PROBING, PROBE_WAIT, PINGING, SAMPLING, WAITING, FINISHED };

struct path {
    const struct fabric_target *t;
    struct fabric_pair *out;
    enum stage stage;
    int fd;
    long start_us, stage_us, deadline_ms, sample_end_us, resend_us;
    char fn[DOCTOR_NONCE_HEX + 1];
    char line[LINE_MAX_];
    size_t llen;
    unsigned ping, probes;
    long rtt_best, sent, sample_ms;
    bool timed; /* the plan's: the sample runs its whole time */
};

static void path_end (struct path *p, enum fabric_conn conn)
{
    if (p->fd >= 0)
        close (p->fd);
    p->fd = -1;
    p->out->conn = conn;
    p->stage = FINISHED;
}

/* The interface the route to addr leaves by: where an unbound socket
 * connected there would send from. */
static void egress_of (const struct sockaddr_storage *dst, socklen_t len, char *ifname, size_t size)
{
    struct sockaddr_storage local;

    ifname[0] = '\0';
    if (doctor_route_source (dst, len, &local) == 0)
        (void) dist_interface_of ((const struct sockaddr *) &local, ifname, size);
}

static int path_start (struct path *p, const char *self_addr)
{
    struct sockaddr_storage dst, src;
    socklen_t dlen, slen;
    char port[16];
    int buf = NOTSENT;

    snprintf (port, sizeof (port), "%ld", p->t->port);
    p->start_us = now_us ();
    if (doctor_sockaddr (p->t->addr, port, &dst, &dlen) < 0
        || doctor_sockaddr (self_addr, "0", &src, &slen) < 0) {
        path_end (p, FABRIC_UNREACHABLE);
        return -1;
    }
    egress_of (&dst, dlen, p->out->egress, sizeof (p->out->egress));
    p->fd = socket (dst.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (p->fd < 0) {
        path_end (p, FABRIC_BROKEN);
        return -1;
    }
    /* the collectives send from the interface's address, as NCCL binds it */
    setsockopt (p->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &buf, sizeof (buf));
    if (bind (p->fd, (const struct sockaddr *) &src, slen) < 0) {
        path_end (p, FABRIC_UNREACHABLE);
        return -1;
    }
    if (connect (p->fd, (const struct sockaddr *) &dst, dlen) < 0 && errno != EINPROGRESS) {
        path_end (p, errno == ECONNREFUSED ? FABRIC_REFUSED : FABRIC_UNREACHABLE);
        return -1;
    }
    p->stage = CONNECTING;
    p->stage_us = now_us ();
    return 0;
}

/* The probe sizes: this end's MTU, the other end's when smaller, and a
 * ladder below, for the largest that passes; their count. */
static size_t probe_sizes (long mtu, long other, long sizes[PROBES_MAX])
{
    long top = mtu > 0 ? mtu : 1500;
    size_t n = 0;

    if (top > 65535)
        top = 65535;
    sizes[n++] = top;
    if (other > 0 && other < top)
        sizes[n++] = other;
    for (long s = 1280; s < top && n < PROBES_MAX; s = s < 1500 ? 1500 : s < 4096 ? 4096 : 9000)
        sizes[n++] = s;
    for (long k = 1; k <= 4 && n < PROBES_MAX; k++)
        sizes[n++] = 576 + (top - 576) * k / 5;
    return n;
}

/* A UDP socket from our address (any port) to the path's port, with DF
 * set and the route's PMTU ignored, as the first packet of a path sees it. */
static int probe_socket (const struct path *p, int *ov)
{
    struct sockaddr_storage dst, src;
    socklen_t dlen, slen = sizeof (src);
    char port[16];
    int fd, v6, probe;

    snprintf (port, sizeof (port), "%ld", p->t->port);
    if (getsockname (p->fd, (struct sockaddr *) &src, &slen) < 0
        || doctor_sockaddr (p->t->addr, port, &dst, &dlen) < 0
        || (fd = socket (dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
        return -1;
    v6 = dst.ss_family == AF_INET6;
    *ov = ip_overhead (dst.ss_family);
    ((struct sockaddr_in *) &src)->sin_port = 0; /* (the same offset for IPv6) */
    probe = v6 ? IPV6_PMTUDISC_PROBE : IP_PMTUDISC_PROBE;
    (void) setsockopt (fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU_DISCOVER : IP_MTU_DISCOVER,
                       &probe, sizeof (probe));
    if (bind (fd, (const struct sockaddr *) &src, slen) < 0
        || connect (fd, (const struct sockaddr *) &dst, dlen) < 0) {
        close (fd);
        return -1;
    }
    return fd;
}

/* The probes, each size once, tagged with the path's nonce. */
static void path_probe (struct path *p, long mtu)
{
    static char buf[65536];
    long sizes[PROBES_MAX];
    size_t n = probe_sizes (mtu, p->t->mtu, sizes), tag = strlen (PROBE_TAG);
    int fd, ov;

    if ((fd = probe_socket (p, &ov)) < 0)
        return;
    memset (buf, 'x', sizeof (buf));
    memcpy (buf, PROBE_TAG, tag);
    memcpy (buf + tag, p->fn, DOCTOR_NONCE_HEX);
    for (size_t i = 0; i < n; i++)
        if (sizes[i] - ov >= (long) (tag + DOCTOR_NONCE_HEX))
            (void) send (fd, buf, (size_t) (sizes[i] - ov), MSG_DONTWAIT);
    close (fd);
}

static int path_send (struct path *p, const char *text, size_t len)
{
    return send (p->fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t) len ? 0 : -1;
}

static void path_ping (struct path *p)
{
    char out[32];
    int n = snprintf (out, sizeof (out), "ping %u\n", p->ping);

    p->stage_us = now_us ();
    if (path_send (p, out, (size_t) n) < 0)
        path_end (p, FABRIC_BROKEN);
}

/* The probes, and the question what of them came. */
static void path_probe_ask (struct path *p, long mtu)
{
    p->probes++;
    path_probe (p, mtu);
    if (path_send (p, "udp?\n", 5) < 0)
        path_end (p, FABRIC_BROKEN);
}

/* What came of the probes: asked again, a few times, while less than
 * both ends allow came (a probe lost under load is not a small MTU). */
static void path_probed (struct path *p, long mtu, long udp)
{
    long want = mtu > 0 && mtu < 65535 ? mtu : 65535;

    if (p->t->mtu > 0 && p->t->mtu < want)
        want = p->t->mtu;
    if (udp > p->out->udp_max)
        p->out->udp_max = udp;
    /* (a datagram can come after a later line of the connection: the
     * next ask waits longer each time) */
    if (p->out->udp_max < want && p->probes < FABRIC_PROBE_TRIES) {
        p->stage = PROBE_WAIT;
        p->resend_us = now_us () + 10000L * p->probes * p->probes;
        return;
    }
    p->stage = PINGING;
    path_ping (p);
}

static void path_pong (struct path *p)
{
    long rtt = now_us () - p->stage_us;

    if (p->rtt_best < 0 || rtt < p->rtt_best)
        p->rtt_best = rtt;
    if (++p->ping < FABRIC_PINGS) {
        path_ping (p);
        return;
    }
    p->out->rtt_us = p->rtt_best;
    if (path_send (p, "data\n", 5) < 0) {
        path_end (p, FABRIC_BROKEN);
        return;
    }
    p->stage = SAMPLING;
    p->stage_us = now_us ();
    p->sample_end_us = p->stage_us + p->sample_ms * 1000L;
}

/* One line from R at its stage. */
static void path_line (struct path *p, const struct doctor_key *key, long mtu)
{
    char rn[DOCTOR_NONCE_HEX + 1];
    unsigned k;
    long bytes, usecs, udp;

    if (p->stage == HELLO) {
        if (doctor_fabric_proof_check (key, p->fn, p->line, p->llen, rn) < 0) {
            path_end (p, FABRIC_FOREIGN);
            return;
        }
        p->stage = PROBING;
        path_probe_ask (p, mtu);
    } else if (p->stage == PROBING && sscanf (p->line, "udp %ld", &udp) == 1)
        path_probed (p, mtu, udp);
    else if (p->stage == PINGING && sscanf (p->line, "pong %u", &k) == 1 && k == p->ping)
        path_pong (p);
    else if (p->stage == WAITING
             && sscanf (p->line, "got %ld %ld %ld", &bytes, &usecs, &udp) == 3) {
        p->out->bytes = bytes;
        p->out->usecs = usecs;
        if (udp > p->out->udp_max)
            p->out->udp_max = udp;
        path_end (p, FABRIC_OK);
    } else
        path_end (p, FABRIC_BROKEN);
}

static void path_read (struct path *p, const struct doctor_key *key, long mtu)
{
    ssize_t n;
    char *nl;

    for (;;) {
        n = recv (p->fd, p->line + p->llen, sizeof (p->line) - 1 - p->llen, MSG_PEEK);
        if (n > 0 && (nl = memchr (p->line + p->llen, '\n', (size_t) n)) != NULL)
            n = nl - (p->line + p->llen) + 1;
        if (n > 0)
            n = recv (p->fd, p->line + p->llen, (size_t) n, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        /* (what hangs up on our hello cannot prove the key either) */
        if (n <= 0) {
            path_end (p, p->stage == HELLO ? FABRIC_FOREIGN : FABRIC_BROKEN);
            return;
        }
        p->llen += (size_t) n;
        p->line[p->llen] = '\0';
        if (p->line[p->llen - 1] == '\n') {
            path_line (p, key, mtu);
            p->llen = 0;
            if (p->stage == FINISHED)
                return;
        } else if (p->llen == sizeof (p->line) - 1) {
            path_end (p, FABRIC_BROKEN);
            return;
        }
    }
}

/* The sample: bytes until its time or size is up, then our side shut. */
static void path_write (struct path *p)
{
    static const char chunk[CHUNK];
    ssize_t n;

    while (now_us () < p->sample_end_us && (p->timed || p->sent < FABRIC_SAMPLE_BYTES)) {
        size_t want = p->timed ? sizeof (chunk) : (size_t) (FABRIC_SAMPLE_BYTES - p->sent);
        n = send (p->fd, chunk, want < sizeof (chunk) ? want : sizeof (chunk),
                  MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            path_end (p, FABRIC_BROKEN);
            return;
        }
        p->sent += n;
    }
    shutdown (p->fd, SHUT_WR);
    p->stage = WAITING;
}

static void path_connected (struct path *p, const struct doctor_key *key)
{
    char out[DOCTOR_AUTH_LINE_MAX];
    socklen_t elen;
    int err = 0, n;

    elen = sizeof (err);
    if (getsockopt (p->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err != 0) {
        path_end (p, err == ECONNREFUSED                         ? FABRIC_REFUSED
                     : err == ETIMEDOUT                          ? FABRIC_TIMEOUT
                     : err == EHOSTUNREACH || err == ENETUNREACH ? FABRIC_UNREACHABLE
                                                                 : FABRIC_BROKEN);
        return;
    }
    p->out->connect_us = now_us () - p->start_us;
    if (doctor_nonce (p->fn) < 0
        || (n = doctor_fabric_hello_format (key, p->fn, out, sizeof (out))) < 0
        || path_send (p, out, (size_t) n) < 0) {
        path_end (p, FABRIC_BROKEN);
        return;
    }
    p->stage = HELLO;
}

/* A path out of time: where it stood says why. */
static void path_expire (struct path *p, long now_ms, long mtu)
{
    if (p->stage == FINISHED)
        return;
    if (p->stage == PROBE_WAIT && now_us () >= p->resend_us) {
        p->stage = PROBING;
        path_probe_ask (p, mtu);
        return;
    }
    if (p->stage == CONNECTING && now_us () - p->stage_us >= FABRIC_CONNECT_MS * 1000L)
        path_end (p, FABRIC_TIMEOUT);
    else if (now_ms >= p->deadline_ms)
        path_end (p, p->stage == CONNECTING ? FABRIC_TIMEOUT
                     : p->stage == HELLO    ? FABRIC_FOREIGN
                                            : FABRIC_BROKEN);
}

static void outs_init (const struct fabric_plan *plan, struct fabric_pair *out)
{
    for (size_t i = 0; i < plan->ntargets; i++) {
        memset (&out[i], 0, sizeof (out[i]));
        out[i].from = plan->index;
        out[i].to = plan->target[i].to;
        out[i].round = plan->target[i].round;
        out[i].conn = FABRIC_TIMEOUT;
        out[i].connect_us = out[i].rtt_us = out[i].bytes = out[i].usecs = -1;
    }
}

/* The poll set: the listeners, our path, the served ones; its size. */
static size_t poll_set (const struct engine *e, const struct path *p, struct pollfd *pfd)
{
    size_t n = 0;

    pfd[n++] = (struct pollfd){.fd = e->tfd, .events = POLLIN};
    pfd[n++] = (struct pollfd){.fd = e->ufd, .events = POLLIN};
    if (p->stage != FINISHED)
        pfd[n++] = (struct pollfd){
            .fd = p->fd,
            .events = p->stage == CONNECTING || p->stage == SAMPLING ? POLLOUT : POLLIN};
    for (size_t i = 0; i < e->nserve; i++)
        pfd[n++] = (struct pollfd){.fd = e->serve[i].fd, .events = POLLIN};
    return n;
}

static void on_path (struct path *p, const struct doctor_key *key, long mtu, short revents)
{
    if (p->stage == FINISHED || revents == 0)
        return;
    if (p->stage == CONNECTING)
        path_connected (p, key);
    else if (p->stage == SAMPLING && (revents & POLLOUT))
        path_write (p);
    else
        path_read (p, key, mtu);
}

/* The next path, once the one before is done. */
static void next_path (struct path *p, const struct fabric_plan *plan, struct fabric_pair *out,
                       size_t *next, const char *addr, long now)
{
    while (p->stage == FINISHED && *next < plan->ntargets) {
        *p = (struct path){.t = &plan->target[*next],
                           .out = &out[*next],
                           .fd = -1,
                           .rtt_best = -1,
                           .sample_ms = plan->sample_ms > 0 ? plan->sample_ms : FABRIC_SAMPLE_MS,
                           .timed = plan->timed,
                           .deadline_ms = now + FABRIC_PAIR_MS};
        (*next)++;
        (void) path_start (p, addr);
    }
}

/* What one poll brought. */
static void on_events (struct engine *e, struct path *p, const struct fabric_end *end,
                       const struct pollfd *pfd, size_t n)
{
    /* probes before the samples they go with; new connections last, so
     * that the served ones are where the poll set has them */
    if (pfd[1].revents != 0)
        serve_udp (e);
    on_path (p, end->key, end->mtu, p->stage != FINISHED ? pfd[2].revents : 0);
    /* (from the last: a closed one's slot takes the last's) */
    for (size_t i = e->nserve, first = n - e->nserve; i-- > 0;)
        if (pfd[first + i].revents != 0 && pfd[first + i].fd == e->serve[i].fd)
            (void) serve_read (e, i);
    if (pfd[0].revents != 0)
        serve_accept (e);
    if (p->stage == SAMPLING)
        path_write (p);
    path_expire (p, doctor_now_ms (), end->mtu);
    serve_expire (e, doctor_now_ms ());
}

static bool say_done (const struct fabric_end *end, const struct fabric_plan *plan,
                      const struct fabric_pair *out)
{
    if (end->done != NULL)
        end->done (end->arg, out, plan->ntargets);
    return true;
}

/* Whether the run is over: our paths done, and the others' served. */
static bool run_over (const struct fabric_end *end, const struct engine *e,
                      const struct fabric_plan *plan, short stop_revents)
{
    if (end->stop_fd >= 0)
        return stop_revents != 0;
    return e->served >= plan->expect;
}

void fabric_run (const struct fabric_end *end, const struct fabric_plan *plan, long deadline_ms,
                 struct fabric_pair *out)
{
    struct engine e = {.key = end->key, .tfd = end->tfd, .ufd = end->ufd};
    struct pollfd pfd[SERVE_MAX + 4];
    struct path p = {.stage = FINISHED, .fd = -1};
    size_t next = 0, n;
    struct sockaddr_storage ss;
    socklen_t sl;
    bool own_done = false;
    short stop = 0;
    long now;
    int wait;

    e.family = doctor_sockaddr (end->addr, "0", &ss, &sl) == 0 ? ss.ss_family : AF_INET;
    outs_init (plan, out);
    while ((now = doctor_now_ms ()) < deadline_ms) {
        next_path (&p, plan, out, &next, end->addr, now);
        if (p.stage == FINISHED && !own_done)
            own_done = say_done (end, plan, out);
        /* (a stop before our paths are done: rank 0 is gone) */
        if ((own_done && run_over (end, &e, plan, stop)) || (stop != 0 && !own_done))
            break;
        n = poll_set (&e, &p, pfd);
        if (end->stop_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = end->stop_fd, .events = POLLIN};
        /* (a path's own time limits are checked between polls) */
        wait = p.stage != FINISHED ? 20 : 100;
        if (poll (pfd, n, deadline_ms - now < wait ? (int) (deadline_ms - now) : wait) < 0
            && errno != EINTR)
            break;
        if (end->stop_fd >= 0)
            stop = pfd[--n].revents;
        on_events (&e, &p, end, pfd, n);
    }
    if (p.stage != FINISHED)
        path_end (&p, p.stage == CONNECTING ? FABRIC_TIMEOUT : FABRIC_BROKEN);
    if (!own_done)
        (void) say_done (end, plan, out);
    while (e.nserve > 0)
        serve_close (&e, e.nserve - 1);
}
