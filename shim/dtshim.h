/* dtshim.h - the distributed facts and the bootstrap collectives of a Slurm step, over the
 * PMIx server that Slurm runs in every step launched with `srun --mpi=pmix`, or over Slurm's
 * PMI-2 server (`srun --mpi=pmi2`, in every Slurm) where the step has no PMIx.
 *
 * Every function returns DTSHIM_OK (0) or a negative DTSHIM_ERR_* code; dtshim_strerror()
 * names it and dtshim_last_error() adds the detail of the last failure in this thread. The
 * library never exits or aborts the process, except dtshim_abort() (and a timeout when the
 * program asked for DTSHIM_ABORT_ON_TIMEOUT), which ends the whole step on purpose.
 *
 * Collectives are on byte buffers and are called by every rank of the step, in the same
 * order: each call is numbered, and the number namespaces its PMIx keys (over PMI-2, its
 * frames), so a later call never reads the value of an earlier one. Sizes go from 0 bytes to
 * several MiB over PMIx, to 1 MiB per rank over PMI-2 (DTSHIM_ERR_TOO_LARGE beyond). PMIx
 * keeps every value put for the rest of the step and sends it again with later fences: the
 * collectives are for bootstrap and control messages (ids, addresses, small metadata), not
 * bulk data.
 *
 * Thread-safety: dtshim_init() and dtshim_finalize() must not race with any other call. The
 * collectives are serialized by an internal lock, so two threads may call them, but the order
 * of calls must be the same on every rank (as with MPI_THREAD_SERIALIZED): in practice, call
 * them from one thread. The facts (dtshim_rank() ...) are read-only after dtshim_init() and
 * safe from any thread. dtshim_preempt_requested() and dtshim_request_preempt() are safe from
 * any thread and async-signal-safe.
 *
 * Link with `pkg-config --libs dtshim`. */
#ifndef DTSHIM_H
#define DTSHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DTSHIM_VERSION_MAJOR 0
#define DTSHIM_VERSION_MINOR 1

enum dtshim_status {
    DTSHIM_OK = 0,
    DTSHIM_ERR_NOT_INITIALIZED = -1, /* dtshim_init() was not called (or failed) */
    DTSHIM_ERR_NO_PMIX = -2, /* a Slurm step without a PMIx or PMI-2 server (--mpi=none) */
    DTSHIM_ERR_PMIX = -3, /* a PMIx or PMI-2 call failed; see dtshim_last_error() */
    DTSHIM_ERR_TIMEOUT = -4, /* a peer did not arrive before the deadline */
    DTSHIM_ERR_BROKEN = -5, /* an earlier call timed out: exchanges are lost */
    DTSHIM_ERR_INVALID = -6, /* a bad argument (NULL buffer, root out of range) */
    DTSHIM_ERR_SIZE = -7, /* ranks passed different sizes to a fixed-size call */
    DTSHIM_ERR_MISMATCH = -8, /* ranks called different collectives at this step */
    DTSHIM_ERR_NO_MEMORY = -9,
    DTSHIM_ERR_NO_ADDRESS = -10, /* rank 0's host resolves to no usable address */
    DTSHIM_ERR_SIGNAL = -11, /* the preemption signal cannot be handled */
    DTSHIM_ERR_NO_ID = -12, /* rank 0 could not create the unique id it shares */
    DTSHIM_ERR_CUDA = -13,
    DTSHIM_ERR_NCCL = -14,
    DTSHIM_ERR_NOT_BUILT = -15, /* this libdtshim was built without NCCL */
    DTSHIM_ERR_FENCE = -16, /* the step runs Slurm's PMIx tree fence, which does not wait */
    DTSHIM_ERR_TOO_LARGE = -17, /* a payload beyond what the transport carries (PMI-2: 1 MiB) */
    DTSHIM_ERR_RANK_ORDER = -18, /* RANK, GROUP_RANK of the tasks do not order the step */
};

/* What a code means, e.g. "no PMIx server in this step: launch with srun --mpi=pmix ...".
 * Never NULL; the string is static. */
const char *dtshim_strerror (int status);

/* The detail of the last failure in the calling thread (the PMIx call and its status, the
 * rank that did not arrive ...), or "" when there is none. Valid until the next call. */
const char *dtshim_last_error (void);

/* Connect to the step's PMIx server, read the facts, install the preemption handlers.
 * - In a Slurm step with PMIx (srun --mpi=pmix, or MpiDefault=pmix): rank, size ... of the
 *   step.
 * - In a step with Slurm's PMI-2 and no PMIx (srun --mpi=pmi2): the same, over PMI-2.
 * - In a Slurm step of several tasks with neither (srun --mpi=none): DTSHIM_ERR_NO_PMIX.
 * - Outside Slurm, or in a step of one task without PMIx: a world of one, where every
 *   collective completes at once.
 * - In a step of several nodes under Slurm's tree fence (SLURM_PMIX_FENCE=tree, or
 *   PMIxCollFence=tree in mpi.conf): DTSHIM_ERR_FENCE, because that fence does not wait for
 *   the other nodes on steps of fewer nodes than TreeWidth.
 * - With DIST_TRAIN_RANK_ORDER=topology (srun --dist-train=rank_order=topology, whose plugin
 *   sets it, RANK and GROUP_RANK in every task): rank, node rank, the chief and the order of
 *   every collective are the plugin's RANK's, checked at init with one exchange of every
 *   task's RANK and GROUP_RANK (collective); DTSHIM_ERR_RANK_ORDER on every task when they do
 *   not give each task its own rank and each node its own node rank. Set on every task of
 *   the step or on none.
 * Calling it again after success does nothing and returns DTSHIM_OK. Environment:
 * DTSHIM_TIMEOUT (seconds, default 300, 0 = wait forever, at most 31536000 = a year),
 * DTSHIM_ABORT_ON_TIMEOUT=1, DTSHIM_PREEMPT_SIGNAL (a name like USR2 or SIGUSR2, a number,
 * or "none"; default USR2; faults, CONT, PIPE, CHLD, URG and ALRM are refused). */
int dtshim_init (void);

/* Restore the signal handlers and disconnect from PMIx or PMI-2. Not collective. */
int dtshim_finalize (void);

/* The facts of the step, from PMIx (over PMI-2, from its PMI_process_mapping); rank and
 * node rank from RANK and GROUP_RANK under DIST_TRAIN_RANK_ORDER=topology. Each returns -1
 * before dtshim_init(). */
int dtshim_rank (void); /* 0 .. size-1: every collective's ranks and roots are these */
int dtshim_size (void); /* tasks in the step */
int dtshim_local_rank (void); /* 0 .. local_size-1, the rank among the tasks of this node */
int dtshim_local_size (void); /* tasks of the step on this node */
int dtshim_node_rank (void); /* index of this node among the step's nodes (cross rank) */
int dtshim_node_count (void); /* nodes of the step (cross size) */
/* 1 when PMIx is in use, 0 over PMI-2 or in a world of one, -1 before dtshim_init(). */
int dtshim_has_pmix (void);
/* What carries the collectives: "pmix", "pmi2" (Slurm's PMI-2, srun --mpi=pmi2) or "none"
 * (a world of one); NULL before dtshim_init(). */
const char *dtshim_backend (void);

/* The host name of the node that runs rank 0 (the chief, dtshim_rank()'s 0), as PMIx knows it (over PMI-2, as
 * SLURM_STEP_NODELIST names it); NULL before dtshim_init(). */
const char *dtshim_chief_host (void);

/* A numeric address of the chief's node (IPv4 preferred), never loopback or link-local: the
 * chief's host name resolved, as the SPANK plugin picks MASTER_ADDR, or MASTER_ADDR when the
 * name resolves to no other address and the SPANK plugin set it (127.0.0.1 in a world of one
 * without PMIx). Written with its terminating NUL into buf of len bytes. Not collective. */
int dtshim_chief_addr (char *buf, size_t len);

/* Deadline of every collective that follows, in seconds (0 = wait forever; more than a
 * year, 31536000 s, is DTSHIM_ERR_INVALID). A collective
 * that passes it returns DTSHIM_ERR_TIMEOUT; the step's exchanges are lost then, and every
 * later collective returns DTSHIM_ERR_BROKEN: end the program, or call dtshim_abort(). */
int dtshim_set_timeout (double seconds);
double dtshim_get_timeout (void);

/* When on, a collective that times out ends the whole step (PMIx_Abort, or PMI-2's abort)
 * before returning. */
int dtshim_set_abort_on_timeout (int on);

/* End every task of the step (PMIx_Abort, or PMI-2's abort), with status for Slurm and msg
 * in its log. SIGTERM, which Slurm ends the tasks with, is the program's again (not recorded
 * as a preemption). Returns only when that fails: the server refused, or Slurm has not ended
 * the step within 10 s; or in a world of one, where it returns DTSHIM_ERR_NO_PMIX and the
 * caller should exit itself. */
int dtshim_abort (int status, const char *msg);

/* The collectives. Every rank calls each one, in the same order. */

/* Wait until every rank arrives. */
int dtshim_barrier (void);

/* Copy size bytes at buf of root into buf of every other rank. All ranks pass the same
 * size; a rank that passed another gets DTSHIM_ERR_SIZE. */
int dtshim_broadcast (void *buf, size_t size, int root);

/* Broadcast when only root knows the size: root contributes size bytes at send (send and
 * size are ignored elsewhere); every rank, root included, gets a copy in *recv (free it with
 * dtshim_free()) and its size in *recv_size. */
int dtshim_broadcastv (const void *send, size_t size, void **recv, size_t *recv_size, int root);

/* Every rank contributes size bytes (the same size on every rank); recv (size * world size
 * bytes) receives them in rank order on every rank. */
int dtshim_allgather (const void *send, size_t size, void *recv);

/* Every rank contributes its own size; *recv is set to a buffer of the contributions in
 * rank order (free it with dtshim_free()), sizes[r] to rank r's size (sizes has world size
 * entries). */
int dtshim_allgatherv (const void *send, size_t size, void **recv, size_t *sizes);

/* Like dtshim_allgather, but only root receives; recv is ignored on the other ranks. */
int dtshim_gather (const void *send, size_t size, void *recv, int root);

/* Like dtshim_allgatherv, but only root receives; elsewhere *recv is NULL and sizes is
 * left alone (it may be NULL there). */
int dtshim_gatherv (const void *send, size_t size, void **recv, size_t *sizes, int root);

/* Free a buffer returned by dtshim_allgatherv() or dtshim_gatherv(). */
void dtshim_free (void *p);

/* Share a unique id (an ncclUniqueId, an NVSHMEM id ...) of len bytes from rank 0. Rank 0
 * passes ok = 1 when it created the id, 0 when creating it failed: then every rank gets
 * DTSHIM_ERR_NO_ID instead of a zeroed id (an all-zero id is the failure marker, as in UCC).
 * ok is ignored on the other ranks. */
int dtshim_share_unique_id (void *id, size_t len, int ok);

/* Several ids, as ncclCommInitRankScalable takes for large steps: id i (of count, 1 <= count
 * <= size) is created by rank dtshim_unique_id_root(i, count), spread evenly over the ranks;
 * each root puts its id at ids + i * len and passes ok (0: creating it failed), the others
 * pass any content. On return every rank has all count ids; when a root failed, every rank
 * gets DTSHIM_ERR_NO_ID. Collective. */
int dtshim_share_unique_ids (void *ids, size_t len, int count, int ok);

/* The rank that creates id i of count (i * size / count), or a negative error. */
int dtshim_unique_id_root (int i, int count);

/* Preemption. Slurm sends SIGTERM (preemption, scancel, the time limit) or the signal of
 * `--signal` ahead of time. dtshim_init() records both with sigaction:
 * - the preemption signal (DTSHIM_PREEMPT_SIGNAL, default SIGUSR2) is recorded only: it no
 *   longer ends the program;
 * - the first SIGTERM is recorded so the program can checkpoint at its next
 *   dtshim_should_preempt(); a second SIGTERM ends the program as SIG_DFL would (Slurm sends
 *   SIGKILL after KillWait anyway).
 * A handler the program installed before dtshim_init() is called after the recording, for
 * both signals (a handler installed after dtshim_init() replaces the recording). */

/* Collective: 1 on every rank when any rank has received a preemption signal (or called
 * dtshim_request_preempt()) before this call, else 0; the same answer on every rank at the
 * same call. Once 1, it stays 1 and no longer exchanges anything. Negative on error. */
int dtshim_should_preempt (void);

/* Local, not collective: 1 when this process has recorded a preemption signal. */
int dtshim_preempt_requested (void);

/* Record a preemption request as if the signal had arrived (e.g. from a watchdog thread). */
void dtshim_request_preempt (void);

/* Change the recorded preemption signal (0 = none besides SIGTERM); after dtshim_init().
 * DTSHIM_ERR_INVALID for KILL, STOP, TERM, the faults (SEGV, BUS, FPE, ILL, TRAP, SYS) and
 * CONT, PIPE, CHLD, URG, ALRM. */
int dtshim_set_preempt_signal (int signo);

/* Progress watchdog (off by default). With DIST_TRAIN_WATCHDOG=SECONDS in the environment
 * (--dist-train=watchdog=SECONDS sets it), dtshim_init() starts a thread that ends the whole
 * step (PMIx_Abort or PMI-2's abort, exit status 124) when dtshim_progress() has not been called for that
 * long, counting from dtshim_init(): call it once per training step. A bad value makes
 * dtshim_init() fail with DTSHIM_ERR_INVALID. dtshim_progress() is a relaxed atomic store of
 * the clock: safe from any thread, and cheap (scripts/bench-shim measures it). */
int dtshim_progress (void);

/* The watchdog's limit in seconds, 0 when it is off. */
double dtshim_watchdog_limit (void);

/* NCCL: create the step's communicator. Selects the CUDA device (device >= 0, else the
 * local rank modulo the visible devices), has rank 0 create the unique id, shares it with
 * dtshim_share_unique_id() and calls ncclCommInitRankConfig. With a deadline set
 * (dtshim_set_timeout > 0) the communicator is created non-blocking (config.blocking = 0,
 * which stays so for its later NCCL calls): a peer that never comes gives
 * DTSHIM_ERR_TIMEOUT and the communicator is aborted; with no deadline it is a blocking one.
 * *comm is an ncclComm_t. Collective. DTSHIM_ERR_NOT_BUILT when libdtshim was built without
 * NCCL (dtshim_has_nccl() says which). Compiled and linked, not yet run on a GPU. */
struct ncclComm;
int dtshim_nccl_comm_init (struct ncclComm **comm, int device);
int dtshim_has_nccl (void);

#ifdef __cplusplus
}
#endif

#endif
