/* pmix.c - the connection to the step's PMIx server (srun --mpi=pmix) and the facts it gives;
 * exchange.c carries the collectives over it. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libdist/io.h"
#include "libdist/slurmconf.h"
#include "shim/dtshim.h"
#include "shim/shim.h"
#include "shim/wire.h"

/* mpi.conf holds a few lines: a larger file there is not read whole for one setting. */
#define MPI_CONF_MAX 65535

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

/* The chief's host: PMIX_HOSTNAME of its rank (its node id is Slurm's, unused here). */
int shim_pmix_name_chief (int rank, int node)
{
    pmix_proc_t chief;
    pmix_value_t *v = NULL;
    pmix_status_t rc;

    (void) node;
    PMIX_LOAD_PROCID (&chief, shim_world.self.nspace, (pmix_rank_t) rank);
    rc = PMIx_Get (&chief, PMIX_HOSTNAME, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || v->type != PMIX_STRING || v->data.string == NULL) {
        if (v != NULL)
            PMIX_VALUE_RELEASE (v);
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Get(PMIX_HOSTNAME of task %d) failed: %s", rank,
                          PMIx_Error_string (rc));
    }
    snprintf (shim_world.chief_host, sizeof (shim_world.chief_host), "%s", v->data.string);
    PMIX_VALUE_RELEASE (v);
    return DTSHIM_OK;
}

static int read_facts (void)
{
    const pmix_proc_t *me = &shim_world.self;
    pmix_proc_t job;
    int rv;

    PMIX_LOAD_PROCID (&job, shim_world.self.nspace, PMIX_RANK_WILDCARD);
    shim_world.transport_rank = (int) shim_world.self.rank;
    if ((rv = get_int (&job, PMIX_JOB_SIZE, &shim_world.size)) != DTSHIM_OK
        || (rv = get_int (me, PMIX_LOCAL_RANK, &shim_world.local_rank)) != DTSHIM_OK
        || (rv = get_int (&job, PMIX_LOCAL_SIZE, &shim_world.local_size)) != DTSHIM_OK
        || (rv = get_int (me, PMIX_NODEID, &shim_world.node_rank)) != DTSHIM_OK
        || (rv = read_node_count (&job)) != DTSHIM_OK)
        return rv;
    return shim_pmix_name_chief (0, -1);
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
    found = dist_slurm_conf_value (text, strlen (text), "PMIxCollFence", value, sizeof (value));
    free (text);
    if (!found)
        return false;
    snprintf (where, len, "PMIxCollFence=%s in %s", value, path);
    return strcmp (value, "tree") == 0;
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

/* Inside a container: the step's server directory (PMIX_SERVER_TMPDIR, under slurmd's spool)
 * is not there unless the container mounts it, as enroot's 50-slurm-pmi.sh hook does. The
 * client's shared-memory stores (PMIx 5's gds/shmem2, 4's dstore) live there and fail to
 * attach, and the client then has no facts; the hash store asks the server over the
 * connection instead. A choice of the user's (PMIX_MCA_gds) stands. */
static void store_without_server_dir (void)
{
    const char *dir = getenv ("PMIX_SERVER_TMPDIR");

    if (dir != NULL && getenv ("PMIX_MCA_gds") == NULL && access (dir, X_OK) != 0)
        setenv ("PMIX_MCA_gds", "hash", 0);
}

/* Slurm's server checks the uid a client reports (PMIX_SECURITY_MODE=native): in a container
 * that maps the job's user to root (pyxis's --container-remap-root, its default in some
 * releases) it closes the connection, and PMIx_Init says only PMIX_ERR_UNREACH. */
static int check_remapped_root (void)
{
    const char *job_uid = getenv ("SLURM_JOB_UID");

    if (job_uid == NULL || getuid () != 0 || strcmp (job_uid, "0") == 0
        || strspn (job_uid, "0123456789") != strlen (job_uid) || strlen (job_uid) > 10)
        return DTSHIM_OK;
    return shim_fail (DTSHIM_ERR_PMIX,
                      "this task runs as root in a container that maps the job's user (uid %s) "
                      "to root, and Slurm's PMIx server refuses a client whose uid is not the "
                      "job's: run the step with --no-container-remap-root, or over srun "
                      "--mpi=pmi2",
                      job_uid);
}

int shim_pmix_connect (void)
{
    char where[4200];
    pmix_status_t rc;
    int rv;

    /* (srun --mpi=pmix started a server; an image without libpmix can still use PMI-2) */
    rv = shim_lib_require (SHIM_LIB_PMIX, DTSHIM_ERR_PMIX,
                           "install libpmix2 in the image, or mount the node's, or run the "
                           "step with srun --mpi=pmi2, which needs no library");
    if (rv != DTSHIM_OK || (rv = check_remapped_root ()) != DTSHIM_OK)
        return rv;
    store_without_server_dir ();
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
