/* net.h - the doctor's plain TCP: rank 0's listener, the others'
 * connection from the interface the contract names, and what went wrong. */
#ifndef DOCTOR_NET_H
#define DOCTOR_NET_H

#include <stddef.h>
#include <sys/socket.h>

/* Milliseconds on the monotonic clock. */
long doctor_now_ms (void);

/* A numeric or resolvable address and a port into ss; 0, or -1. */
int doctor_sockaddr (const char *addr, const char *port, struct sockaddr_storage *ss,
                     socklen_t *len);

/* Listen on ss with SO_REUSEADDR; the fd, or -1 with errno set. */
int doctor_listen (const struct sockaddr_storage *ss, socklen_t len);

/* The local address of interface ifname (NCCL's syntax: "eth", "=eth0",
 * "eth0,ib0"; a name is a prefix unless it starts with '=') in the family
 * of family; 0 with the name matched in found, -1 when no such interface
 * has an address of that family. */
int doctor_interface_address (const char *ifname, int family, struct sockaddr_storage *src,
                              char *found, size_t foundsz);

/* Connect to dst from src (NULL: the kernel's choice) until deadline_ms,
 * retrying while rank 0 is not listening or the network says no.  The fd,
 * or -1 with the last error in *err (0 = timed out with no answer). */
int doctor_connect (const struct sockaddr_storage *dst, socklen_t dstlen,
                    const struct sockaddr_storage *src, long deadline_ms, int *err);

/* The source address the kernel's routes pick toward dst (a UDP socket
 * connected there, nothing sent): 0, or -1. */
int doctor_route_source (const struct sockaddr_storage *dst, socklen_t len,
                         struct sockaddr_storage *src);

/* A numeric address as text. */
void doctor_addr_text (const struct sockaddr_storage *ss, char *out, size_t size);

/* Write all of buf before deadline_ms; 0 or -1. */
int doctor_send_all (int fd, const char *buf, size_t len, long deadline_ms);

/* One line, whole, before deadline_ms: its length with the '\n', 0 when
 * the peer hung up or said nothing in time.  What follows the line stays
 * in the socket for the next read. */
size_t doctor_read_line (int fd, char *buf, size_t size, long deadline_ms);

/* Exactly len bytes before deadline_ms; 0 or -1. */
int doctor_read_exact (int fd, char *buf, size_t len, long deadline_ms);

#endif /* DOCTOR_NET_H */
