/* nccl.c - the step's NCCL communicator, bootstrapped over PMIx instead of a TCP store.
 * Compiled where configure found CUDA's and NCCL's headers; without them only the stubs at
 * the end are built. Both libraries are opened at the first communicator (dynload.c). As of this writing it has been compiled and linked but never run on a
 * GPU: the id exchanges under it (dtshim_share_unique_id, dtshim_share_unique_ids) are what
 * the tests exercise. */
#include "shim/dtshim.h"
#include "shim/shim.h"

#ifdef DTSHIM_WITH_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof (ncclUniqueId) == NCCL_UNIQUE_ID_BYTES, "ncclUniqueId size");

static double now_s (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Opened at the first communicator, not when libdtshim loads: a program that makes none
 * needs neither library. */
static int open_libraries (void)
{
    int rv = shim_lib_require (SHIM_LIB_CUDART, DTSHIM_ERR_CUDA,
                               "run it where the CUDA runtime is, or mount the node's");

    if (rv != DTSHIM_OK)
        return rv;
    return shim_lib_require (SHIM_LIB_NCCL, DTSHIM_ERR_NCCL, "install NCCL, or mount the node's");
}

static int select_device (int device)
{
    cudaError_t cerr;
    int count = 0;

    const char *chosen = getenv ("DIST_TRAIN_DEVICE");

    /* --dist-train's choice of GPU for this rank, an index into CUDA_VISIBLE_DEVICES */
    if (device < 0 && chosen != NULL && chosen[0] >= '0' && chosen[0] <= '9'
        && strspn (chosen, "0123456789") == strlen (chosen) && strlen (chosen) < 6)
        device = atoi (chosen);
    if (device < 0) {
        if ((cerr = cudaGetDeviceCount (&count)) != cudaSuccess || count <= 0)
            return shim_fail (DTSHIM_ERR_CUDA, "cudaGetDeviceCount: %s",
                              cerr != cudaSuccess ? cudaGetErrorString (cerr) : "no device");
        /* One task per GPU, or Slurm already narrowed CUDA_VISIBLE_DEVICES per task. */
        device = shim_world.local_rank % count;
    }
    if ((cerr = cudaSetDevice (device)) != cudaSuccess)
        return shim_fail (DTSHIM_ERR_CUDA, "cudaSetDevice(%d): %s", device,
                          cudaGetErrorString (cerr));
    return DTSHIM_OK;
}

/* Ranks per root id for large steps (ncclCommInitRankScalable, NCCL 2.23+): PyTorch/XLA's
 * default; DTSHIM_NCCL_RANKS_PER_ROOT changes it. */
#define RANKS_PER_ROOT 128

static int root_count (void)
{
    const char *text = getenv ("DTSHIM_NCCL_RANKS_PER_ROOT");
    long per = RANKS_PER_ROOT;

    if (text != NULL && strspn (text, "0123456789") == strlen (text) && strlen (text) < 8
        && atol (text) > 0)
        per = atol (text);
    return (int) ((shim_world.size + per - 1) / per);
}

/* The ids of the step: one from rank 0, or one per RANKS_PER_ROOT ranks, each from its root. */
static int share_ids (ncclUniqueId *ids, int count)
{
    ncclResult_t nrc;
    int i, ok = 1;

    for (i = 0; i < count; i++) {
        if (dtshim_unique_id_root (i, count) != shim_world.rank)
            continue;
        if ((nrc = ncclGetUniqueId (&ids[i])) != ncclSuccess) {
            shim_fail (DTSHIM_ERR_NCCL, "ncclGetUniqueId: %s", ncclGetErrorString (nrc));
            ok = 0; /* the others learn it from the exchange */
        }
    }
    if (count == 1)
        return dtshim_share_unique_id (&ids[0], sizeof (ids[0]), ok);
    return dtshim_share_unique_ids (ids, sizeof (ids[0]), count, ok);
}

int dtshim_nccl_comm_init (struct ncclComm **comm, int device)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ncclResult_t nrc, state = ncclInProgress;
    ncclUniqueId *ids;
    ncclComm_t made = NULL;
    double deadline;
    int rv, count = 1;

    if (comm == NULL)
        return DTSHIM_ERR_INVALID;
    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if ((rv = open_libraries ()) != DTSHIM_OK || (rv = select_device (device)) != DTSHIM_OK)
        return rv;
#if NCCL_VERSION_CODE >= 22300
    count = root_count ();
#endif
    if ((ids = calloc ((size_t) count, sizeof (*ids))) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    if ((rv = share_ids (ids, count)) != DTSHIM_OK) {
        free (ids);
        return rv;
    }
    /* Non-blocking, so that a peer that never connects ends in an error at our deadline
     * rather than in NCCL's retries. */
    config.blocking = shim_world.timeout_s > 0 ? 0 : 1;
#if NCCL_VERSION_CODE >= 22300
    if (count > 1)
        nrc =
            ncclCommInitRankScalable (&made, shim_world.size, shim_world.rank, count, ids, &config);
    else
#endif
        nrc = ncclCommInitRankConfig (&made, shim_world.size, ids[0], shim_world.rank, &config);
    free (ids);
    if (nrc != ncclSuccess && nrc != ncclInProgress)
        return shim_fail (DTSHIM_ERR_NCCL, "creating the NCCL communicator: %s",
                          ncclGetErrorString (nrc));
    deadline = now_s () + shim_world.timeout_s;
    while (state == ncclInProgress) {
        if ((nrc = ncclCommGetAsyncError (made, &state)) != ncclSuccess)
            state = nrc;
        else if (state == ncclInProgress && shim_world.timeout_s > 0 && now_s () > deadline)
            break;
        else if (state == ncclInProgress)
            sched_yield ();
    }
    if (state != ncclSuccess) {
        ncclCommAbort (made);
        if (state == ncclInProgress)
            return shim_fail (DTSHIM_ERR_TIMEOUT,
                              "creating the NCCL communicator: not "
                              "every rank connected within %g s",
                              shim_world.timeout_s);
        return shim_fail (DTSHIM_ERR_NCCL, "creating the NCCL communicator: %s",
                          ncclGetErrorString (state));
    }
    *comm = made;
    return DTSHIM_OK;
}

int dtshim_has_nccl (void)
{
    return 1;
}

#else

int dtshim_nccl_comm_init (struct ncclComm **comm, int device)
{
    return shim_fail (DTSHIM_ERR_NOT_BUILT, "configure did not find CUDA and NCCL");
}

int dtshim_has_nccl (void)
{
    return 0;
}

#endif
