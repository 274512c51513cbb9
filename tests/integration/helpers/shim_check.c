/* shim_check - drives libdtshim in a Slurm step for tests/integration/shim.bats. One mode per
 * run; every rank prints its own lines, "FAIL ..." on a wrong result, and exits non-zero.
 *   shim_check facts                 rank, sizes, node, chief
 *   shim_check collectives ITER      every collective, every root, sizes 0, 1, 4 KiB, 4 MiB
 *                                    (1 MiB over PMI-2, where 1 MiB + 1 is refused)
 *   shim_check preempt DIR           steps until should_preempt(); pid in DIR/pid.RANK
 *   shim_check deadline VICTIM HOW   VICTIM dies (kill) or hangs (stop); the others fail
 *   shim_check unique-id OK          rank 0 shares a 128-byte id (like an ncclUniqueId)
 *   shim_check unique-ids N FAIL     N ids from N roots; root rank FAIL (or -1) fails
 *   shim_check idle DIR              no collective for 10 s; pid in DIR/pid.RANK
 *   shim_check misuse                sizes that differ, collectives that differ
 *   shim_check init                  dtshim_init() only, for the error without PMIx
 *   shim_check abort VICTIM          VICTIM calls dtshim_abort() after a barrier; the
 *                                    others wait in the next one
 *   shim_check order                 each rank's SLURM_PROCID through allgather, gather to
 *                                    and broadcast from every root, and the unique id:
 *                                    prints the tasks in rank order (the plugin's RANK
 *                                    under DIST_TRAIN_RANK_ORDER=topology) */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dtshim.h>

static int rank, size;

static int check (int rv, const char *call)
{
    if (rv < 0) {
        printf ("FAIL rank %d: %s: %s (%s)\n", rank, call, dtshim_strerror (rv),
                dtshim_last_error ());
        exit (1);
    }
    return rv;
}

static double now_s (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* The byte at offset i of rank r's contribution to collective k. */
static uint8_t pattern (int r, size_t i, unsigned k)
{
    return (uint8_t) (r * 31 + i * 7 + k * 13 + (i >> 8));
}

static void fill (uint8_t *buf, size_t n, int r, unsigned k)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern (r, i, k);
}

static void expect (const uint8_t *buf, size_t n, int r, unsigned k, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != pattern (r, i, k)) {
            printf ("FAIL rank %d: %s of %zu bytes: byte %zu from rank %d is wrong\n", rank, what,
                    n, i, r);
            exit (1);
        }
    }
}

static int facts (void)
{
    char addr[64] = "";

    check (dtshim_chief_addr (addr, sizeof (addr)), "dtshim_chief_addr");
    printf ("rank=%d size=%d local_rank=%d local_size=%d node_rank=%d node_count=%d "
            "chief=%s addr=%s pmix=%d backend=%s\n",
            rank, size, dtshim_local_rank (), dtshim_local_size (), dtshim_node_rank (),
            dtshim_node_count (), dtshim_chief_host (), addr, dtshim_has_pmix (),
            dtshim_backend ());
    return 0;
}

/* One round of collectives: n bytes from each rank, pattern k; the buffers are the round's. */
struct round {
    size_t n;
    unsigned k;
    uint8_t *mine, *all; /* n + 1 bytes; n bytes from every rank + 1 */
    size_t *sizes; /* one per rank */
};

static void broadcast_from (const struct round *rd, int root)
{
    fill (rd->mine, rd->n, rank == root ? root : 255, rd->k);
    check (dtshim_broadcast (rd->mine, rd->n, root), "dtshim_broadcast");
    expect (rd->mine, rd->n, root, rd->k, "broadcast");
}

static void gather_to (const struct round *rd, int root)
{
    fill (rd->mine, rd->n, rank, rd->k);
    memset (rd->all, 0, rd->n * (size_t) size + 1);
    check (dtshim_gather (rd->mine, rd->n, rd->all, root), "dtshim_gather");
    for (int r = 0; rank == root && r < size; r++)
        expect (rd->all + (size_t) r * rd->n, rd->n, r, rd->k, "gather");
}

/* Variable sizes: rank r contributes n + r bytes (0 for the root when n is 0). */
static size_t gatherv_size (const struct round *rd, int r, int root)
{
    return rd->n == 0 && r == root ? 0 : rd->n + (size_t) r;
}

static void gatherv_to (const struct round *rd, int root)
{
    size_t vn = gatherv_size (rd, rank, root), off = 0;
    uint8_t *got = malloc (vn + 1);
    void *vrecv;

    fill (got, vn, rank, rd->k);
    check (dtshim_gatherv (got, vn, &vrecv, rd->sizes, root), "dtshim_gatherv");
    free (got);
    for (int r = 0; rank == root && r < size; r++) {
        size_t want = gatherv_size (rd, r, root);
        if (rd->sizes[r] != want) {
            printf ("FAIL rank %d: gatherv size of rank %d: %zu, want %zu\n", rank, r, rd->sizes[r],
                    want);
            exit (1);
        }
        expect ((uint8_t *) vrecv + off, want, r, rd->k, "gatherv");
        off += want;
    }
    if (rank != root && vrecv != NULL) {
        printf ("FAIL rank %d: gatherv gave a buffer to a non-root\n", rank);
        exit (1);
    }
    dtshim_free (vrecv);
}

static void broadcastv_from (const struct round *rd, int root)
{
    size_t n = rd->n, vn = 0;
    void *vrecv;

    fill (rd->mine, n, rank == root ? root : 254, rd->k);
    check (
        dtshim_broadcastv (rank == root ? rd->mine : NULL, rank == root ? n : 0, &vrecv, &vn, root),
        "dtshim_broadcastv");
    if (vn != n) {
        printf ("FAIL rank %d: broadcastv gave %zu bytes, want %zu\n", rank, vn, n);
        exit (1);
    }
    expect (vrecv, n, root, rd->k, "broadcastv");
    dtshim_free (vrecv);
}

static void allgather_all (const struct round *rd)
{
    fill (rd->mine, rd->n, rank, rd->k);
    check (dtshim_allgather (rd->mine, rd->n, rd->all), "dtshim_allgather");
    for (int r = 0; r < size; r++)
        expect (rd->all + (size_t) r * rd->n, rd->n, r, rd->k, "allgather");
}

/* Rank r contributes n + r bytes. */
static void allgatherv_all (const struct round *rd)
{
    size_t n = rd->n, off = 0;
    uint8_t *got = malloc (n + (size_t) rank + 1);
    void *vrecv;

    fill (got, n + (size_t) rank, rank, rd->k);
    check (dtshim_allgatherv (got, n + (size_t) rank, &vrecv, rd->sizes), "dtshim_allgatherv");
    free (got);
    for (int r = 0; r < size; r++) {
        if (rd->sizes[r] != n + (size_t) r) {
            printf ("FAIL rank %d: allgatherv size of rank %d: %zu\n", rank, r, rd->sizes[r]);
            exit (1);
        }
        expect ((uint8_t *) vrecv + off, rd->sizes[r], r, rd->k, "allgatherv");
        off += rd->sizes[r];
    }
    dtshim_free (vrecv);
}

/* Every collective of n bytes, the rooted ones from every root. */
static void one_size (size_t n, unsigned k)
{
    struct round rd = {.n = n,
                       .k = k,
                       .mine = malloc (n + 1),
                       .all = malloc (n * (size_t) size + 1),
                       .sizes = calloc ((size_t) size, sizeof (*rd.sizes))};

    for (int root = 0; root < size; root++) {
        broadcast_from (&rd, root);
        gather_to (&rd, root);
        gatherv_to (&rd, root);
        broadcastv_from (&rd, root);
    }
    allgather_all (&rd);
    allgatherv_all (&rd);
    check (dtshim_barrier (), "dtshim_barrier");
    free (rd.mine);
    free (rd.all);
    free (rd.sizes);
}

/* Every value put stays in PMIx for the step and travels with every later fence: 4 MiB
 * goes through each collective once, from two roots, not from every root. */
static void large (size_t n, unsigned k)
{
    uint8_t *mine = malloc (n), *all = malloc (n * (size_t) size);
    int roots[2] = {0, size - 1};

    for (int i = 0; i < 2; i++) {
        fill (mine, n, rank == roots[i] ? roots[i] : 255, k);
        check (dtshim_broadcast (mine, n, roots[i]), "dtshim_broadcast");
        expect (mine, n, roots[i], k, "broadcast");
    }
    fill (mine, n, rank, k);
    check (dtshim_allgather (mine, n, all), "dtshim_allgather");
    for (int r = 0; r < size; r++)
        expect (all + (size_t) r * n, n, r, k, "allgather");
    memset (all, 0, n * (size_t) size);
    check (dtshim_gather (mine, n, all, size / 2), "dtshim_gather");
    for (int r = 0; rank == size / 2 && r < size; r++)
        expect (all + (size_t) r * n, n, r, k, "gather");
    free (mine);
    free (all);
}

/* Over PMI-2 every rank refuses more than 1 MiB at once, before any exchange: the next
 * collective still works. */
static void too_large (size_t n)
{
    uint8_t *mine = calloc (1, n), *all = malloc (n * (size_t) size);
    int rv = dtshim_allgather (mine, n, all);

    if (rv != DTSHIM_ERR_TOO_LARGE || strstr (dtshim_last_error (), "srun --mpi=pmix") == NULL) {
        printf ("FAIL rank %d: allgather of %zu bytes over PMI-2 returned %d (%s)\n", rank, n, rv,
                dtshim_last_error ());
        exit (1);
    }
    check (dtshim_barrier (), "dtshim_barrier after a refusal");
    free (mine);
    free (all);
}

static int collectives (unsigned iterations)
{
    static const size_t sizes[] = {0, 1, 4096};
    double t0 = now_s ();
    unsigned k = 0;

    for (unsigned i = 0; i < iterations; i++)
        for (size_t s = 0; s < sizeof (sizes) / sizeof (sizes[0]); s++)
            one_size (sizes[s], k++);
    if (strcmp (dtshim_backend (), "pmi2") != 0) {
        large (4 << 20, k++);
    } else {
        large (1 << 20, k++);
        too_large ((1 << 20) + 1);
    }
    printf ("rank %d: ok, %u rounds in %.2f s\n", rank, k, now_s () - t0);
    return 0;
}

static volatile sig_atomic_t chained;

static void program_handler (int sig)
{
    (void) sig;
    chained++;
}

static int preempt (const char *dir)
{
    char path[4096];
    FILE *f;
    int step;

    snprintf (path, sizeof (path), "%s/pid.%d", dir, rank);
    if ((f = fopen (path, "w")) == NULL)
        return printf ("FAIL rank %d: cannot write %s\n", rank, path), 1;
    fprintf (f, "%d\n", (int) getpid ());
    fclose (f);
    for (step = 0; step < 100000; step++) {
        if (check (dtshim_should_preempt (), "dtshim_should_preempt"))
            break;
        usleep (20000); /* a training step */
    }
    /* The decision can be quicker than a signal sent to every task (scancel --signal): a
     * rank may stop on another's request while its own signal is still on its way. */
    for (int i = 0; i < 100 && !dtshim_preempt_requested (); i++)
        usleep (10000);
    printf ("rank %d: stopped at step %d requested=%d chained=%d\n", rank, step,
            dtshim_preempt_requested (), (int) chained);
    return 0;
}

/* The victim dies (kill) or hangs (stop) after a barrier; the others allgather. */
/* The last rank passes another size; then rank 0 calls another collective. Every rank
 * must find out, and the step must go on afterwards. */
static int misuse (void)
{
    uint8_t mine[16] = {0}, *all = calloc ((size_t) size, sizeof (mine));
    size_t *sizes = calloc ((size_t) size, sizeof (*sizes));
    void *v = NULL;
    int by_size, by_op, after;

    by_size = dtshim_allgather (mine, rank == size - 1 ? 16 : 8, all);
    if (rank == 0)
        by_op = dtshim_allgatherv (mine, 8, &v, sizes);
    else
        by_op = dtshim_allgather (mine, 8, all);
    dtshim_free (v);
    after = dtshim_allgather (mine, 8, all);
    printf ("rank %d: size=%d op=%d after=%d\n", rank, by_size, by_op, after);
    free (all);
    free (sizes);
    return 0;
}

/* Signals arrive while the program does not call the shim. */
static int idle (const char *dir)
{
    char path[4096];
    FILE *f;

    snprintf (path, sizeof (path), "%s/pid.%d", dir, rank);
    if ((f = fopen (path, "w")) == NULL)
        return printf ("FAIL rank %d: cannot write %s\n", rank, path), 1;
    fprintf (f, "%d\n", (int) getpid ());
    fclose (f);
    for (int i = 0; i < 100; i++)
        usleep (100000);
    printf ("rank %d: idle done, requested=%d\n", rank, dtshim_preempt_requested ());
    return 0;
}

static int deadline (int victim, const char *how)
{
    uint64_t mine = (uint64_t) rank, *all = calloc ((size_t) size, sizeof (mine));
    double t0;
    int rv;

    check (dtshim_barrier (), "dtshim_barrier");
    if (rank == victim) {
        fflush (stdout);
        raise (strcmp (how, "stop") == 0 ? SIGSTOP : SIGKILL);
    }
    t0 = now_s ();
    rv = dtshim_allgather (&mine, sizeof (mine), all);
    printf ("rank %d: allgather returned %d (%s) after %.1f s; then %d\n", rank, rv,
            dtshim_strerror (rv), now_s () - t0, dtshim_barrier ());
    free (all);
    return rv == DTSHIM_OK ? 1 : 3;
}

/* The late rank sleeps ms before the barrier; the others time theirs. Then another barrier
 * (DTSHIM_ERR_BROKEN after a timeout). */
static int late (int victim, int ms)
{
    double t0, t;
    int rv, then;

    check (dtshim_barrier (), "dtshim_barrier");
    if (rank == victim)
        usleep ((useconds_t) ms * 1000);
    t0 = now_s ();
    rv = dtshim_barrier ();
    t = now_s () - t0;
    then = dtshim_barrier ();
    printf ("rank %d: barrier returned %d after %.2f s; then %d\n", rank, rv, t, then);
    /* A rank that gave up stays until the late one has come: over PMI-2 the late rank's
     * fence completes the one the others left, and srun retries its answer for 15 s to a
     * node whose tasks are all gone before the step can end. */
    if (rv != DTSHIM_OK && ms / 1000.0 + 0.5 > now_s () - t0)
        usleep ((useconds_t) ((ms / 1000.0 + 0.5 - (now_s () - t0)) * 1e6));
    return 0;
}

static int unique_ids (int count, int fail)
{
    uint8_t ids[8][128];
    int i, rv, me = 0;

    if (count < 1 || count > 8)
        return 2;
    memset (ids, 0xee, sizeof (ids)); /* what the other ranks pass is ignored */
    for (i = 0; i < count; i++)
        if (dtshim_unique_id_root (i, count) == rank) {
            memset (ids[i], rank + 1, sizeof (ids[i]));
            me = 1;
        }
    rv = dtshim_share_unique_ids (ids, sizeof (ids[0]), count, rank != fail);
    if (fail >= 0) {
        printf ("rank %d: %s\n", rank, rv == DTSHIM_ERR_NO_ID ? "no ids, as expected" : "FAIL");
        return rv == DTSHIM_ERR_NO_ID ? 0 : 1;
    }
    check (rv, "dtshim_share_unique_ids");
    for (i = 0; i < count; i++) {
        int root = dtshim_unique_id_root (i, count);
        for (size_t b = 0; b < sizeof (ids[i]); b++)
            if (ids[i][b] != (uint8_t) (root + 1))
                return printf ("FAIL rank %d: id %d byte %zu is %d, want %d\n", rank, i, b,
                               ids[i][b], root + 1),
                       1;
    }
    printf ("rank %d: %d ids from their roots%s\n", rank, count, me ? " (one is mine)" : "");
    return 0;
}

static int unique_id (int ok)
{
    uint8_t id[128], *all;
    int rv;

    srand ((unsigned) time (NULL) ^ (unsigned) getpid ());
    for (size_t i = 0; i < sizeof (id); i++)
        id[i] = rank == 0 ? (uint8_t) (rand () | 1) : 0;
    rv = dtshim_share_unique_id (id, sizeof (id), ok);
    if (!ok) {
        printf ("rank %d: %s\n", rank, rv == DTSHIM_ERR_NO_ID ? "no id, as expected" : "FAIL");
        return rv == DTSHIM_ERR_NO_ID ? 0 : 1;
    }
    check (rv, "dtshim_share_unique_id");
    all = malloc (sizeof (id) * (size_t) size);
    check (dtshim_allgather (id, sizeof (id), all), "dtshim_allgather");
    for (int r = 1; r < size; r++) {
        if (memcmp (all, all + (size_t) r * sizeof (id), sizeof (id)) != 0)
            return printf ("FAIL rank %d: rank %d has another id\n", rank, r), 1;
    }
    printf ("rank %d: same id %02x%02x%02x%02x... on %d ranks\n", rank, all[0], all[1], all[2],
            all[3], size);
    free (all);
    return 0;
}

/* dtshim_abort returns only when it failed: the others' barrier must never return. */
static int abort_step (int victim)
{
    double t0;
    int rv;

    check (dtshim_barrier (), "dtshim_barrier");
    printf ("rank %d: ready\n", rank);
    /* Every rank's line is written before the victim ends the step, so a line that
     * is missing means a rank never got here, not that the kill outran its printf. */
    check (dtshim_barrier (), "dtshim_barrier");
    if (rank == victim) {
        rv = dtshim_abort (3, "shim_check: aborting the step");
        printf ("FAIL rank %d: dtshim_abort returned %d (%s)\n", rank, rv, dtshim_last_error ());
        return 1;
    }
    t0 = now_s ();
    rv = dtshim_barrier ();
    printf ("FAIL rank %d: barrier returned %d after %.1f s, the step still runs\n", rank, rv,
            now_s () - t0);
    return 1;
}

/* The tasks (SLURM_PROCID) of the ranks, in rank order, as "3,2,1,0", into text. */
static void task_list (const int32_t *task, char *text, size_t len)
{
    size_t off = 0;

    text[0] = '\0';
    for (int r = 0; r < size && off < len; r++)
        off += (size_t) snprintf (text + off, len - off, "%s%d", r > 0 ? "," : "", (int) task[r]);
}

/* Every root's gather and broadcast of the tasks agrees with the allgather's, and rank 0's
 * unique id is its task's. */
static int order_rooted (const int32_t *task, int32_t mine, int32_t *got)
{
    uint8_t id[128];

    for (int root = 0; root < size; root++) {
        int32_t v = rank == root ? mine : -1;
        memset (got, 0xff, sizeof (*got) * (size_t) size);
        check (dtshim_gather (&mine, sizeof (mine), got, root), "dtshim_gather");
        if (rank == root && memcmp (got, task, sizeof (*got) * (size_t) size) != 0)
            return printf ("FAIL rank %d: gather to %d: another order\n", rank, root), 1;
        check (dtshim_broadcast (&v, sizeof (v), root), "dtshim_broadcast");
        if (v != task[root])
            return printf ("FAIL rank %d: broadcast from %d came from task %d\n", rank, root,
                           (int) v),
                   1;
    }
    memset (id, rank == 0 ? (int) mine + 1 : 0, sizeof (id));
    check (dtshim_share_unique_id (id, sizeof (id), 1), "dtshim_share_unique_id");
    if (id[0] != (uint8_t) (task[0] + 1) || id[127] != id[0])
        return printf ("FAIL rank %d: the unique id is task %d's\n", rank, id[0] - 1), 1;
    return 0;
}

static int order (void)
{
    const char *procid = getenv ("SLURM_PROCID");
    int32_t mine = procid != NULL ? (int32_t) atoi (procid) : 0;
    int32_t *task = calloc ((size_t) size, sizeof (*task)), *got = calloc ((size_t) size, 4);
    char text[4096];
    int rv;

    check (dtshim_allgather (&mine, sizeof (mine), task), "dtshim_allgather");
    if (task[rank] != mine)
        return printf ("FAIL rank %d: allgather puts task %d here\n", rank, (int) task[rank]), 1;
    rv = order_rooted (task, mine, got);
    check (dtshim_barrier (), "dtshim_barrier");
    task_list (task, text, sizeof (text));
    if (rv == 0)
        printf ("rank %d task %d: tasks in rank order %s, node %d, chief %s\n", rank, (int) mine,
                text, dtshim_node_rank (), dtshim_chief_host ());
    free (task);
    free (got);
    return rv;
}

/* Each mode with the words after it, in argv's order; argv ends with NULL. */
static int run_facts (char **arg)
{
    (void) arg;
    return facts ();
}

static int run_collectives (char **arg)
{
    return collectives ((unsigned) atoi (arg[0]));
}

static int run_preempt (char **arg)
{
    return preempt (arg[0]);
}

static int run_misuse (char **arg)
{
    (void) arg;
    return misuse ();
}

static int run_idle (char **arg)
{
    return idle (arg[0]);
}

static int run_deadline (char **arg)
{
    return deadline (atoi (arg[0]), arg[1] != NULL ? arg[1] : "kill");
}

static int run_late (char **arg)
{
    return late (atoi (arg[0]), atoi (arg[1]));
}

static int run_order (char **arg)
{
    (void) arg;
    return order ();
}

static int run_abort (char **arg)
{
    return abort_step (atoi (arg[0]));
}

static int run_unique_id (char **arg)
{
    return unique_id (atoi (arg[0]));
}

static int run_unique_ids (char **arg)
{
    return unique_ids (atoi (arg[0]), atoi (arg[1]));
}

struct mode {
    const char *name;
    int words; /* how many words it needs after its name */
    int (*run) (char **arg);
    int finalize; /* 0 for deadline: leaves without dtshim_finalize, a rank is dead or stopped */
};

static const struct mode modes[] = {
    {"facts", 0, run_facts, 1},         {"collectives", 1, run_collectives, 1},
    {"preempt", 1, run_preempt, 1},     {"misuse", 0, run_misuse, 1},
    {"idle", 1, run_idle, 1},           {"deadline", 1, run_deadline, 0},
    {"late", 2, run_late, 1},           {"abort", 1, run_abort, 1},
    {"unique-id", 1, run_unique_id, 1}, {"unique-ids", 2, run_unique_ids, 1},
    {"order", 0, run_order, 1},
};

/* The mode of that name given enough words after it, or NULL. */
static const struct mode *find_mode (const char *name, int words)
{
    for (size_t i = 0; i < sizeof (modes) / sizeof (modes[0]); i++)
        if (strcmp (name, modes[i].name) == 0 && words >= modes[i].words)
            return &modes[i];
    return NULL;
}

/* The program's own handler, installed first: libdtshim must chain to it. */
static void chain_handler (void)
{
    struct sigaction sa;

    memset (&sa, 0, sizeof (sa));
    sa.sa_handler = program_handler;
    sigaction (SIGUSR2, &sa, NULL);
}

int main (int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "facts";
    char **arg = argv + (argc > 1 ? 2 : 1); /* the words after the mode */
    const struct mode *m;
    int rv;

    setvbuf (stdout, NULL, _IOLBF, 0);
    if (strcmp (mode, "preempt") == 0)
        chain_handler ();
    rv = dtshim_init ();
    if (strcmp (mode, "init") == 0) {
        printf ("dtshim_init: %s%s%s\n", dtshim_strerror (rv), *dtshim_last_error () ? ": " : "",
                dtshim_last_error ());
        return rv == DTSHIM_OK ? 0 : 2;
    }
    check (rv, "dtshim_init");
    rank = dtshim_rank ();
    size = dtshim_size ();
    if ((m = find_mode (mode, (int) (argc - (arg - argv)))) == NULL)
        return fprintf (stderr, "shim_check: unknown mode %s\n", mode), 2;
    rv = m->run (arg);
    if (!m->finalize)
        return rv;
    check (dtshim_finalize (), "dtshim_finalize");
    return rv;
}
