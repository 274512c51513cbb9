/* pmix.c - the connection to the step's PMIx server (srun --mpi=pmix) and the facts it gives;
 * exchange.c carries the collectives over it. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
