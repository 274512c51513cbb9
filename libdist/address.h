/* address.h - choose MASTER_ADDR among the addresses a node name resolves to. */
#ifndef DIST_ADDRESS_H
#define DIST_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <netdb.h>
#include <sys/socket.h>

#define DIST_ADDR_MAX 46 /* INET6_ADDRSTRLEN */

/* True for 127.0.0.0/8, ::1 and IPv4-mapped loopback: never a valid
 * MASTER_ADDR, since every node would reach itself there. */
bool dist_address_is_loopback (const struct sockaddr *sa);

/* Write the best numeric address of the list into out: the first IPv4
 * address that is not loopback, else the first global IPv6 address.
 * Returns -1 when there is none (only loopback or link-local). */
int dist_address_pick (const struct addrinfo *list, char *out, size_t outsz);

/* The same choice among the addresses that a hosts file's text (len bytes, as
 * /etc/hosts: "ADDRESS NAME ALIAS...", '#' comments) gives name (compared without
 * case); -1 when it gives none that is usable.  slurmstepd reads names only so: a name
 * that takes DNS could hold it for the resolver's whole timeout. */
int dist_address_from_hosts (const char *text, size_t len, const char *name, char *out,
                             size_t outsz);

#endif /* DIST_ADDRESS_H */
