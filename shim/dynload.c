/* dynload.c - the libraries libdtshim calls but does not link: libpmix, and NCCL with the
 * CUDA runtime where configure found them, each opened at its first call. A step over PMI-2
 * then needs no libpmix, and a program that makes no NCCL communicator needs no GPU
 * library: the shim loads in a container image that has neither.
 *
 * The functions below carry the libraries' own names and types (from their headers), so the
 * call sites, and the PMIx macros that call functions (PMIX_INFO_LOAD, PMIX_VALUE_RELEASE),
 * are unchanged; libdtshim.map keeps them out of the library's exports. Which functions the
 * macros call differs between PMIx releases: the link (--no-undefined) names one missing
 * here. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

#ifdef DTSHIM_WITH_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

#ifndef SHIM_PMIX_LIBDIR
#define SHIM_PMIX_LIBDIR ""
#endif
#ifndef SHIM_NCCL_LIBDIR
#define SHIM_NCCL_LIBDIR ""
#endif
#ifndef SHIM_CUDA_LIBDIR
#define SHIM_CUDA_LIBDIR ""
#endif

struct shim_library {
    const char *what; /* for the messages */
    const char *dir; /* where configure found it: tried before the loader's search path */
    char soname[32];
    void *handle;
    bool tried;
    char why[512]; /* dlerror() of the last try, when it failed */
};

static struct shim_library libraries[SHIM_LIB_COUNT] = {
    [SHIM_LIB_PMIX] = {"PMIx", SHIM_PMIX_LIBDIR, "libpmix.so.2", NULL, false, ""},
    [SHIM_LIB_NCCL] = {"NCCL", SHIM_NCCL_LIBDIR, "libnccl.so.2", NULL, false, ""},
    [SHIM_LIB_CUDART] = {"the CUDA runtime", SHIM_CUDA_LIBDIR, "", NULL, false, ""},
};
static pthread_mutex_t libraries_lock = PTHREAD_MUTEX_INITIALIZER;

static void *open_library (struct shim_library *l)
{
    char path[4096];
    const char *why;
    void *h = NULL;

    if (l->dir[0] != '\0'
        && snprintf (path, sizeof (path), "%s/%s", l->dir, l->soname) < (int) sizeof (path))
        h = dlopen (path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        h = dlopen (l->soname, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL && (why = dlerror ()) != NULL)
        snprintf (l->why, sizeof (l->why), "%s", why);
    return h;
}

static struct shim_library *library (enum shim_lib lib)
{
    struct shim_library *l = &libraries[lib];

    pthread_mutex_lock (&libraries_lock);
    if (!l->tried) {
#ifdef CUDART_VERSION
        if (lib == SHIM_LIB_CUDART)
            snprintf (l->soname, sizeof (l->soname), "libcudart.so.%d", CUDART_VERSION / 1000);
#endif
        l->tried = true;
        if (l->soname[0] != '\0')
            l->handle = open_library (l);
        else
            snprintf (l->why, sizeof (l->why), "libdtshim was built without it");
    }
    pthread_mutex_unlock (&libraries_lock);
    return l;
}

void *shim_sym (enum shim_lib lib, const char *name)
{
    struct shim_library *l = library (lib);

    return l->handle != NULL ? dlsym (l->handle, name) : NULL;
}

int shim_lib_require (enum shim_lib lib, int status, const char *fix)
{
    struct shim_library *l = library (lib);

    if (l->handle != NULL)
        return DTSHIM_OK;
    return shim_fail (status, "%s (%s) cannot be loaded here: %s; %s", l->what, l->soname,
                      l->why[0] != '\0' ? l->why : "not found", fix);
}

/* FORWARD(LIB, TYPE, NAME, PARAMS, ARGS, FALLBACK): NAME, which returns TYPE: LIB's NAME
 * called with ARGS, or FALLBACK without LIB. */
#define FORWARD(lib, type, name, params, args, fallback)                                           \
    type name params                                                                               \
    {                                                                                              \
        __typeof__ (name) *real = (__typeof__ (name) *) shim_sym (lib, #name);                     \
        return real != NULL ? real args : fallback;                                                \
    }
/* the same for a function that returns nothing */
#define FORWARD_VOID(lib, name, params, args)                                                      \
    void name params                                                                               \
    {                                                                                              \
        __typeof__ (name) *real = (__typeof__ (name) *) shim_sym (lib, #name);                     \
        if (real != NULL)                                                                          \
            real args;                                                                             \
    }

/* (shim_pmix_connect checks that libpmix loads before the first of these is called) */
#define P SHIM_LIB_PMIX
FORWARD (P, pmix_status_t, PMIx_Init, (pmix_proc_t * proc, pmix_info_t info[], size_t ninfo),
         (proc, info, ninfo), PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, pmix_status_t, PMIx_Finalize, (const pmix_info_t info[], size_t ninfo), (info, ninfo),
         PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, pmix_status_t, PMIx_Abort,
         (int status, const char msg[], pmix_proc_t procs[], size_t nprocs),
         (status, msg, procs, nprocs), PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, pmix_status_t, PMIx_Put, (pmix_scope_t scope, const char key[], pmix_value_t *val),
         (scope, key, val), PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, pmix_status_t, PMIx_Commit, (void), (), PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, pmix_status_t, PMIx_Fence_nb,
         (const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo,
          pmix_op_cbfunc_t cbfunc, void *cbdata),
         (procs, nprocs, info, ninfo, cbfunc, cbdata), PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, pmix_status_t, PMIx_Get,
         (const pmix_proc_t *proc, const char key[], const pmix_info_t info[], size_t ninfo,
          pmix_value_t **val),
         (proc, key, info, ninfo, val), PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, pmix_status_t, PMIx_Get_nb,
         (const pmix_proc_t *proc, const char key[], const pmix_info_t info[], size_t ninfo,
          pmix_value_cbfunc_t cbfunc, void *cbdata),
         (proc, key, info, ninfo, cbfunc, cbdata), PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, const char *, PMIx_Error_string, (pmix_status_t status), (status),
         "(libpmix not loaded)")
FORWARD (P, pmix_status_t, PMIx_Info_load,
         (pmix_info_t * info, const char *key, const void *data, pmix_data_type_t type),
         (info, key, data, type), PMIX_ERR_NOT_SUPPORTED)
FORWARD (P, pmix_status_t, PMIx_Value_load,
         (pmix_value_t * val, const void *data, pmix_data_type_t type), (val, data, type),
         PMIX_ERR_NOT_SUPPORTED)
FORWARD_VOID (P, PMIx_Value_destruct, (pmix_value_t * val), (val))
#if PMIX_VERSION_MAJOR >= 5
/* what PMIx 5's macros call */
FORWARD (P, pmix_info_t *, PMIx_Info_create, (size_t n), (n), NULL)
FORWARD_VOID (P, PMIx_Info_destruct, (pmix_info_t * p), (p))
FORWARD_VOID (P, PMIx_Info_free, (pmix_info_t * p, size_t n), (p, n))
FORWARD_VOID (P, PMIx_Load_nspace, (pmix_nspace_t nspace, const char *str), (nspace, str))
FORWARD_VOID (P, PMIx_Load_procid, (pmix_proc_t * p, const char *ns, pmix_rank_t rk), (p, ns, rk))
FORWARD_VOID (P, PMIx_Value_free, (pmix_value_t * v, size_t n), (v, n))
#endif
#undef P

#ifdef DTSHIM_WITH_NCCL
/* (dtshim_nccl_comm_init checks that both load before the first of these is called) */
#define C SHIM_LIB_CUDART
FORWARD (C, cudaError_t, cudaGetDeviceCount, (int *count), (count), cudaErrorInitializationError)
FORWARD (C, cudaError_t, cudaSetDevice, (int device), (device), cudaErrorInitializationError)
FORWARD (C, const char *, cudaGetErrorString, (cudaError_t error), (error),
         "(the CUDA runtime not loaded)")
#undef C
#define N SHIM_LIB_NCCL
FORWARD (N, ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId), (uniqueId), ncclSystemError)
FORWARD (N, const char *, ncclGetErrorString, (ncclResult_t result), (result), "(NCCL not loaded)")
FORWARD (N, ncclResult_t, ncclCommInitRankConfig,
         (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config),
         (comm, nranks, commId, rank, config), ncclSystemError)
#if NCCL_VERSION_CODE >= 22300
FORWARD (N, ncclResult_t, ncclCommInitRankScalable,
         (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
          ncclConfig_t *config),
         (newcomm, nranks, myrank, nId, commIds, config), ncclSystemError)
#endif
FORWARD (N, ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError),
         (comm, asyncError), ncclSystemError)
FORWARD (N, ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm), ncclSystemError)
#undef N
#endif
