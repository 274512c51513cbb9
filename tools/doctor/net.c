/* net.c - sockets for dist-train-doctor: plain TCP, bounded waits. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "doctor.h"
#include "net.h"

long doctor_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int doctor_sockaddr (const char *addr, const char *port, struct sockaddr_storage *ss,
                     socklen_t *len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL;

    /* (MASTER_ADDR is an address unless the user named a host) */
    if (doctor_linked_static)
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo (addr, port, &hints, &list) != 0 || list == NULL)
        return -1;
    memcpy (ss, list->ai_addr, list->ai_addrlen);
    *len = list->ai_addrlen;
    freeaddrinfo (list);
    return 0;
}

void doctor_addr_text (const struct sockaddr_storage *ss, char *out, size_t size)
{
    const void *raw = ss->ss_family == AF_INET6
                          ? (const void *) &((const struct sockaddr_in6 *) ss)->sin6_addr
                          : (const void *) &((const struct sockaddr_in *) ss)->sin_addr;

    if (inet_ntop (ss->ss_family, raw, out, (socklen_t) size) == NULL)
        snprintf (out, size, "?");
}

int doctor_route_source (const struct sockaddr_storage *dst, socklen_t len,
                         struct sockaddr_storage *src)
{
    socklen_t slen = sizeof (*src);
    int fd = socket (dst->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;

    if (fd < 0)
        return -1;
    if (connect (fd, (const struct sockaddr *) dst, len) == 0
        && getsockname (fd, (struct sockaddr *) src, &slen) == 0)
        rc = 0;
    close (fd);
    return rc;
}

int doctor_listen (const struct sockaddr_storage *ss, socklen_t len)
{
    int fd, one = 1, saved;

    fd = socket (ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    /* the training program binds the same port right after us (--then) */
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
    if (bind (fd, (const struct sockaddr *) ss, len) < 0 || listen (fd, 4096) < 0) {
        saved = errno;
        close (fd);
        errno = saved;
        return -1;
    }
    return fd;
}

static bool name_matches (const char *name, const char *tok)
{
    if (tok[0] == '=')
        return strcmp (name, tok + 1) == 0;
    return strncmp (name, tok, strlen (tok)) == 0;
}

int doctor_interface_address (const char *ifname, int family, struct sockaddr_storage *src,
                              char *found, size_t foundsz)
{
    char list[256], *tok, *save = NULL;
    struct ifaddrs *ifs = NULL, *ifa;
    int rc = -1;

    if (getifaddrs (&ifs) < 0)
        return -1;
    snprintf (list, sizeof (list), "%s", ifname);
    /* NCCL's order: the names as listed, the first that has an address */
    for (tok = strtok_r (list, ",", &save); tok != NULL && rc < 0;
         tok = strtok_r (NULL, ",", &save))
        for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
            if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != family
                || !name_matches (ifa->ifa_name, tok))
                continue;
            memset (src, 0, sizeof (*src));
            memcpy (src, ifa->ifa_addr,
                    family == AF_INET6 ? sizeof (struct sockaddr_in6)
                                       : sizeof (struct sockaddr_in));
            snprintf (found, foundsz, "%s", ifa->ifa_name);
            rc = 0;
            break;
        }
    freeifaddrs (ifs);
    return rc;
}

/* One non-blocking attempt, waiting at most wait_ms; the fd or -1. */
static int try_connect (const struct sockaddr_storage *dst, socklen_t dstlen,
                        const struct sockaddr_storage *src, long wait_ms, int *err)
{
    struct pollfd p;
    socklen_t elen = sizeof (*err);
    int fd;

    fd = socket (dst->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    /* the source address of the interface, as NCCL binds it (SO_BINDTODEVICE
     * would need privileges) */
    if (src != NULL
        && bind (fd, (const struct sockaddr *) src,
                 src->ss_family == AF_INET6 ? sizeof (struct sockaddr_in6)
                                            : sizeof (struct sockaddr_in))
               < 0) {
        *err = errno;
        close (fd);
        return -1;
    }
    if (connect (fd, (const struct sockaddr *) dst, dstlen) == 0)
        return fd;
    if (errno != EINPROGRESS) {
        *err = errno;
        close (fd);
        return -1;
    }
    p.fd = fd;
    p.events = POLLOUT;
    if (poll (&p, 1, (int) (wait_ms > 0 ? wait_ms : 0)) <= 0) {
        *err = 0; /* no answer yet */
        close (fd);
        return -1;
    }
    if (getsockopt (fd, SOL_SOCKET, SO_ERROR, err, &elen) < 0 || *err != 0) {
        close (fd);
        return -1;
    }
    return fd;
}

int doctor_connect (const struct sockaddr_storage *dst, socklen_t dstlen,
                    const struct sockaddr_storage *src, long deadline_ms, int *err)
{
    long pause_ms = 50, left;
    int fd, last = 0;

    for (;;) {
        left = deadline_ms - doctor_now_ms ();
        if (left <= 0)
            break;
        fd = try_connect (dst, dstlen, src, left, &last);
        if (fd >= 0)
            return fd;
        /* rank 0 may start later, and a route may still come up: retry
         * everything until the deadline, remembering why it failed */
        left = deadline_ms - doctor_now_ms ();
        if (left <= 0)
            break;
        usleep ((useconds_t) (pause_ms < left ? pause_ms : left) * 1000);
        if (pause_ms < 200)
            pause_ms *= 2;
    }
    *err = last;
    return -1;
}

int doctor_send_all (int fd, const char *buf, size_t len, long deadline_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    size_t off = 0;
    ssize_t n;

    while (off < len) {
        long left = deadline_ms - doctor_now_ms ();
        if (left <= 0 || poll (&p, 1, (int) left) <= 0)
            return -1;
        n = send (fd, buf + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        if (n > 0)
            off += (size_t) n;
    }
    return 0;
}

size_t doctor_read_line (int fd, char *buf, size_t size, long deadline_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    size_t got = 0;
    char *nl;

    while (got < size && memchr (buf, '\n', got) == NULL) {
        long left = deadline_ms - doctor_now_ms ();
        ssize_t n;
        if (left <= 0 || poll (&p, 1, (int) left) <= 0)
            return 0;
        n = recv (fd, buf + got, size - got, MSG_PEEK);
        if (n > 0 && (nl = memchr (buf + got, '\n', (size_t) n)) != NULL)
            n = nl - (buf + got) + 1;
        if (n > 0)
            n = recv (fd, buf + got, (size_t) n, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return 0;
        if (n > 0)
            got += (size_t) n;
    }
    return memchr (buf, '\n', got) != NULL ? got : 0;
}

int doctor_read_exact (int fd, char *buf, size_t len, long deadline_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    size_t got = 0;

    while (got < len) {
        long left = deadline_ms - doctor_now_ms ();
        ssize_t n;
        if (left <= 0 || poll (&p, 1, (int) left) <= 0)
            return -1;
        n = recv (fd, buf + got, len - got, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return -1;
        if (n > 0)
            got += (size_t) n;
    }
    return 0;
}
