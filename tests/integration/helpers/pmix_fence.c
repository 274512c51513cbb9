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

/* The job's size, in *size; 0, or 1 after naming the failing call. */
static int job_size (const pmix_proc_t *job, uint32_t *size)
{
    pmix_value_t *got = NULL;
    pmix_status_t rc = PMIx_Get (job, PMIX_JOB_SIZE, NULL, 0, &got);

    if (rc != PMIX_SUCCESS)
        return fail ("PMIx_Get(PMIX_JOB_SIZE)", rc);
    *size = got->data.uint32;
    PMIX_VALUE_RELEASE (got);
    return 0;
}

/* This rank's hostname, put and committed, then a fence that collects every rank's. */
static int put_and_fence (const pmix_proc_t *job, char *host)
{
    pmix_value_t value;
    pmix_info_t collect;
    bool yes = true;
    pmix_status_t rc;

    value.type = PMIX_STRING;
    value.data.string = host;
    rc = PMIx_Put (PMIX_GLOBAL, HOSTNAME_KEY, &value);
    if (rc != PMIX_SUCCESS)
        return fail ("PMIx_Put", rc);
    rc = PMIx_Commit ();
    if (rc != PMIX_SUCCESS)
        return fail ("PMIx_Commit", rc);
    PMIX_INFO_LOAD (&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence (job, 1, &collect, 1);
    if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
        return fail ("PMIx_Fence", rc);
    return 0;
}

/* Every rank's hostname, in rank order, comma-separated into seen. */
static int read_hosts (const pmix_proc_t *self, uint32_t size, char *seen, size_t len)
{
    pmix_proc_t peer;
    pmix_value_t *got = NULL;
    pmix_status_t rc;

    PMIX_LOAD_NSPACE (peer.nspace, self->nspace);
    for (uint32_t rank = 0; rank < size; rank++) {
        peer.rank = rank;
        rc = PMIx_Get (&peer, HOSTNAME_KEY, NULL, 0, &got);
        if (rc != PMIX_SUCCESS || got->type != PMIX_STRING) {
            fprintf (stderr, "pmix_fence: rank %u: PMIx_Get(rank %u) failed: %s\n", self->rank,
                     rank, PMIx_Error_string (rc));
            return 1;
        }
        if (rank > 0)
            strncat (seen, ",", len - strlen (seen) - 1);
        strncat (seen, got->data.string, len - strlen (seen) - 1);
        PMIX_VALUE_RELEASE (got);
    }
    return 0;
}

static int exchange (const pmix_proc_t *self)
{
    pmix_proc_t job;
    char host[256] = "";
    char seen[4096] = "";
    uint32_t size;

    PMIX_LOAD_PROCID (&job, self->nspace, PMIX_RANK_WILDCARD);
    if (job_size (&job, &size) != 0)
        return 1;
    gethostname (host, sizeof (host) - 1);
    if (put_and_fence (&job, host) != 0 || read_hosts (self, size, seen, sizeof (seen)) != 0)
        return 1;
    printf ("rank %u of %u on %s: saw %s\n", self->rank, size, host, seen);
    return 0;
}

int main (void)
{
    pmix_proc_t self;
    pmix_status_t rc;
    int status;

    rc = PMIx_Init (&self, NULL, 0);
    if (rc != PMIX_SUCCESS)
        return fail ("PMIx_Init", rc);
    status = exchange (&self);
    rc = PMIx_Finalize (NULL, 0);
    if (rc != PMIX_SUCCESS)
        return fail ("PMIx_Finalize", rc);
    return status;
}
