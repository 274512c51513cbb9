/* address.c - a usable address from getaddrinfo()'s answer, or from a hosts file. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "address.h"

bool dist_address_is_loopback (const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
        return (ntohl (in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK (a))
            return true;
        if (IN6_IS_ADDR_V4MAPPED (a))
            return a->s6_addr[12] == 127;
    }
    return false;
}

static bool usable_ipv6 (const struct sockaddr *sa)
{
    const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;
    return !IN6_IS_ADDR_LINKLOCAL (a) && !IN6_IS_ADDR_UNSPECIFIED (a) && !IN6_IS_ADDR_MULTICAST (a);
}

int dist_address_pick (const struct addrinfo *list, char *out, size_t outsz)
{
    const struct addrinfo *ai;
    int family;

    /* IPv4 first: it is what Gloo and NCCL users expect to see. */
    for (family = AF_INET; family != -1; family = (family == AF_INET ? AF_INET6 : -1)) {
        for (ai = list; ai != NULL; ai = ai->ai_next) {
            const void *raw;
            if (ai->ai_addr == NULL || ai->ai_family != family
                || dist_address_is_loopback (ai->ai_addr))
                continue;
            if (family == AF_INET)
                raw = &((const struct sockaddr_in *) ai->ai_addr)->sin_addr;
            else if (usable_ipv6 (ai->ai_addr))
                raw = &((const struct sockaddr_in6 *) ai->ai_addr)->sin6_addr;
            else
                continue;
            if (inet_ntop (family, raw, out, (socklen_t) outsz) != NULL)
                return 0;
        }
    }
    return -1;
}

/* The addresses a hosts file gives one name, as a list for dist_address_pick. */
#define HOSTS_MATCHES_MAX 16

struct hosts_match {
    struct addrinfo ai;
    struct sockaddr_storage ss;
};

/* Token at *p (up to end) into tok (size bytes): its length, 0 at the end of the line
 * (*p then at the '\n' or end); a token too long for tok is skipped whole, as "". */
static size_t next_token (const char **p, const char *end, char *tok, size_t size, bool *toolong)
{
    const char *s;
    size_t n;

    while (*p < end && (**p == ' ' || **p == '\t' || **p == '\r'))
        (*p)++;
    s = *p;
    while (*p < end && **p != ' ' && **p != '\t' && **p != '\r' && **p != '\n')
        (*p)++;
    n = (size_t) (*p - s);
    *toolong = n >= size;
    if (n > 0 && !*toolong)
        memcpy (tok, s, n);
    tok[*toolong ? 0 : n] = '\0';
    return n;
}

/* A hosts line's address into m; false when it is not a numeric IPv4 or IPv6 one. */
static bool hosts_address (const char *text, struct hosts_match *m)
{
    struct sockaddr_in *in = (struct sockaddr_in *) &m->ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &m->ss;

    memset (m, 0, sizeof (*m));
    if (inet_pton (AF_INET, text, &in->sin_addr) == 1)
        m->ai.ai_family = in->sin_family = AF_INET;
    else if (inet_pton (AF_INET6, text, &in6->sin6_addr) == 1)
        m->ai.ai_family = in6->sin6_family = AF_INET6;
    else
        return false;
    m->ai.ai_addr = (struct sockaddr *) &m->ss;
    return true;
}

int dist_address_from_hosts (const char *text, size_t len, const char *name, char *out,
                             size_t outsz)
{
    struct hosts_match m[HOSTS_MATCHES_MAX];
    const char *p = text, *end = text + len;
    char tok[256];
    size_t n = 0;
    bool toolong, named;

    while (p < end && n < HOSTS_MATCHES_MAX) {
        const char *eol = memchr (p, '\n', (size_t) (end - p));
        const char *hash, *line_end = eol != NULL ? eol : end;
        /* (a comment ends the line) */
        if ((hash = memchr (p, '#', (size_t) (line_end - p))) != NULL)
            line_end = hash;
        if (next_token (&p, line_end, tok, sizeof (tok), &toolong) > 0 && !toolong
            && hosts_address (tok, &m[n])) {
            for (named = false;
                 !named && next_token (&p, line_end, tok, sizeof (tok), &toolong) > 0;)
                named = !toolong && strcasecmp (tok, name) == 0;
            if (named) {
                if (n > 0)
                    m[n - 1].ai.ai_next = &m[n].ai;
                n++;
            }
        }
        p = eol != NULL ? eol + 1 : end;
    }
    return n > 0 ? dist_address_pick (&m[0].ai, out, outsz) : -1;
}
