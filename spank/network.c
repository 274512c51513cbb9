/* network.c - the I/O behind MASTER_ADDR, the interface and the port check.
 * Runs once per node per step, in slurmstepd, as the user: no RPC here. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "dist_train.h"
#include "libdist/address.h"
#include "libdist/io.h"
#include "libdist/netif.h"

/* Fill a sockaddr for a numeric address; 0 on success. */
static int to_sockaddr (const char *addr, uint16_t port, struct sockaddr_storage *ss,
                        socklen_t *len)
{
    struct sockaddr_in *in = (struct sockaddr_in *) ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;

    memset (ss, 0, sizeof (*ss));
    if (inet_pton (AF_INET, addr, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons (port);
        *len = sizeof (*in);
        return 0;
    }
    if (inet_pton (AF_INET6, addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons (port);
        *len = sizeof (*in6);
        return 0;
    }
    return -1;
}

/* A usable address for a numeric address or a name of /etc/hosts: 0, or -1 when it is
 * neither or only loopback.  Never DNS: this runs in slurmstepd's main thread, and a name
 * the user chose (MASTER_ADDR, or a forged hand-over) whose server never answers would hold
 * it for the resolver's whole timeout, and a cancel meanwhile drains the node.  srun
 * resolves rank 0's address and hands it over as a number (local.c). */
static int lookup (const char *name, char *addr, size_t addrsz)
{
    struct sockaddr_storage ss;
    socklen_t len;
    size_t hlen;
    char *hosts;
    int rc;

    if (to_sockaddr (name, 0, &ss, &len) == 0) {
        if (dist_address_is_loopback ((struct sockaddr *) &ss) || strlen (name) >= addrsz)
            return -1;
        snprintf (addr, addrsz, "%s", name);
        return 0;
    }
    if ((hosts = dist_read_file ("/etc/hosts", 1 << 20, DIST_FILE_ANYONE, &hlen)) == NULL)
        return -1;
    rc = dist_address_from_hosts (hosts, hlen, name, addr, addrsz);
    free (hosts);
    return rc;
}

/* The local address the kernel's routing picks towards peer (connect() on
 * UDP sends nothing); "" when there is none or it is loopback. */
static void source_address_towards (const char *peer, char *addr, size_t addrsz)
{
    struct sockaddr_storage dst, src;
    socklen_t dstlen, srclen = sizeof (src);
    const void *raw;
    int fd;

    addr[0] = '\0';
    if (to_sockaddr (peer, 9, &dst, &dstlen) < 0)
        return;
    fd = socket (dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (connect (fd, (struct sockaddr *) &dst, dstlen) < 0
        || getsockname (fd, (struct sockaddr *) &src, &srclen) < 0
        || dist_address_is_loopback ((struct sockaddr *) &src)) {
        close (fd);
        return;
    }
    close (fd);
    raw = src.ss_family == AF_INET ? (const void *) &((struct sockaddr_in *) &src)->sin_addr
                                   : (const void *) &((struct sockaddr_in6 *) &src)->sin6_addr;
    if (inet_ntop (src.ss_family, raw, addr, (socklen_t) addrsz) == NULL)
        addr[0] = '\0';
}

/* The interface this node uses to reach master_addr: the one that owns the
 * source address towards it.  On rank 0's node that is the master address
 * itself, so its own interface is found. */
void dist_train_find_ifname (const char *master_addr, char *ifname, size_t ifsz)
{
    struct sockaddr_storage src;
    socklen_t len;
    char resolved[DIST_ADDR_MAX], source[DIST_ADDR_MAX];

    ifname[0] = '\0';
    if (to_sockaddr (master_addr, 0, &src, &len) < 0
        && lookup (master_addr, resolved, sizeof (resolved)) == 0)
        master_addr = resolved; /* a name the user gave */
    source_address_towards (master_addr, source, sizeof (source));
    if (source[0] != '\0' && to_sockaddr (source, 0, &src, &len) == 0)
        (void) dist_interface_of ((struct sockaddr *) &src, ifname, ifsz);
}

int dist_train_check_port_free (const char *master_addr, uint16_t port, char *err, size_t errsz)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, one = 1, rc = 0;

    if (to_sockaddr (master_addr, port, &ss, &len) < 0)
        return 0;
    fd = socket (ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    /* SO_REUSEADDR as PyTorch's store sets it: a port in TIME_WAIT is fine. */
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
    if (bind (fd, (struct sockaddr *) &ss, len) < 0 && errno == EADDRINUSE) {
        snprintf (err, errsz,
                  "MASTER_PORT %u is already in use on %s; set MASTER_PORT to a free "
                  "port, or ask your admin to change port_range in plugstack.conf",
                  (unsigned) port, master_addr);
        rc = -1;
    }
    close (fd);
    return rc;
}

/* Rank 0's node's address: its name as this node resolves it, else the
 * NodeAddr that srun read from Slurm (local.c; no RPC here). */
int dist_train_resolve_master (spank_t sp, const char *node, const char *node_addr, bool here,
                               char *addr, size_t addrsz, char *err, size_t errsz)
{
    char launcher[DIST_ADDR_MAX];

    if (lookup (node, addr, addrsz) == 0
        || (node_addr[0] != '\0' && lookup (node_addr, addr, addrsz) == 0))
        return 0;
    /* Rank 0's own node can still tell the address the others reach it on:
     * the one it uses towards srun's host. */
    if (here
        && spank_getenv (sp, "SLURM_LAUNCH_NODE_IPADDR", launcher, sizeof (launcher))
               == ESPANK_SUCCESS) {
        source_address_towards (launcher, addr, addrsz);
        if (addr[0] != '\0')
            return 0;
    }
    snprintf (err, errsz,
              "no usable address for rank 0's node '%.64s': /etc/hosts here has none "
              "but loopback for it (a '127.0.1.1' line?), and srun handed over no address "
              "of it (from Slurm's NodeAddr, or its name resolved where srun runs); set "
              "MASTER_ADDR to its address",
              node);
    return -1;
}
