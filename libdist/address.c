/* address.c - a usable address from getaddrinfo()'s answer. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

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
