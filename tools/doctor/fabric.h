/* fabric.h - the check of the paths between a step's nodes that the
 * collectives' rings and trees will use, beside the star-shaped check of
 * every rank against rank 0.
 *
 * One process per node takes part: rank 0 on its node, the task of local
 * rank 0 on every other.  Each listens on the step's MASTER_PORT at the
 * address of the interface the collectives use (TCP, and UDP on the same
 * number: no port outside port_range), and in each of at most
 * FABRIC_ROUNDS_MAX rounds checks the path to the node 1, 2, 4, 8 places
 * after it in rank order: the ring first, then pairs that put every node
 * against at least two others.  Per path: a TCP connect that either side
 * proves with the step's key, the round trip, a bandwidth sample bounded in
 * bytes and time, and the largest UDP packet with DF set that passes.
 * Rank 0 hands each node its plan and takes its results over the
 * connection its record came on (blocks signed with the key, auth.h), then
 * judges the paths together (fabric_judge: no I/O, unit-tested).
 */
#ifndef DOCTOR_FABRIC_H
#define DOCTOR_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "doctor.h"

struct doctor_key;

#define FABRIC_ROUNDS_MAX 4
#define FABRIC_SAMPLE_BYTES (4L << 20) /* a bandwidth sample: at most this much */
#define FABRIC_SAMPLE_MS 200 /* and at most this long */
/* a path measured again: a sample of this long, whatever it moves, so that
 * a pause of the sender or the receiver is a small part of it */
#define FABRIC_AGAIN_SAMPLE_MS 50
#define FABRIC_CONNECT_MS 1500 /* a path that does not connect in this time is blocked */
#define FABRIC_PAIR_MS 3000 /* one path, from its connect to its result */
#define FABRIC_PINGS 5
#define FABRIC_PROBE_TRIES 5 /* rounds of UDP probes, while fewer passed than the MTUs allow */
#define FABRIC_AGAIN_MS 4000 /* the slow paths measured again, one node after the other */
#define FABRIC_SLOW_FACTOR 4 /* slow: under a quarter of the step's median */

enum fabric_mode { FABRIC_FAIL, FABRIC_WARN, FABRIC_OFF };

/* A node of the check, as its record said and rank 0 passes it on. */
struct fabric_node {
    char name[DOCTOR_NAME_MAX];
    char addr[DOCTOR_NAME_MAX]; /* where it listens */
    long port; /* 0: it does not (note says why) */
    long mtu; /* its interface's MTU, -1 unknown */
    char ifname[DOCTOR_NAME_MAX];
    char note[DOCTOR_NAME_MAX * 2];
};

/* How a path's connection went. */
enum fabric_conn {
    FABRIC_OK,
    FABRIC_TIMEOUT, /* no answer: packets dropped */
    FABRIC_REFUSED, /* a reset: a firewall that rejects, or nothing listens */
    FABRIC_UNREACHABLE, /* no route */
    FABRIC_FOREIGN, /* what answered does not know the step's key */
    FABRIC_BROKEN, /* connected, then closed or stalled before the result */
    FABRIC_CONN_COUNT
};

/* One path, as its sender measured it. */
struct fabric_pair {
    uint32_t from, to; /* node indexes */
    int round;
    enum fabric_conn conn;
    long connect_us, rtt_us; /* -1 unknown */
    long bytes, usecs; /* the bandwidth sample as the receiver counted it */
    long udp_max; /* the largest packet, IP header included, that passed; 0 none */
    char egress[DOCTOR_NAME_MAX]; /* the interface the route to it leaves by, "" unknown */
    /* measured again beside a path of its sender's that was not slow: its
     * rate over that one's (rank 0's own; not on the wire), 0 when not */
    double vs_ref;
};

/* One path a node checks: where to, in which round. */
struct fabric_target {
    int round;
    uint32_t to;
    char name[DOCTOR_NAME_MAX];
    char addr[DOCTOR_NAME_MAX];
    long port, mtu;
};

/* A node's part, as rank 0 plans it. */
struct fabric_plan {
    uint32_t index, nodes;
    unsigned expect; /* paths that come to it */
    unsigned sample_ms; /* the longest bandwidth sample, 0: FABRIC_SAMPLE_MS */
    bool timed; /* the sample runs its whole time, not FABRIC_SAMPLE_BYTES */
    size_t ntargets;
    struct fabric_target target[FABRIC_ROUNDS_MAX];
};

/* The rounds for n nodes (0 for fewer than 2), and the node that node i
 * checks in a round: the distances 1, 2, 4 ... below n. */
unsigned fabric_rounds (size_t n);
uint32_t fabric_target_of (size_t n, uint32_t i, unsigned round);

/* Node i's plan out of the n nodes. */
void fabric_plan_make (const struct fabric_node *nodes, size_t n, uint32_t i,
                       struct fabric_plan *plan);

/* The plan and the results as text blocks, and back: the length, -1 when
 * it does not fit; decode 0, or -1 when it is not one (they come from the
 * network: numbers checked, strings made printable). */
int fabric_plan_encode (const struct fabric_plan *plan, char *buf, size_t size);
int fabric_plan_decode (const char *buf, size_t len, struct fabric_plan *plan);
int fabric_result_encode (const struct fabric_pair *pairs, size_t n, char *buf, size_t size);
/* Pairs sent by node `from` of `nodes`: only its own paths, at most max. */
int fabric_result_decode (const char *buf, size_t len, uint32_t from, uint32_t nodes,
                          struct fabric_pair *pairs, size_t max, size_t *n);

/* Judge every path: problems (warnings under FABRIC_WARN) for a blocked
 * path and an MTU mismatch, warnings for a slow node or path and a route
 * by another interface; summary gets one line of figures.  0, or -1 when
 * out of memory. */
int fabric_judge (struct doctor_result *res, const struct fabric_node *nodes, size_t n,
                  const struct fabric_pair *pairs, size_t npairs, enum fabric_mode mode,
                  char *summary, size_t size);

/* The paths that the judge would name slow by their first sample (under
 * 1/FABRIC_SLOW_FACTOR of the step's median), those of a node most of whose
 * paths are slow included: their indexes into idx (room for n), their count.
 * They are measured again, with the others quiet, before they are named: on
 * a busy node a sample can lose the CPU. */
size_t fabric_suspects (const struct fabric_pair *pairs, size_t n, size_t *idx);

/* A path measured again (a timed sample).  With ref, the same sender's
 * fastest other path measured again in the same plan, their ratio decides
 * whether it is slow (measured more than once: its best), not the step's
 * median, which the first samples alone give.  With none, the faster of its
 * samples counts. */
void fabric_remeasured (struct fabric_pair *pairs, size_t n, const struct fabric_pair *again,
                        const struct fabric_pair *ref);

const char *fabric_conn_word (enum fabric_conn c);
int fabric_mode_parse (const char *text, enum fabric_mode *mode);

/* fabricnet.c: the sockets.  Listen on addr:port, TCP and UDP; 0, or -1
 * with errno. */
int fabric_listen (const char *addr, long port, int *tfd, int *ufd);

/* This node's MTU and the name of the interface that holds addr; -1 when
 * none does. */
int fabric_interface (const char *addr, char *ifname, size_t size, long *mtu);

/* This node's end of the check. */
struct fabric_end {
    const struct doctor_key *key;
    const char *addr; /* where it listens and sends from */
    long mtu;
    int tfd, ufd; /* fabric_listen's */
    /* once its own paths are done: done() gets their results, and it goes
     * on serving the others' until stop_fd is readable (rank 0's verdict,
     * or its hang-up); with stop_fd -1, until every path planned to come
     * came */
    int stop_fd;
    void (*done) (void *arg, const struct fabric_pair *out, size_t n);
    void *arg;
};

/* Serve the paths that come to this node and check its own, as above, or
 * until deadline_ms: results into out[plan->ntargets]. */
void fabric_run (const struct fabric_end *end, const struct fabric_plan *plan, long deadline_ms,
                 struct fabric_pair *out);

#endif /* DOCTOR_FABRIC_H */
