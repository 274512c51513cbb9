/* shim.h - the state of libdtshim shared by its files (not installed). */
#ifndef DTSHIM_SHIM_H
#define DTSHIM_SHIM_H

#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "shim/wire.h"

/* What carries the collectives: nothing (a world of one), PMIx, or Slurm's PMI-2. */
enum shim_backend {
    SHIM_NONE = 0,
    SHIM_PMIX,
    SHIM_PMI2,
};

struct shim_world {
    bool initialized;
    enum shim_backend backend;
    bool broken; /* a fence timed out: its callback may still come, keys are lost */
    pmix_proc_t self;
    int rank, size, local_rank, local_size, node_rank, node_count;
    int chief_node; /* node id of rank 0 (PMI-2 names it from the step's node list) */
    char chief_host[256];
    uint64_t seq; /* number of the next collective, the same on every rank */
    struct timespec deadline; /* of the collective in progress (CLOCK_MONOTONIC) */
    double timeout_s; /* 0: forever */
    bool abort_on_timeout;
    pthread_mutex_t lock; /* serializes the collectives */
};

extern struct shim_world shim_world;

/* Record the detail of a failure for dtshim_last_error(); returns status. */
int shim_fail (int status, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

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

/* Start a collective: check the state, take the lock, number the call (*seq) and set its
 * deadline. On success the caller ends with shim_end(). */
int shim_begin (uint64_t *seq);
void shim_end (void);
/* Set the deadline from the timeout, from now (shim_begin does; PMI-2's setup and
 * finalization, outside any collective, too). */
void shim_begin_deadline (void);

/* The transport (exchange.c for PMIx, pmi2.c for PMI-2; exchange.c dispatches). */

/* exchange.c: contribute size bytes of payload framed for op when contribute is true (else
 * nothing), then fence with data collection, before the deadline. */
int shim_exchange (enum shim_op op, const void *payload, size_t size, bool contribute,
                   uint64_t seq);
/* A barrier: a fence with data collection (without, Slurm's does not wait), before the
 * deadline. */
int shim_fence (uint64_t seq);
/* The contributions of ranks first .. first+count-1 to collective seq, checked against op,
 * fetched before the deadline; free them with shim_pieces_free(). */
int shim_read (enum shim_op op, uint64_t seq, int first, int count, struct shim_piece *out);
void shim_pieces_free (struct shim_piece *pieces, int count);
/* Whether any other rank has put key (a PMIX_UINT64) with a value of at most seq, asked of
 * the node's PMIx server after collective seq's fence: a get from every other rank, one by
 * one until one has it, before the deadline.  A value put before that fence is there, on
 * every node; one put later, by a rank already past it, may be there too and is left out.
 * So every rank gets the same answer. */
int shim_probe (const char *key, uint64_t seq, int *any);
/* Put key = seq (a PMIX_UINT64, or decimal text over PMI-2) for shim_probe to find after the
 * next fence. */
int shim_publish (const char *key, uint64_t seq);
/* Ask the server to end every task of the step, with status and msg in its log. */
void shim_abort (int status, const char *msg);

/* pmi2.c and pmi2kvs.c: the same over Slurm's PMI-2 server, and its setup. shim_pmi2_init
 * fills in the facts of shim_world. Over PMI-2 a key is the step's, not a rank's:
 * shim_pmi2_probe asks for it once. */
int shim_pmi2_init (void);
int shim_pmi2_finalize (void);
int shim_pmi2_exchange (enum shim_op op, const void *payload, size_t size, bool contribute,
                        uint64_t seq);
int shim_pmi2_fence (uint64_t seq);
int shim_pmi2_read (enum shim_op op, uint64_t seq, int first, int count, struct shim_piece *out);
int shim_pmi2_probe (const char *key, uint64_t seq, int *any);
int shim_pmi2_publish (const char *key, uint64_t seq);
void shim_pmi2_abort (int status, const char *msg);

#endif
