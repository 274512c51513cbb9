/* A PMIx client that proves a cross-node exchange works: every rank puts its hostname,
 * fences with data collection, then reads every peer's hostname. Prints one line per rank:
 * "rank R of N on HOST: saw H0,H1,..." and exits 0, or names the failing call and exits 1. */
#include <pmix.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define HOSTNAME_KEY "minicluster.hostname"

static int fail (const char *call, pmix_status_t rc)
{
    fprintf (stderr, "pmix_fence: %s failed: %s\n", call, PMIx_Error_string (rc));
    return 1;
}

int main (void)
{
    pmix_proc_t self, peer, job;
    pmix_value_t value, *got = NULL;
    pmix_info_t collect;
    bool yes = true;
    char host[256] = "";
    char seen[4096] = "";
    uint32_t size, rank;
    pmix_status_t rc;
    int status = 1;

    rc = PMIx_Init (&self, NULL, 0);
    if (rc != PMIX_SUCCESS)
        return fail ("PMIx_Init", rc);

    PMIX_LOAD_PROCID (&job, self.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get (&job, PMIX_JOB_SIZE, NULL, 0, &got);
    if (rc != PMIX_SUCCESS) {
        fail ("PMIx_Get(PMIX_JOB_SIZE)", rc);
        goto out;
    }
    size = got->data.uint32;
    PMIX_VALUE_RELEASE (got);

    gethostname (host, sizeof (host) - 1);
    value.type = PMIX_STRING;
    value.data.string = host;
    rc = PMIx_Put (PMIX_GLOBAL, HOSTNAME_KEY, &value);
    if (rc != PMIX_SUCCESS) {
        fail ("PMIx_Put", rc);
        goto out;
    }
    rc = PMIx_Commit ();
    if (rc != PMIX_SUCCESS) {
        fail ("PMIx_Commit", rc);
        goto out;
    }

    PMIX_INFO_LOAD (&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence (&job, 1, &collect, 1);
    if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED) {
        fail ("PMIx_Fence", rc);
        goto out;
    }

    PMIX_LOAD_NSPACE (peer.nspace, self.nspace);
    for (rank = 0; rank < size; rank++) {
        peer.rank = rank;
        rc = PMIx_Get (&peer, HOSTNAME_KEY, NULL, 0, &got);
        if (rc != PMIX_SUCCESS || got->type != PMIX_STRING) {
            fprintf (stderr, "pmix_fence: rank %u: PMIx_Get(rank %u) failed: %s\n", self.rank, rank,
                     PMIx_Error_string (rc));
            goto out;
        }
        if (rank > 0)
            strncat (seen, ",", sizeof (seen) - strlen (seen) - 1);
        strncat (seen, got->data.string, sizeof (seen) - strlen (seen) - 1);
        PMIX_VALUE_RELEASE (got);
    }
    printf ("rank %u of %u on %s: saw %s\n", self.rank, size, host, seen);
    status = 0;
out:
    rc = PMIx_Finalize (NULL, 0);
    if (rc != PMIX_SUCCESS)
        return fail ("PMIx_Finalize", rc);
    return status;
}
