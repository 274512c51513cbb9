/* netif.h - which of this node's network interfaces holds a local address. */
#ifndef DIST_NETIF_H
#define DIST_NETIF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* True when a and b are the same IPv4 or IPv6 address, ports aside; false for
 * two families, or any other family. */
bool dist_same_host (const struct sockaddr *a, const struct sockaddr *b);

/* The name of the interface that holds addr (a source address the kernel
 * picked, or rank 0's own), into ifname of size bytes: 0, or -1 with ifname
 * "" when no interface holds it whose name fits. */
int dist_interface_of (const struct sockaddr *addr, char *ifname, size_t size);

/* True when list, a container runtime's namespaces to unshare as pyxis's
 * --container-unshare takes them (net,ipc,uts: comma-separated), names the
 * network's: the tasks then have a namespace of their own, with loopback
 * alone.  NULL names none. */
bool dist_unshare_lists_net (const char *list);

#endif /* DIST_NETIF_H */
