/* nccl.c - the step's NCCL communicator, bootstrapped over PMIx instead of a TCP store.
 * Compiled and linked where configure found CUDA and NCCL; without them only the stubs at
 * the end are built. As of this writing it has been compiled and linked but never run on a
 * GPU: the id exchange under it (dtshim_share_unique_id) is what the tests exercise. */
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

static int select_device (int device)
{
    cudaError_t cerr;
    int count = 0;

    const char *chosen = getenv ("DIST_TRAIN_DEVICE");

    /* --dist-train's choice for this rank (issue 4), an index into CUDA_VISIBLE_DEVICES */
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

int dtshim_nccl_comm_init (struct ncclComm **comm, int device)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ncclResult_t nrc, state = ncclInProgress;
    ncclUniqueId id;
    ncclComm_t made = NULL;
    double deadline;
    int rv, ok = 1;

    if (comm == NULL)
        return DTSHIM_ERR_INVALID;
    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if ((rv = select_device (device)) != DTSHIM_OK)
        return rv;
    if (shim_world.rank == 0 && (nrc = ncclGetUniqueId (&id)) != ncclSuccess) {
        shim_fail (DTSHIM_ERR_NCCL, "ncclGetUniqueId: %s", ncclGetErrorString (nrc));
        ok = 0; /* the others learn it from the all-zero id */
    }
    if ((rv = dtshim_share_unique_id (&id, sizeof (id), ok)) != DTSHIM_OK)
        return rv;
    /* Non-blocking, so that a peer that never connects ends in an error at our deadline
	 * rather than in NCCL's retries. */
    config.blocking = shim_world.timeout_s > 0 ? 0 : 1;
    nrc = ncclCommInitRankConfig (&made, shim_world.size, id, shim_world.rank, &config);
    if (nrc != ncclSuccess && nrc != ncclInProgress)
        return shim_fail (DTSHIM_ERR_NCCL, "ncclCommInitRankConfig: %s", ncclGetErrorString (nrc));
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
                              "ncclCommInitRankConfig: not "
                              "every rank connected within %g s",
                              shim_world.timeout_s);
        return shim_fail (DTSHIM_ERR_NCCL, "ncclCommInitRankConfig: %s",
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
