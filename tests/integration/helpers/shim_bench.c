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

/* The run: its iterations, the buffers each pair exchanges, each call's times in t. */
struct bench {
    int n, warm; /* timed iterations, after warm untimed ones */
    bool raw; /* the step has PMIx: the raw figures beside the shim's */
    int key; /* the next raw exchange's key: each is put once */
    uint8_t id[128], word[8], *words;
    double *t[8]; /* each call's times in microseconds, one array per call timed */
};

/* Where iteration i's time goes: the warm-up's are overwritten by the first timed one. */
static int slot (const struct bench *b, int i)
{
    return i - b->warm < 0 ? 0 : i - b->warm;
}

/* A pair interleaved, so that both see the same cluster and the same PMIx store: each
 * iteration times one call and then the other, into t[first] and t[first + 1]. */
static void time_pair (struct bench *b, void (*one) (struct bench *),
                       void (*other) (struct bench *), int first)
{
    for (int i = 0; i < b->n + b->warm; i++) {
        double t0 = now_us ();
        one (b);
        b->t[first][slot (b, i)] = now_us () - t0;
        t0 = now_us ();
        other (b);
        b->t[first + 1][slot (b, i)] = now_us () - t0;
    }
}

static void shim_barrier (struct bench *b)
{
    (void) b;
    dtshim_barrier ();
}

static void shim_decision (struct bench *b)
{
    (void) b;
    if (dtshim_should_preempt () != 0)
        die ("dtshim_should_preempt", 0);
}

/* Every fence here collects data: dtshim_barrier is a fence with data, and without data
 * Slurm's PMIx fence waits for no one: no barrier. */
static void raw_barrier (struct bench *b)
{
    if (b->raw)
        raw_fence (true);
}

static void raw_broadcast (struct bench *b)
{
    if (b->raw && rank == 0)
        raw_put (b->key, b->id, sizeof (b->id));
    if (b->raw)
        raw_fence (true);
    if (b->raw && rank != 0)
        raw_get (b->key, 0, b->id, sizeof (b->id));
    b->key++;
}

static void shim_broadcast (struct bench *b)
{
    if (dtshim_broadcast (b->id, sizeof (b->id), 0) != DTSHIM_OK)
        die ("dtshim_broadcast", 0);
}

static void raw_allgather (struct bench *b)
{
    if (b->raw) {
        raw_put (b->key, b->word, sizeof (b->word));
        raw_fence (true);
        for (int r = 0; r < size; r++)
            raw_get (b->key, r, b->words + r * sizeof (b->word), sizeof (b->word));
    }
    b->key++;
}

static void shim_allgather (struct bench *b)
{
    if (dtshim_allgather (b->word, sizeof (b->word), b->words) != DTSHIM_OK)
        die ("dtshim_allgather", 0);
}

static void report_all (const struct bench *b)
{
    if (rank == 0)
        printf ("%d ranks on %d nodes over %s, %d iterations (after %d warm-up):\n", size,
                dtshim_node_count (), dtshim_backend (), b->n, b->warm);
    if (b->raw)
        report ("raw PMIx fence", b->t[0], b->n);
    report ("dtshim_barrier", b->t[1], b->n);
    if (b->raw)
        report ("raw PMIx broadcast 128 B", b->t[2], b->n);
    report ("dtshim_broadcast 128 B", b->t[3], b->n);
    if (b->raw)
        report ("raw PMIx allgather 8 B/rank", b->t[4], b->n);
    report ("dtshim_allgather 8 B/rank", b->t[5], b->n);
    report ("dtshim_barrier (beside the decision)", b->t[6], b->n);
    report ("dtshim_should_preempt (none asked)", b->t[7], b->n);
}

/* The shim, and PMIx beside it where the step has PMIx; over PMI-2, the shim's alone. */
static void start (struct bench *b)
{
    pmix_status_t rc;

    if (dtshim_init () != DTSHIM_OK || dtshim_size () < 2)
        die ("dtshim_init (launch with srun --mpi=pmix or --mpi=pmi2)", 0);
    b->raw = dtshim_has_pmix () == 1;
    if (b->raw && (rc = PMIx_Init (&self, NULL, 0)) != PMIX_SUCCESS)
        die ("PMIx_Init", rc);
    PMIX_LOAD_PROCID (&job, self.nspace, PMIX_RANK_WILDCARD);
    rank = dtshim_rank ();
    size = dtshim_size ();
    b->words = malloc (sizeof (b->word) * (size_t) size);
    for (int k = 0; k < 8; k++)
        b->t[k] = calloc ((size_t) (b->n + b->warm), sizeof (double));
    memset (b->id, 7, sizeof (b->id));
    memset (b->word, rank, sizeof (b->word));
}

int main (int argc, char **argv)
{
    struct bench b = {.warm = 20};

    b.n = argc > 1 ? atoi (argv[1]) : 300;
    start (&b);
    /* One preemption decision (nobody asked: the common case) next to a barrier, first:
     * it puts nothing, and the pairs after it put keys that every later fence carries. */
    time_pair (&b, shim_barrier, shim_decision, 6);
    /* the pairs one after the other */
    time_pair (&b, raw_barrier, shim_barrier, 0);
    time_pair (&b, raw_broadcast, shim_broadcast, 2);
    time_pair (&b, raw_allgather, shim_allgather, 4);
    report_all (&b);
    large (64 << 10, "dtshim_allgather 64 KiB/rank");
    large (1 << 20, "dtshim_allgather 1 MiB/rank");
    if (b.raw)
        PMIx_Finalize (NULL, 0);
    dtshim_finalize ();
    return 0;
}
