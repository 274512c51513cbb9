/* world.c - the step as every file of libdtshim sees it: its facts, the start and end of each
 * collective on it, and the detail of the last failure. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

/* Slurm's own PMIx fence gives up after PMIxTimeout, 300 s by default: ours is the same, so
 * a dead peer is reported no later than Slurm would, without waiting on it. */
#define DEFAULT_TIMEOUT_S 300.0

struct shim_world shim_world = {
    .rank = -1,
    .size = -1,
    .local_rank = -1,
    .local_size = -1,
    .node_rank = -1,
    .node_count = -1,
    .timeout_s = DEFAULT_TIMEOUT_S,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static __thread char last_error[512];

int shim_fail (int status, const char *fmt, ...)
{
    va_list ap;

    va_start (ap, fmt);
    vsnprintf (last_error, sizeof (last_error), fmt, ap);
    va_end (ap);
    return status;
}

void shim_clear_error (void)
{
    last_error[0] = '\0';
}

const char *dtshim_last_error (void)
{
    return last_error;
}

const char *dtshim_strerror (int status)
{
    switch (status) {
    case DTSHIM_OK:
        return "success";
    case DTSHIM_ERR_NOT_INITIALIZED:
        return "dtshim_init() has not succeeded";
    case DTSHIM_ERR_NO_PMIX:
        return "no PMIx or PMI-2 server in this Slurm step: launch it with srun --mpi=pmix "
               "or srun --mpi=pmi2 (or set MpiDefault=pmix in slurm.conf)";
    case DTSHIM_ERR_PMIX:
        return "a PMIx or PMI-2 call failed";
    case DTSHIM_ERR_TIMEOUT:
        return "a peer did not arrive before the deadline (DTSHIM_TIMEOUT)";
    case DTSHIM_ERR_BROKEN:
        return "an earlier collective timed out; the step's exchanges are lost";
    case DTSHIM_ERR_INVALID:
        return "invalid argument";
    case DTSHIM_ERR_SIZE:
        return "ranks passed different sizes to a fixed-size collective";
    case DTSHIM_ERR_MISMATCH:
        return "ranks called different collectives at the same step";
    case DTSHIM_ERR_NO_MEMORY:
        return "out of memory";
    case DTSHIM_ERR_NO_ADDRESS:
        return "rank 0's host resolves to no address other than loopback or link-local";
    case DTSHIM_ERR_SIGNAL:
        return "cannot install the preemption signal handler";
    case DTSHIM_ERR_NO_ID:
        return "rank 0 could not create the unique id";
    case DTSHIM_ERR_CUDA:
        return "a CUDA runtime call failed";
    case DTSHIM_ERR_NCCL:
        return "an NCCL call failed";
    case DTSHIM_ERR_NOT_BUILT:
        return "libdtshim was built without NCCL";
    case DTSHIM_ERR_FENCE:
        return "Slurm's PMIx tree fence does not wait for the other nodes of this step: run it "
               "with SLURM_PMIX_FENCE=ring (or mixed, Slurm's default)";
    case DTSHIM_ERR_TOO_LARGE:
        return "a payload larger than this step's transport carries (PMI-2: 1 MiB per rank): "
               "launch it with srun --mpi=pmix";
    case DTSHIM_ERR_RANK_ORDER:
        return "under DIST_TRAIN_RANK_ORDER=topology the tasks' RANK (and GROUP_RANK) must give "
               "each task its own rank and each node its own node rank: launch with "
               "srun --dist-train=rank_order=topology, which sets them, or unset "
               "DIST_TRAIN_RANK_ORDER";
    }
    return "unknown dtshim status";
}

int shim_timed_out (uint64_t seq, const char *what)
{
    shim_world.broken = true;
    shim_fail (DTSHIM_ERR_TIMEOUT,
               "collective #%llu on rank %d: %s: not every rank answered within %g s",
               (unsigned long long) seq, shim_world.rank, what, shim_world.timeout_s);
    if (shim_world.abort_on_timeout && shim_world.initialized)
        shim_world.transport->abort (1, dtshim_last_error ());
    return DTSHIM_ERR_TIMEOUT;
}

void shim_begin_deadline (void)
{
    double whole, frac;

    clock_gettime (CLOCK_MONOTONIC, &shim_world.deadline);
    /* Saturated: the settings refuse more than SHIM_TIMEOUT_MAX (1e19 s overflowed here). */
    frac = modf (shim_world.timeout_s < SHIM_TIMEOUT_MAX ? shim_world.timeout_s : SHIM_TIMEOUT_MAX,
                 &whole);
    shim_world.deadline.tv_sec += (time_t) whole;
    shim_world.deadline.tv_nsec += (long) (frac * 1e9);
    if (shim_world.deadline.tv_nsec >= 1000000000L) {
        shim_world.deadline.tv_sec++;
        shim_world.deadline.tv_nsec -= 1000000000L;
    }
}

int shim_begin (uint64_t *seq)
{
    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    pthread_mutex_lock (&shim_world.lock);
    if (shim_world.broken) {
        pthread_mutex_unlock (&shim_world.lock);
        return shim_fail (DTSHIM_ERR_BROKEN, "an earlier collective timed out");
    }
    *seq = shim_world.seq++;
    /* One deadline for the whole call: its fence and its gets. */
    shim_begin_deadline ();
    return DTSHIM_OK;
}

void shim_end (void)
{
    pthread_mutex_unlock (&shim_world.lock);
}

/* The facts' getters, one a line: each is -1 before dtshim_init(). */
#define FACT_GETTER(getter, fact)                                                                  \
    int getter (void)                                                                              \
    {                                                                                              \
        return shim_world.initialized ? shim_world.fact : -1;                                      \
    }

FACT_GETTER (dtshim_rank, rank)
FACT_GETTER (dtshim_size, size)
FACT_GETTER (dtshim_local_rank, local_rank)
FACT_GETTER (dtshim_local_size, local_size)
FACT_GETTER (dtshim_node_rank, node_rank)
FACT_GETTER (dtshim_node_count, node_count)

const char *dtshim_chief_host (void)
{
    return shim_world.initialized ? shim_world.chief_host : NULL;
}

/* (here, not in a transport: each transport's pieces and the rank order's are freed alike,
 * and the rank order must not call into the PMIx transport that calls into it) */
void shim_pieces_free (struct shim_piece *pieces, int count)
{
    for (int i = 0; i < count; i++) {
        free (pieces[i].bytes);
        pieces[i].bytes = NULL;
    }
}
