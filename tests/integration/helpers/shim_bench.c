/* shim_bench - latency of libdtshim's barrier, 128-byte broadcast and 8-byte allgather, each
 * interleaved with the same exchange written with raw PMIx calls (put, commit, fence, get),
 * in one step, and a preemption decision next to a barrier. Rank 0 prints one line per
 * pair. Used by scripts/bench-shim.
 *   shim_bench [ITERATIONS]    (default 300) */
#include <pmix.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dtshim.h>

static pmix_proc_t self, job;
static int rank, size;

static double now_us (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static void die (const char *what, int rc)
{
    fprintf (stderr, "shim_bench: rank %d: %s failed: %d\n", rank, what, rc);
    exit (1);
}

static void raw_fence (bool collect)
{
    pmix_info_t info;
    bool yes = true;
    pmix_status_t rc;

    PMIX_INFO_LOAD (&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence (&job, 1, collect ? &info : NULL, collect ? 1 : 0);
    PMIX_INFO_DESTRUCT (&info);
    if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
        die ("PMIx_Fence", rc);
}

static void raw_put (int i, const void *buf, size_t n)
{
    char key[64];
    pmix_value_t v;

    snprintf (key, sizeof (key), "bench.%d", i);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *) buf;
    v.data.bo.size = n;
    if (PMIx_Put (PMIX_GLOBAL, key, &v) != PMIX_SUCCESS || PMIx_Commit () != PMIX_SUCCESS)
        die ("PMIx_Put/Commit", 0);
}

static void raw_get (int i, int from, void *buf, size_t n)
{
    char key[64];
    pmix_proc_t peer;
    pmix_value_t *v = NULL;
    pmix_status_t rc;

    snprintf (key, sizeof (key), "bench.%d", i);
    PMIX_LOAD_PROCID (&peer, self.nspace, (pmix_rank_t) from);
    rc = PMIx_Get (&peer, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || v->data.bo.size != n)
        die ("PMIx_Get", rc);
    memcpy (buf, v->data.bo.bytes, n);
    PMIX_VALUE_RELEASE (v);
}

static int cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* Median on rank 0 and mean over iterations of the slowest rank, in microseconds. */
static void report (const char *name, double *t, int n)
{
    double mean = 0, *means = malloc (sizeof (double) * (size_t) size), worst = 0;

    for (int i = 0; i < n; i++)
        mean += t[i] / n;
    if (dtshim_allgather (&mean, sizeof (mean), means) != DTSHIM_OK)
        die ("dtshim_allgather", 0);
    for (int r = 0; r < size; r++)
        worst = means[r] > worst ? means[r] : worst;
    qsort (t, (size_t) n, sizeof (*t), cmp);
    if (rank == 0)
        printf ("  %-34s median %8.1f us   mean %8.1f us (slowest rank)\n", name, t[n / 2], worst);
    free (means);
}

/* A few allgathers of n bytes per rank: the largest payload PMI-2 carries is 1 MiB. */
static void large (size_t n, const char *name)
{
    enum { runs = 5 };
    uint8_t *mine = malloc (n), *all = malloc (n * (size_t) size);
    double t[runs], t0;

    memset (mine, rank, n);
    for (int i = 0; i < runs; i++) {
        t0 = now_us ();
        if (dtshim_allgather (mine, n, all) != DTSHIM_OK)
            die ("dtshim_allgather (large)", 0);
        t[i] = now_us () - t0;
    }
    report (name, t, runs);
    free (mine);
    free (all);
}

int main (int argc, char **argv)
{
    int n = argc > 1 ? atoi (argv[1]) : 300, warm = 20, key = 0;
    bool raw;
    double *t[8], t0;
    uint8_t id[128], word[8], *words;
    pmix_status_t rc;

    if (dtshim_init () != DTSHIM_OK || dtshim_size () < 2)
        die ("dtshim_init (launch with srun --mpi=pmix or --mpi=pmi2)", 0);
    /* The raw PMIx figures only where the step has PMIx; over PMI-2, the shim's alone. */
    raw = dtshim_has_pmix () == 1;
    if (raw && (rc = PMIx_Init (&self, NULL, 0)) != PMIX_SUCCESS)
        die ("PMIx_Init", rc);
    PMIX_LOAD_PROCID (&job, self.nspace, PMIX_RANK_WILDCARD);
    rank = dtshim_rank ();
    size = dtshim_size ();
    words = malloc (sizeof (word) * (size_t) size);
    for (int k = 0; k < 8; k++)
        t[k] = calloc ((size_t) (n + warm), sizeof (double));
    memset (id, 7, sizeof (id));
    memset (word, rank, sizeof (word));

    /* One preemption decision (nobody asked: the common case) next to a barrier, first:
     * it puts nothing, and the pairs after it put keys that every later fence carries. */
    for (int i = 0; i < n + warm; i++) {
        int at = i - warm < 0 ? 0 : i - warm;

        t0 = now_us ();
        dtshim_barrier ();
        t[6][at] = now_us () - t0;
        t0 = now_us ();
        if (dtshim_should_preempt () != 0)
            die ("dtshim_should_preempt", 0);
        t[7][at] = now_us () - t0;
    }
    /* Each pair interleaved, so that both see the same cluster and the same PMIx store;
	 * the pairs one after the other. Every fence here collects data: dtshim_barrier is a
	 * fence with data, and a raw fence without data is no barrier under Slurm's PMIx. */
    for (int i = 0; i < n + warm; i++) {
        int at = i - warm < 0 ? 0 : i - warm;

        t0 = now_us ();
        if (raw)
            raw_fence (true); /* without data Slurm's fence waits for no one: no barrier */
        t[0][at] = now_us () - t0;
        t0 = now_us ();
        dtshim_barrier ();
        t[1][at] = now_us () - t0;
    }
    for (int i = 0; i < n + warm; i++) {
        int at = i - warm < 0 ? 0 : i - warm;

        t0 = now_us ();
        if (raw && rank == 0)
            raw_put (key, id, sizeof (id));
        if (raw)
            raw_fence (true);
        if (raw && rank != 0)
            raw_get (key, 0, id, sizeof (id));
        key++;
        t[2][at] = now_us () - t0;
        t0 = now_us ();
        if (dtshim_broadcast (id, sizeof (id), 0) != DTSHIM_OK)
            die ("dtshim_broadcast", 0);
        t[3][at] = now_us () - t0;
    }
    for (int i = 0; i < n + warm; i++) {
        int at = i - warm < 0 ? 0 : i - warm;

        t0 = now_us ();
        if (raw) {
            raw_put (key, word, sizeof (word));
            raw_fence (true);
            for (int r = 0; r < size; r++)
                raw_get (key, r, words + r * sizeof (word), sizeof (word));
        }
        key++;
        t[4][at] = now_us () - t0;
        t0 = now_us ();
        if (dtshim_allgather (word, sizeof (word), words) != DTSHIM_OK)
            die ("dtshim_allgather", 0);
        t[5][at] = now_us () - t0;
    }
    if (rank == 0)
        printf ("%d ranks on %d nodes over %s, %d iterations (after %d warm-up):\n", size,
                dtshim_node_count (), dtshim_backend (), n, warm);
    if (raw)
        report ("raw PMIx fence", t[0], n);
    report ("dtshim_barrier", t[1], n);
    if (raw)
        report ("raw PMIx broadcast 128 B", t[2], n);
    report ("dtshim_broadcast 128 B", t[3], n);
    if (raw)
        report ("raw PMIx allgather 8 B/rank", t[4], n);
    report ("dtshim_allgather 8 B/rank", t[5], n);
    report ("dtshim_barrier (beside the decision)", t[6], n);
    report ("dtshim_should_preempt (none asked)", t[7], n);
    large (64 << 10, "dtshim_allgather 64 KiB/rank");
    large (1 << 20, "dtshim_allgather 1 MiB/rank");
    if (raw)
        PMIx_Finalize (NULL, 0);
    dtshim_finalize ();
    return 0;
}
