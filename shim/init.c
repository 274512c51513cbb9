/* init.c - connecting to the step's PMIx server, the facts it gives, settings and errors. */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libdist/address.h"
#include "libdist/io.h"
#include "shim/dtshim.h"
#include "shim/shim.h"
#include "shim/wire.h"

/* Slurm's own PMIx fence gives up after PMIxTimeout, 300 s by default: ours is the same, so
 * a dead peer is reported no later than Slurm would, without waiting on it. */
#define DEFAULT_TIMEOUT_S 300.0

/* mpi.conf holds a few lines: a larger file there is not read whole for one setting. */
#define MPI_CONF_MAX 65535

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
    }
    return "unknown dtshim status";
}

static int get_int (const pmix_proc_t *proc, const char *key, int *out)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get (proc, key, NULL, 0, &v);
    int ok;

    if (rc != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Get(%s) failed: %s", key, PMIx_Error_string (rc));
    ok = shim_value_int (v, out);
    PMIX_VALUE_RELEASE (v);
    if (ok != 0)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Get(%s): not a non-negative integer", key);
    return DTSHIM_OK;
}

/* PMIX_NUM_NODES when the server gives it, else one more than the highest node id. */
static int read_node_count (const pmix_proc_t *job)
{
    pmix_proc_t peer;
    int n = 0, id;

    if (get_int (job, PMIX_NUM_NODES, &n) == DTSHIM_OK && n > 0) {
        shim_world.node_count = n;
        return DTSHIM_OK;
    }
    PMIX_LOAD_NSPACE (peer.nspace, shim_world.self.nspace);
    for (int r = 0; r < shim_world.size; r++) {
        peer.rank = (pmix_rank_t) r;
        if (get_int (&peer, PMIX_NODEID, &id) != DTSHIM_OK)
            return DTSHIM_ERR_PMIX;
        if (id + 1 > n)
            n = id + 1;
    }
    shim_world.node_count = n;
    return DTSHIM_OK;
}

static int read_facts (void)
{
    const pmix_proc_t *me = &shim_world.self;
    pmix_proc_t job, chief;
    pmix_value_t *v = NULL;
    pmix_status_t rc;
    int rv;

    PMIX_LOAD_PROCID (&job, shim_world.self.nspace, PMIX_RANK_WILDCARD);
    PMIX_LOAD_PROCID (&chief, shim_world.self.nspace, 0);
    shim_world.rank = (int) shim_world.self.rank;
    if ((rv = get_int (&job, PMIX_JOB_SIZE, &shim_world.size)) != DTSHIM_OK
        || (rv = get_int (me, PMIX_LOCAL_RANK, &shim_world.local_rank)) != DTSHIM_OK
        || (rv = get_int (&job, PMIX_LOCAL_SIZE, &shim_world.local_size)) != DTSHIM_OK
        || (rv = get_int (me, PMIX_NODEID, &shim_world.node_rank)) != DTSHIM_OK
        || (rv = read_node_count (&job)) != DTSHIM_OK)
        return rv;
    rc = PMIx_Get (&chief, PMIX_HOSTNAME, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || v->type != PMIX_STRING || v->data.string == NULL) {
        if (v != NULL)
            PMIX_VALUE_RELEASE (v);
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Get(PMIX_HOSTNAME of rank 0) failed: %s",
                          PMIx_Error_string (rc));
    }
    snprintf (shim_world.chief_host, sizeof (shim_world.chief_host), "%s", v->data.string);
    PMIX_VALUE_RELEASE (v);
    return DTSHIM_OK;
}

/* Which collective Slurm's PMIx runs for this step's fences: SLURM_PMIX_FENCE in the step's
 * environment, else PMIxCollFence in mpi.conf beside slurm.conf (Slurm reads them in that
 * order). "tree" is no synchronization on most steps: Slurm builds its tree with TreeWidth
 * (50 in 22.05, 16 from 24.05) and a step of fewer nodes gets no tree at all, so every node
 * completes each fence alone (pmixp_coll_tree.c, reverse_tree_info). The default "mixed"
 * runs a fence that collects data as a ring, which waits for every rank. */
static bool tree_fence (char *where, size_t len)
{
    const char *env = getenv ("SLURM_PMIX_FENCE"), *conf = getenv ("SLURM_CONF"), *slash;
    char path[4096], *text, value[16];
    size_t text_len;
    bool found;

    if (env != NULL) {
        snprintf (where, len, "SLURM_PMIX_FENCE=%.16s", env);
        return strcmp (env, "tree") == 0;
    }
    if (conf == NULL || (slash = strrchr (conf, '/')) == NULL)
        conf = SLURM_SYSCONFDIR "/slurm.conf", slash = strrchr (conf, '/');
    if ((size_t) (slash - conf) + sizeof ("/mpi.conf") > sizeof (path))
        return false;
    snprintf (path, sizeof (path), "%.*s/mpi.conf", (int) (slash - conf), conf);
    if ((text = dist_read_file (path, MPI_CONF_MAX, DIST_FILE_ANYONE, &text_len)) == NULL)
        return false;
    found = shim_conf_value (text, strlen (text), "PMIxCollFence", value, sizeof (value));
    free (text);
    if (!found)
        return false;
    snprintf (where, len, "PMIxCollFence=%s in %s", value, path);
    return strcmp (value, "tree") == 0;
}

static void world_of_one (void)
{
    shim_world.transport = NULL;
    shim_world.rank = shim_world.local_rank = shim_world.node_rank = 0;
    shim_world.size = shim_world.local_size = shim_world.node_count = 1;
    if (gethostname (shim_world.chief_host, sizeof (shim_world.chief_host) - 1) != 0)
        snprintf (shim_world.chief_host, sizeof (shim_world.chief_host), "localhost");
}

static int read_settings (void)
{
    const char *text;

    text = getenv ("DTSHIM_TIMEOUT");
    if (text != NULL && shim_parse_timeout (text, &shim_world.timeout_s) != 0)
        return shim_fail (DTSHIM_ERR_INVALID, "DTSHIM_TIMEOUT=%s: want seconds (0 = forever)",
                          text);
    text = getenv ("DTSHIM_ABORT_ON_TIMEOUT");
    shim_world.abort_on_timeout = text != NULL && strcmp (text, "1") == 0;
    return DTSHIM_OK;
}

/* After a timeout a fence is still pending in the server: PMIx_Finalize would wait on it. */
int shim_pmix_disconnect (void)
{
    pmix_status_t rc;

    if (shim_world.broken)
        return DTSHIM_OK;
    if ((rc = PMIx_Finalize (NULL, 0)) != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Finalize failed: %s", PMIx_Error_string (rc));
    return DTSHIM_OK;
}

int shim_pmix_connect (void)
{
    char where[4200];
    pmix_status_t rc;
    int rv;

    rc = PMIx_Init (&shim_world.self, NULL, 0);
    if (rc != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Init failed: %s", PMIx_Error_string (rc));
    if ((rv = read_facts ()) != DTSHIM_OK) {
        shim_pmix_disconnect ();
        return rv;
    }
    if (shim_world.node_count > 1 && tree_fence (where, sizeof (where))) {
        shim_pmix_disconnect ();
        return shim_fail (DTSHIM_ERR_FENCE, "%s", where);
    }
    return DTSHIM_OK;
}

/* The step's server: PMIx where srun started one (--mpi=pmix), else Slurm's PMI-2
 * (--mpi=pmi2, which every Slurm has), else none. */
static int connect_server (void)
{
    const struct shim_transport *t = NULL;
    const char *tasks;
    int rv;

    if (getenv ("PMIX_NAMESPACE") != NULL)
        t = &shim_pmix_transport;
    else if (getenv ("PMI_FD") != NULL)
        t = &shim_pmi2_transport;
    if (t != NULL) {
        if ((rv = t->connect ()) == DTSHIM_OK)
            shim_world.transport = t;
        return rv;
    }
    /* Several tasks and no server: a world of one each would silently train N separate
     * models. */
    tasks = getenv ("SLURM_STEP_NUM_TASKS");
    if (tasks != NULL && atoi (tasks) > 1)
        return shim_fail (DTSHIM_ERR_NO_PMIX,
                          "step of %s tasks without PMIX_NAMESPACE or PMI_FD in the environment",
                          tasks);
    world_of_one ();
    return DTSHIM_OK;
}

static int disconnect (void)
{
    const struct shim_transport *t = shim_world.transport;

    shim_world.transport = NULL;
    return t != NULL ? t->disconnect () : DTSHIM_OK;
}

int dtshim_init (void)
{
    int rv;

    if (shim_world.initialized)
        return DTSHIM_OK;
    last_error[0] = '\0';
    shim_world.broken = false;
    if ((rv = read_settings ()) != DTSHIM_OK || (rv = connect_server ()) != DTSHIM_OK)
        return rv;
    if ((rv = shim_preempt_install ()) != DTSHIM_OK) {
        disconnect ();
        return rv;
    }
    if ((rv = shim_watchdog_start ()) != DTSHIM_OK) {
        shim_preempt_restore ();
        disconnect ();
        return rv;
    }
    shim_world.seq = 0;
    shim_world.initialized = true;
    return DTSHIM_OK;
}

int dtshim_finalize (void)
{
    int rv;

    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    shim_watchdog_stop ();
    shim_preempt_restore ();
    shim_world.initialized = false;
    rv = disconnect ();
    shim_world.rank = shim_world.size = shim_world.local_rank = shim_world.local_size = -1;
    shim_world.node_rank = shim_world.node_count = -1;
    return rv;
}

int dtshim_rank (void)
{
    return shim_world.initialized ? shim_world.rank : -1;
}
int dtshim_size (void)
{
    return shim_world.initialized ? shim_world.size : -1;
}
int dtshim_local_rank (void)
{
    return shim_world.initialized ? shim_world.local_rank : -1;
}
int dtshim_local_size (void)
{
    return shim_world.initialized ? shim_world.local_size : -1;
}
int dtshim_node_rank (void)
{
    return shim_world.initialized ? shim_world.node_rank : -1;
}
int dtshim_node_count (void)
{
    return shim_world.initialized ? shim_world.node_count : -1;
}
int dtshim_has_pmix (void)
{
    return shim_world.initialized ? shim_world.transport == &shim_pmix_transport : -1;
}

const char *dtshim_backend (void)
{
    if (!shim_world.initialized)
        return NULL;
    return shim_world.transport != NULL ? shim_world.transport->name : "none";
}

const char *dtshim_chief_host (void)
{
    return shim_world.initialized ? shim_world.chief_host : NULL;
}

int dtshim_chief_addr (char *buf, size_t len)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *list = NULL;
    char resolved[DIST_ADDR_MAX];
    const char *master, *addr = NULL;
    int rc;

    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if (buf == NULL || len == 0)
        return DTSHIM_ERR_INVALID;
    /* The SPANK plugin's policy (libdist/address.c), so both name the same address: never
     * loopback or link-local, which the other nodes cannot reach. */
    rc = getaddrinfo (shim_world.chief_host, NULL, &hints, &list);
    if (rc == 0 && dist_address_pick (list, resolved, sizeof (resolved)) == 0)
        addr = resolved;
    else if ((master = getenv ("MASTER_ADDR")) != NULL && *master != '\0')
        addr = master; /* the SPANK plugin's choice, from Slurm's NodeAddr for that node */
    else if (shim_world.transport == NULL)
        addr = "127.0.0.1"; /* a world of one: every peer is this process, loopback reaches it */
    if (list != NULL)
        freeaddrinfo (list);
    if (addr == NULL)
        return shim_fail (DTSHIM_ERR_NO_ADDRESS, "%s: %s", shim_world.chief_host,
                          rc != 0 ? gai_strerror (rc) : "only loopback or link-local addresses");
    if ((size_t) snprintf (buf, len, "%s", addr) >= len)
        return DTSHIM_ERR_INVALID;
    return DTSHIM_OK;
}

int dtshim_set_timeout (double seconds)
{
    if (!(seconds >= 0 && seconds <= SHIM_TIMEOUT_MAX))
        return DTSHIM_ERR_INVALID;
    shim_world.timeout_s = seconds;
    return DTSHIM_OK;
}

double dtshim_get_timeout (void)
{
    return shim_world.timeout_s;
}

int dtshim_set_abort_on_timeout (int on)
{
    shim_world.abort_on_timeout = on != 0;
    return DTSHIM_OK;
}

/* How long dtshim_abort waits, once the server has its request, for Slurm to end the step
 * (PMIx_Abort returns when its server has the request, PMI-2's abort has no answer). */
#define ABORT_WAIT_S 10

int dtshim_abort (int status, const char *msg)
{
    struct timespec left = {ABORT_WAIT_S, 0};
    int rv;

    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if (shim_world.transport == NULL)
        return DTSHIM_ERR_NO_PMIX;
    /* Slurm ends the step with SIGTERM: let the first one end this task too. */
    shim_preempt_restore ();
    if ((rv = shim_world.transport->abort (status, msg != NULL ? msg : "dtshim_abort"))
        != DTSHIM_OK)
        return rv;
    while (nanosleep (&left, &left) != 0 && errno == EINTR)
        ;
    return shim_fail (DTSHIM_ERR_PMIX, "%s abort: Slurm did not end the step within %d s",
                      shim_world.transport->name, ABORT_WAIT_S);
}
