/* shim.h - the state of libdtshim shared by its files (not installed). */
#ifndef DTSHIM_SHIM_H
#define DTSHIM_SHIM_H

#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "shim/rankmap.h"
#include "shim/wire.h"

struct shim_transport;

struct shim_world {
    bool initialized;
    const struct shim_transport *transport; /* NULL: a world of one */
    bool broken; /* a fence timed out: its callback may still come, keys are lost */
    pmix_proc_t self;
    int rank, size, local_rank, local_size, node_rank, node_count;
    /* This task's rank to the transport (PMIx's, PMI-2's: SLURM_PROCID), which names its
     * keys; rank is the plugin's when it chose its own order (rankorder.c). */
    int transport_rank;
    struct shim_rank_map order; /* size 0: the transport's order */
    char chief_host[256];
    uint64_t seq; /* number of the next collective, the same on every rank */
    struct timespec deadline; /* of the collective in progress (CLOCK_MONOTONIC) */
    double timeout_s; /* 0: forever */
    bool abort_on_timeout;
    pthread_mutex_t lock; /* serializes the collectives */
};

/* The world and its errors (world.c), which every other file uses and which uses none of
 * them but through shim_world.transport. */
extern struct shim_world shim_world;

/* Record the detail of a failure for dtshim_last_error(); returns status. */
int shim_fail (int status, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* Forget it (dtshim_init, before it tries again). */
void shim_clear_error (void);

/* Start a collective: check the state, take the lock, number the call (*seq) and set its
 * deadline. On success the caller ends with shim_end(). */
int shim_begin (uint64_t *seq);
void shim_end (void);
/* Set the deadline from the timeout, from now (shim_begin does; PMI-2's setup and
 * finalization, outside any collective, too). */
void shim_begin_deadline (void);

/* A collective that passed its deadline: the step's exchanges are lost (broken), the
 * detail recorded, and the step ended when the program asked for that. Returns
 * DTSHIM_ERR_TIMEOUT. */
int shim_timed_out (uint64_t seq, const char *what);

/* The libraries libdtshim calls but does not link (dynload.c), each opened at its first
 * use, from where configure found it, then from the loader's path. */
enum shim_lib { SHIM_LIB_PMIX, SHIM_LIB_NCCL, SHIM_LIB_CUDART, SHIM_LIB_COUNT };
/* NAME in LIB, or NULL when LIB cannot be loaded or lacks it. */
void *shim_sym (enum shim_lib lib, const char *name);
/* DTSHIM_OK when LIB loads; else records why, and FIX (what to do), and returns status. */
int shim_lib_require (enum shim_lib lib, int status, const char *fix);

/* The progress watchdog (watchdog.c), from DIST_TRAIN_WATCHDOG. */
int shim_watchdog_start (void);
void shim_watchdog_stop (void);

/* Preemption handlers (preempt.c). */
int shim_preempt_install (void);
void shim_preempt_restore (void);

/* A rank's contribution to a collective: its payload (malloc'd, at least 1 byte) and size. */
struct shim_piece {
    uint8_t *bytes;
    size_t size;
};

/* A rank's contribution to a collective is put, a fence makes it every node's, then it is
 * read back: what carries it is the step's server, PMIx (exchange.c) or Slurm's PMI-2
 * (pmi2.c, pmi2kvs.c). Every call is bounded by the collective's deadline. */
struct shim_transport {
    const char *name; /* dtshim_backend()'s */
    /* Connect and fill in the facts of shim_world / leave (not after a timeout: a fence is
     * still pending in the server). */
    int (*connect) (void);
    int (*disconnect) (void);
    /* Contribute size bytes of payload framed for op when contribute is true (else
     * nothing), then fence with data collection. */
    int (*exchange) (enum shim_op op, const void *payload, size_t size, bool contribute,
                     uint64_t seq);
    /* A barrier: a fence with data collection (without, Slurm's PMIx does not wait). */
    int (*fence) (uint64_t seq);
    /* The contributions of ranks first .. first+count-1 to collective seq, checked against
     * op; free them with shim_pieces_free(). */
    int (*read) (enum shim_op op, uint64_t seq, int first, int count, struct shim_piece *out);
    /* Put key = seq for probe to find after the next fence. */
    int (*publish) (const char *key, uint64_t seq);
    /* Whether any other rank has published key with a value of at most seq, asked after
     * collective seq's fence. A value put before that fence is there, on every node; one
     * put later, by a rank already past it, may be there too and is left out. So every rank
     * gets the same answer. */
    int (*probe) (const char *key, uint64_t seq, int *any);
    /* Ask the server to end every task of the step, with status and msg in its log. */
    int (*abort) (int status, const char *msg);
    /* The host name of the task of transport rank rank, on the transport's node id node,
     * into shim_world.chief_host (each transport names it from what it has). */
    int (*name_chief) (int rank, int node);
};

extern const struct shim_transport shim_pmix_transport; /* exchange.c */
extern const struct shim_transport shim_pmi2_transport; /* pmi2kvs.c */

/* world.c: free what a transport's read gave */
void shim_pieces_free (struct shim_piece *pieces, int count);

/* The plugin's rank order (rankorder.c). At init, after the transport's connect: rank and
 * node_rank from RANK and GROUP_RANK under DIST_TRAIN_RANK_ORDER=topology, checked against
 * every task's through one exchange (collective seq 0), and the chief from the new rank 0;
 * else the transport's facts stand and nothing is exchanged. */
int shim_rank_order_init (void);
void shim_rank_order_clear (void);
/* A rank of the program's (the plugin's) as the transport's, and back, for naming ranks. */
int shim_transport_rank (int rank);
int shim_rank_of (int transport_rank);
/* The contribution of root / of every rank to collective seq, checked against op, in the
 * program's rank order (out: shim_world.size pieces); free with shim_pieces_free(). */
int shim_read_root (enum shim_op op, uint64_t seq, int root, struct shim_piece *out);
int shim_read_all (enum shim_op op, uint64_t seq, struct shim_piece *out);

/* PMIx's connection (pmix.c), for its transport. */
int shim_pmix_connect (void);
int shim_pmix_disconnect (void);
int shim_pmix_name_chief (int rank, int node);

#endif
