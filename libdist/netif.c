/* netif.c - which of this node's network interfaces holds a local address: the plugin's
 * NCCL_SOCKET_IFNAME and the doctor's report of the interface a rank connected from. */
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "netif.h"

bool dist_same_host (const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *) a)->sin_addr.s_addr
               == ((const struct sockaddr_in *) b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp (&((const struct sockaddr_in6 *) a)->sin6_addr,
                       &((const struct sockaddr_in6 *) b)->sin6_addr, sizeof (struct in6_addr))
               == 0;
    return false;
}

int dist_interface_of (const struct sockaddr *addr, char *ifname, size_t size)
{
    struct ifaddrs *ifs = NULL, *ifa;
    int rc = -1;

    if (size > 0)
        ifname[0] = '\0';
    if (getifaddrs (&ifs) < 0)
        return -1;
    /* a cut name would be another interface's, or none */
    for (ifa = ifs; ifa != NULL && rc < 0; ifa = ifa->ifa_next)
        if (ifa->ifa_addr != NULL && dist_same_host (ifa->ifa_addr, addr)
            && strlen (ifa->ifa_name) < size) {
            snprintf (ifname, size, "%s", ifa->ifa_name);
            rc = 0;
        }
    freeifaddrs (ifs);
    return rc;
}

bool dist_unshare_lists_net (const char *list)
{
    const char *p = list;

    while (p != NULL && *p != '\0') {
        size_t len = strcspn (p, ",");
        if (len == 3 && strncmp (p, "net", 3) == 0)
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}
