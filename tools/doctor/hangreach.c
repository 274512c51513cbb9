/* hangreach.c - whether this node still reaches the nodes its ranks talk
 * to, asked only when a connection of theirs retransmits: a connection
 * that drops data names a pair of nodes, and which of the two is cut off
 * shows from the other nodes each can reach.
 *
 * Each address gets one TCP connection attempt to the discard port (9):
 * an answer, even a refusal (RST), proves the path; silence or no route
 * within the deadline does not.  No rank's socket is touched.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hang.h"

#define REACH_PORT 9
#define REACH_WAIT_MS 1500

/* The address of "addr:port" or "[addr]:port" with the discard port. */
static int reach_target (const char *endpoint, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon = strrchr (endpoint, ':');
    size_t n;

    if (colon == NULL || (n = (size_t) (colon - endpoint)) == 0 || n >= sizeof (host))
        return -1;
    memcpy (host, endpoint, n);
    host[n] = '\0';
    memset (ss, 0, sizeof (*ss));
    if (host[0] == '[' && host[n - 1] == ']') {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *) ss;
        host[n - 1] = '\0';
        a->sin6_family = AF_INET6;
        a->sin6_port = htons (REACH_PORT);
        *len = sizeof (*a);
        return inet_pton (AF_INET6, host + 1, &a->sin6_addr) == 1 ? 0 : -1;
    }
    struct sockaddr_in *a = (struct sockaddr_in *) ss;
    a->sin_family = AF_INET;
    a->sin_port = htons (REACH_PORT);
    *len = sizeof (*a);
    return inet_pton (AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

static long now_ms (void)
{
    struct timespec t;
    clock_gettime (CLOCK_MONOTONIC, &t);
    return (long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* An attempt that ended: reached when it connected or was refused. */
static bool reached (int err)
{
    return err == 0 || err == ECONNREFUSED;
}

/* Why an address was not reached, as one word. */
static const char *why_not (int err)
{
    switch (err) {
    case 0:
    case ETIMEDOUT:
        return "timeout";
    case EINVAL: /* what connect() says through a blackhole route */
    case ENETUNREACH:
        return "no-route";
    case EHOSTUNREACH:
        return "host-unreachable";
    default:
        return "error";
    }
}

static void print_reach (FILE *f, const char *node, const char *endpoint, bool ok, int err)
{
    char host[HANG_ENDPOINT_MAX];
    const char *colon = strrchr (endpoint, ':');
    size_t n = colon != NULL ? (size_t) (colon - endpoint) : strlen (endpoint);

    snprintf (host, sizeof (host), "%.*s", (int) n, endpoint);
    fprintf (f, "reach node=%s addr=%s ok=%d why=%s\n", node, host, ok ? 1 : 0,
             ok ? "-" : why_not (err));
}

void hang_reach (FILE *f, const char *node, char (*endpoints)[HANG_ENDPOINT_MAX], size_t n)
{
    struct pollfd *p = calloc (n + 1, sizeof (*p));
    long deadline = now_ms () + REACH_WAIT_MS;
    size_t pending = 0;

    if (p == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        struct sockaddr_storage ss;
        socklen_t len;
        p[i].fd = -1;
        if (reach_target (endpoints[i], &ss, &len) < 0)
            continue;
        p[i].fd = socket (ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (p[i].fd < 0)
            continue;
        p[i].events = POLLOUT;
        if (connect (p[i].fd, (struct sockaddr *) &ss, len) == 0 || errno != EINPROGRESS) {
            int err = errno;
            print_reach (f, node, endpoints[i], reached (err), err);
            close (p[i].fd);
            p[i].fd = -1;
        } else
            pending++;
    }
    while (pending > 0 && now_ms () < deadline) {
        int ready = poll (p, n, (int) (deadline - now_ms ()));
        for (size_t i = 0; ready > 0 && i < n; i++) {
            int err = 0;
            socklen_t elen = sizeof (err);
            if (p[i].fd < 0 || p[i].revents == 0)
                continue;
            getsockopt (p[i].fd, SOL_SOCKET, SO_ERROR, &err, &elen);
            print_reach (f, node, endpoints[i], reached (err), err);
            close (p[i].fd);
            p[i].fd = -1;
            pending--;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (p[i].fd >= 0) {
            print_reach (f, node, endpoints[i], false, 0);
            close (p[i].fd);
        }
    free (p);
}
