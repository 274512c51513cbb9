/* bench_sim.c - the plugin at sizes no test cluster reaches: srun's side
 * (spank/local.c) and one slurmstepd's (spank/remote.c), linked as they are,
 * against the stand-in of spank_standin.c answering what slurmctld and
 * slurmstepd would for a synthetic step.  scripts/bench-sim runs it.
 *
 *   bench_sim NODES PPN DIST SWITCHES ORDER RUNS
 *     DIST: block, cyclic, plane=N, arbitrary (a hostfile of the nodes from
 *           the last to the first), scrambled (a shuffled hostfile)
 *     SWITCHES: leaf switches of topology/tree, consecutive nodes on each;
 *           0 for none
 *     ORDER: topology for rank_order=topology, else slurm
 *
 * It prints one CSV line (bench_sim --header: the header), medians of RUNS:
 *   srun_us          srun's local_user_init: layout, groups, handover
 *   srun_kib         the heap srun's side held at its peak
 *   handover_bytes   the step's environment srun added for the nodes
 *   stepd_us_per_node user_init and the task_inits of a node of the middle
 *   stepd_kib_per_node the heap its plugin held at its peak
 *   stepd_rank0_us   the same on rank 0's node, which also writes the layout
 *                    for the doctor
 *   doctor_layout_us rank 0's doctor reading that layout
 *   lost             what the nodes went without (layout: the doctor's layout
 *                    check; groups: the topology variables; order:
 *                    rank_order=topology), "-" for nothing
 *   srun_said        whether srun said a line about it (1) or not (0)
 * With BENCH_SIM_SHOW set, rank 0's DIST_TRAIN_LAYOUT goes to stderr as
 * "rank0_layout=TEXT", for the test cluster's comparison (node_order.bats).
 * Time is CLOCK_MONOTONIC around the plugin's calls only; the heap is
 * mallinfo2's, sampled at each allocation the plugin's code makes (the link's
 * --wrap), in runs of their own.  The node's topology is this machine's, from
 * the plugin's per-boot cache (BENCH_SIM_TOPOLOGY=FILE: a site's file). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "libdist/handover.h"
#include "libdist/layout.h"
#include "libdist/netgroup.h"
#include "spank/dist_train.h"
#include "tests/fuzz/spank_standin.h"
#include "tools/doctor/doctor.h"

extern slurm_conf_t slurm_conf; /* the stand-in's: srun's TopologyPlugin */

/* ---- the heap, sampled at the plugin's allocations (--wrap) ------------------ */

static bool tracking;
static size_t heap_base, heap_peak;

static size_t heap_now (void)
{
    struct mallinfo2 m = mallinfo2 ();

    return m.uordblks + m.hblkhd;
}

static void *sampled (void *p)
{
    size_t now;

    if (tracking && (now = heap_now ()) > heap_peak)
        heap_peak = now;
    return p;
}

void *__real_malloc (size_t size);
void *__real_calloc (size_t n, size_t size);
void *__real_realloc (void *p, size_t size);
char *__real_strdup (const char *s);
char *__real_strndup (const char *s, size_t n);
void *__wrap_malloc (size_t size);
void *__wrap_calloc (size_t n, size_t size);
void *__wrap_realloc (void *p, size_t size);
char *__wrap_strdup (const char *s);
char *__wrap_strndup (const char *s, size_t n);

void *__wrap_malloc (size_t size)
{
    return sampled (__real_malloc (size));
}

void *__wrap_calloc (size_t n, size_t size)
{
    return sampled (__real_calloc (n, size));
}

void *__wrap_realloc (void *p, size_t size)
{
    return sampled (__real_realloc (p, size));
}

char *__wrap_strdup (const char *s)
{
    return sampled (__real_strdup (s));
}

char *__wrap_strndup (const char *s, size_t n)
{
    return sampled (__real_strndup (s, n));
}

static void heap_start (void)
{
    heap_base = heap_peak = heap_now ();
    tracking = true;
}

static double heap_kib (void)
{
    tracking = false;
    return heap_peak > heap_base ? (double) (heap_peak - heap_base) / 1024.0 : 0.0;
}

/* ---- the synthetic step --------------------------------------------------------- */

struct sim {
    uint32_t nnodes, ppn, nranks, plane, switches;
    const char *dist_name; /* as given */
    enum dist_distribution dist;
    bool scrambled, order_topology;
    uint32_t *node_of_rank; /* slurmctld's layout */
    slurm_step_layout_t layout; /* as slurm_job_step_layout_get answers it */
    char *topology; /* as Slurm prints it */
    char nodelist[64], tasks_per_node[64];
};

static void die (const char *what)
{
    fprintf (stderr, "bench_sim: %s\n", what);
    exit (2);
}

/* A small, fixed generator: every run scrambles the same way. */
static uint64_t next_random (uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* slurmctld's layout: the nodes' ranks in the distribution's order; a hostfile under
 * arbitrary (srun reads it, slurmstepd never does). */
static void sim_layout (struct sim *s)
{
    uint32_t *counts = calloc (s->nnodes, sizeof (*counts)), r;
    uint64_t state = 0x9e3779b97f4a7c15u;

    s->node_of_rank = calloc (s->nranks, sizeof (*s->node_of_rank));
    if (counts == NULL || s->node_of_rank == NULL)
        die ("out of memory");
    for (uint32_t i = 0; i < s->nnodes; i++)
        counts[i] = s->ppn;
    if (s->dist != DIST_DIST_ARBITRARY) {
        if (dist_layout_assign (s->dist, s->plane, counts, s->nnodes, s->node_of_rank, s->nranks)
            < 0)
            die ("cannot lay the step out");
    } else {
        for (r = 0; r < s->nranks; r++)
            s->node_of_rank[r] = s->nnodes - 1 - r / s->ppn;
        for (r = s->nranks; s->scrambled && r > 1; r--) {
            uint32_t j = (uint32_t) (next_random (&state) % r), t = s->node_of_rank[r - 1];
            s->node_of_rank[r - 1] = s->node_of_rank[j];
            s->node_of_rank[j] = t;
        }
    }
    free (counts);
}

/* slurm_step_layout_t: tasks and tids by node, in rank order. */
static void sim_step_layout (struct sim *s)
{
    slurm_step_layout_t *l = &s->layout;
    uint32_t *fill = calloc (s->nnodes, sizeof (*fill));

    memset (l, 0, sizeof (*l));
    l->node_cnt = s->nnodes;
    l->task_cnt = s->nranks;
    l->node_list = s->nodelist;
    l->tasks = calloc (s->nnodes, sizeof (*l->tasks));
    l->tids = calloc (s->nnodes, sizeof (*l->tids));
    if (fill == NULL || l->tasks == NULL || l->tids == NULL)
        die ("out of memory");
    for (uint32_t i = 0; i < s->nnodes; i++) {
        l->tasks[i] = (uint16_t) s->ppn;
        if ((l->tids[i] = calloc (s->ppn, sizeof (**l->tids))) == NULL)
            die ("out of memory");
    }
    for (uint32_t r = 0; r < s->nranks; r++) {
        uint32_t node = s->node_of_rank[r];
        l->tids[node][fill[node]++] = r;
    }
    free (fill);
}

/* topology/tree: SWITCHES leaf switches of consecutive nodes under one spine. */
static void sim_topology (struct sim *s)
{
    size_t size = 0;
    FILE *out = open_memstream (&s->topology, &size);
    uint32_t per, first;

    if (out == NULL)
        die ("out of memory");
    per = (s->nnodes + s->switches - 1) / s->switches;
    for (uint32_t sw = 0; sw < s->switches && (first = sw * per) < s->nnodes; sw++) {
        uint32_t last = first + per < s->nnodes ? first + per - 1 : s->nnodes - 1;
        fprintf (out,
                 "SwitchName=leaf%" PRIu32 " Level=0 LinkSpeed=1 Nodes=node[%" PRIu32 "-%" PRIu32
                 "]\n",
                 sw, first + 1, last + 1);
    }
    fprintf (out,
             "SwitchName=spine Level=1 LinkSpeed=1 Nodes=node[1-%" PRIu32
             "] Switches=leaf[0-%" PRIu32 "]\n",
             s->nnodes, s->switches - 1);
    if (fclose (out) != 0)
        die ("out of memory");
}

static void sim_make (struct sim *s, char **argv)
{
    s->nnodes = (uint32_t) strtoul (argv[1], NULL, 10);
    s->ppn = (uint32_t) strtoul (argv[2], NULL, 10);
    s->dist_name = argv[3];
    s->switches = (uint32_t) strtoul (argv[4], NULL, 10);
    s->order_topology = strcmp (argv[5], "topology") == 0;
    if (s->nnodes == 0 || s->nnodes > (1u << 20) || s->ppn == 0 || s->ppn > 256)
        die ("NODES must be 1 to 1048576 and PPN 1 to 256");
    s->nranks = s->nnodes * s->ppn;
    s->scrambled = strcmp (s->dist_name, "scrambled") == 0;
    s->dist = s->scrambled ? DIST_DIST_ARBITRARY : dist_distribution_parse (s->dist_name);
    if (s->dist == DIST_DIST_PLANE)
        s->plane = (uint32_t) strtoul (
            strchr (s->dist_name, '=') != NULL ? strchr (s->dist_name, '=') + 1 : "1", NULL, 10);
    if (s->dist == DIST_DIST_UNKNOWN || (s->dist == DIST_DIST_PLANE && s->plane == 0))
        die ("DIST must be block, cyclic, plane=N, arbitrary or scrambled");
    snprintf (s->nodelist, sizeof (s->nodelist), "node[1-%" PRIu32 "]", s->nnodes);
    snprintf (s->tasks_per_node, sizeof (s->tasks_per_node), "%" PRIu32 "(x%" PRIu32 ")", s->ppn,
              s->nnodes);
    sim_layout (s);
    sim_step_layout (s);
    if (s->switches > 0)
        sim_topology (s);
}

/* ---- the plugin's calls ------------------------------------------------------- */

static double now_us (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static const char *const handed_vars[] = {DIST_HANDOVER_VAR, DIST_LAYOUT_VAR, DIST_NETGROUP_VAR};

static void items_for_step (const struct sim *s)
{
    standin_items.job_id = 4242;
    standin_items.step_id = 0;
    standin_items.nnodes = s->nnodes;
    standin_items.ntasks = s->nranks;
    standin_items.cpus_per_task = 1;
    standin_items.task = -1;
}

/* The plugin's init and the option, as srun or slurmstepd gives them. */
static void plugin_start (const struct sim *s, spank_t sp)
{
    static char *av[] = {NULL};

    if (slurm_spank_init (sp, 0, av) != 0 || standin_option == NULL)
        die ("slurm_spank_init failed");
    (void) standin_option->cb (standin_option->val,
                               s->order_topology ? "rank_order=topology" : NULL, 1);
    if (slurm_spank_init_post_opt (sp, 0, av) != 0)
        die ("slurm_spank_init_post_opt refused the step");
}

struct srun_result {
    double us, kib;
    size_t handover_bytes;
    bool said;
};

/* srun: local_user_init, which reads the layout and hands it over. */
static double srun_once (const struct sim *s, spank_t sp, bool heap, double *kib)
{
    static char *av[] = {NULL};
    double t0, t1;

    standin_context = S_CTX_LOCAL;
    items_for_step (s);
    for (size_t i = 0; i < sizeof (handed_vars) / sizeof (handed_vars[0]); i++)
        unsetenv (handed_vars[i]);
    plugin_start (s, sp);
    standin_said = false;
    if (heap)
        heap_start ();
    t0 = now_us ();
    if (slurm_spank_local_user_init (sp, 0, av) != 0)
        die ("srun refused the step");
    t1 = now_us ();
    if (heap)
        *kib = heap_kib ();
    return t1 - t0;
}

static int by_value (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

static double median (double *v, int n)
{
    qsort (v, (size_t) n, sizeof (*v), by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- one slurmstepd ------------------------------------------------------------- */

struct node_result {
    bool layout, groups, order; /* what the node's tasks got */
    char *rank0_layout; /* rank 0's DIST_TRAIN_LAYOUT, if this node has rank 0 */
};

/* The node's environment: the step's, and what srun handed over. */
static void stepd_env (const struct sim *s)
{
    char plane[16];

    standin_reset ();
    standin_setenv ("SLURM_STEP_NODELIST", s->nodelist);
    standin_setenv ("SLURM_JOB_NODELIST", s->nodelist);
    standin_setenv ("SLURM_STEP_TASKS_PER_NODE", s->tasks_per_node);
    standin_setenv ("SLURM_DISTRIBUTION", s->dist == DIST_DIST_PLANE    ? "plane"
                                          : s->dist == DIST_DIST_CYCLIC ? "cyclic"
                                          : s->dist == DIST_DIST_BLOCK  ? "block"
                                                                        : "arbitrary");
    if (s->dist == DIST_DIST_PLANE) {
        snprintf (plane, sizeof (plane), "%" PRIu32, s->plane);
        standin_setenv ("SLURM_DIST_PLANESIZE", plane);
    }
    for (size_t i = 0; i < sizeof (handed_vars) / sizeof (handed_vars[0]); i++)
        if (getenv (handed_vars[i]) != NULL)
            standin_setenv (handed_vars[i], getenv (handed_vars[i]));
}

/* user_init and each task's task_init on node `nodeid`: their time. */
static double stepd_once (const struct sim *s, spank_t sp, uint32_t nodeid, const uint32_t *gtids,
                          bool heap, double *kib, struct node_result *res)
{
    static char *av[] = {NULL};
    char name[32];
    double us = 0, t0;

    /* slurmstepd's own environment names its node */
    snprintf (name, sizeof (name), "node%" PRIu32, nodeid + 1);
    setenv ("SLURMD_NODENAME", name, 1);
    standin_context = S_CTX_REMOTE;
    stepd_env (s);
    items_for_step (s);
    standin_items.nodeid = nodeid;
    standin_items.local = s->ppn;
    standin_items.gtids = gtids;
    standin_items.cores = strdup ("0-127");
    plugin_start (s, sp);
    if (heap)
        heap_start ();
    t0 = now_us ();
    if (slurm_spank_user_init (sp, 0, av) != 0)
        die ("user_init failed");
    us += now_us () - t0;
    standin_env_save ();
    for (uint32_t t = 0; t < s->ppn; t++) {
        standin_items.task = (int) t;
        t0 = now_us ();
        (void) slurm_spank_task_init_privileged (sp, 0, av);
        if (slurm_spank_task_init (sp, 0, av) != 0)
            die ("task_init refused a task");
        us += now_us () - t0;
        if (res != NULL) {
            const char *layout = standin_getenv ("DIST_TRAIN_LAYOUT");
            res->groups = standin_getenv ("DIST_TRAIN_TOPOLOGY_GROUP") != NULL;
            res->order = standin_getenv ("DIST_TRAIN_RANK_ORDER") != NULL;
            if (layout != NULL && res->rank0_layout == NULL)
                res->rank0_layout = strdup (layout);
        }
        standin_env_restore ();
    }
    if (heap)
        *kib = heap_kib ();
    standin_items.task = -1;
    (void) slurm_spank_exit (sp, 0, av);
    return us;
}

/* The Slurm ranks of node `nodeid`, in order. */
static uint32_t *node_ranks (const struct sim *s, uint32_t nodeid)
{
    uint32_t *gtids = calloc (s->ppn, sizeof (*gtids)), n = 0;

    if (gtids == NULL)
        die ("out of memory");
    for (uint32_t r = 0; r < s->nranks && n < s->ppn; r++)
        if (s->node_of_rank[r] == nodeid)
            gtids[n++] = r;
    return gtids;
}

static size_t handover_bytes (void)
{
    size_t n = 0;

    for (size_t i = 0; i < sizeof (handed_vars) / sizeof (handed_vars[0]); i++)
        if (getenv (handed_vars[i]) != NULL)
            n += strlen (handed_vars[i]) + 1 + strlen (getenv (handed_vars[i]));
    return n;
}

/* What one case measured: medians of its runs. */
struct figures {
    double srun_us, srun_kib, stepd_us, stepd_kib, rank0_us, doctor_us;
    size_t handover_bytes;
    bool said;
    struct node_result mid, rank0; /* what the first run's tasks got */
};

static double *times (int runs)
{
    double *t = calloc ((size_t) runs, sizeof (*t));

    if (t == NULL)
        die ("out of memory");
    return t;
}

static void measure_srun (const struct sim *s, spank_t sp, int runs, struct figures *f)
{
    double *t = times (runs);

    for (int i = 0; i < runs; i++)
        t[i] = srun_once (s, sp, false, NULL);
    (void) srun_once (s, sp, true, &f->srun_kib);
    f->said = standin_said;
    f->handover_bytes = handover_bytes ();
    f->srun_us = median (t, runs);
    free (t);
}

/* The node of RANK 0: Slurm rank 0's, or under rank_order=topology the first rank's of the
 * first leaf switch (the topology lists leaf0 first: its nodes are group 0) where srun
 * could hand the layout over. */
static uint32_t rank0_node (const struct sim *s)
{
    uint32_t per = s->switches > 0 ? (s->nnodes + s->switches - 1) / s->switches : s->nnodes;

    if (!s->order_topology || s->switches == 0 || getenv (DIST_LAYOUT_VAR) == NULL)
        return s->node_of_rank[0];
    for (uint32_t r = 0; r < s->nranks; r++)
        if (s->node_of_rank[r] < per)
            return s->node_of_rank[r];
    return s->node_of_rank[0];
}

/* A node of the middle, and rank 0's, which also writes the doctor's layout. */
static void measure_stepd (const struct sim *s, spank_t sp, int runs, struct figures *f)
{
    uint32_t mid = s->nnodes / 2, node0 = rank0_node (s);
    uint32_t *mid_ranks = node_ranks (s, mid), *ranks0 = node_ranks (s, node0);
    double *t = times (runs), *t0 = times (runs), kib0;

    for (int i = 0; i < runs; i++) {
        t[i] = stepd_once (s, sp, mid, mid_ranks, false, NULL, i == 0 ? &f->mid : NULL);
        t0[i] = stepd_once (s, sp, node0, ranks0, false, NULL, i == 0 ? &f->rank0 : NULL);
    }
    (void) stepd_once (s, sp, mid, mid_ranks, true, &f->stepd_kib, NULL);
    (void) stepd_once (s, sp, node0, ranks0, true, &kib0, NULL);
    f->stepd_us = median (t, runs);
    f->rank0_us = median (t0, runs);
    /* (for the cluster's check that it lays a step out as this does) */
    if (getenv ("BENCH_SIM_SHOW") != NULL)
        fprintf (stderr, "rank0_layout=%s\n",
                 f->rank0.rank0_layout != NULL ? f->rank0.rank0_layout : "");
    free (t);
    free (t0);
    free (mid_ranks);
    free (ranks0);
}

/* Rank 0's doctor reading the layout the plugin gave it: -1 when it has none it can read. */
static void measure_doctor (const struct sim *s, int runs, struct figures *f)
{
    double *t = times (runs), t0;
    struct doctor_layout dl;

    f->doctor_us = -1;
    for (int i = 0; f->rank0.rank0_layout != NULL && i < runs; i++) {
        t0 = now_us ();
        if (doctor_layout_from_plugin (s->nodelist, f->rank0.rank0_layout, 4242, 0, &dl) < 0) {
            free (t);
            return;
        }
        t[i] = now_us () - t0;
        doctor_layout_free (&dl);
    }
    if (f->rank0.rank0_layout != NULL)
        f->doctor_us = median (t, runs);
    free (t);
}

static void print_row (const struct sim *s, const struct figures *f)
{
    char lost[64] = "";

    if (f->doctor_us < 0)
        strcat (lost, "layout");
    if (s->switches > 0 && !(f->mid.groups && f->rank0.groups))
        strcat (lost, lost[0] != '\0' ? "+groups" : "groups");
    if (s->order_topology && !(f->mid.order && f->rank0.order))
        strcat (lost, lost[0] != '\0' ? "+order" : "order");
    printf ("%" PRIu32 ",%" PRIu32 ",%s,%" PRIu32 ",%s,%.0f,%.0f,%zu,%.0f,%.0f,%.0f,%.0f,%s,%d\n",
            s->nnodes, s->nranks, s->dist_name, s->switches,
            s->order_topology ? "topology" : "slurm", f->srun_us, f->srun_kib, f->handover_bytes,
            f->stepd_us, f->stepd_kib, f->rank0_us, f->doctor_us, lost[0] != '\0' ? lost : "-",
            f->said ? 1 : 0);
}

int main (int argc, char **argv)
{
    static struct sim s;
    static struct figures f;
    spank_t sp = (spank_t) &standin_items;
    struct standin_srun answers;
    int runs;

    if (argc == 2 && strcmp (argv[1], "--header") == 0) {
        puts ("nodes,ranks,distribution,switches,rank_order,srun_us,srun_kib,handover_bytes,"
              "stepd_us_per_node,stepd_kib_per_node,stepd_rank0_us,doctor_layout_us,lost,"
              "srun_said");
        return 0;
    }
    if (argc != 7)
        die ("usage: bench_sim NODES PPN DIST SWITCHES ORDER RUNS (or --header)");
    runs = atoi (argv[6]);
    if (runs < 1 || runs > 1000)
        die ("RUNS must be 1 to 1000");
    sim_make (&s, argv);
    standin_hosts_max = (size_t) s.nnodes + 1;
    /* (a node's usual source: this machine's topology from the per-boot cache, which the
     * first run writes; BENCH_SIM_TOPOLOGY names a site's file instead, read through
     * its checking child at every step) */
    if (getenv ("BENCH_SIM_TOPOLOGY") != NULL)
        setenv ("HWLOC_XMLFILE", getenv ("BENCH_SIM_TOPOLOGY"), 1);
    else
        unsetenv ("HWLOC_XMLFILE");
    unsetenv ("MASTER_ADDR");
    slurm_conf.topology_plugin = s.switches > 0 ? (char *) "topology/tree" : NULL;
    answers =
        (struct standin_srun){.layout = &s.layout, .node_addr = "10.0.0.1", .topology = s.topology};
    standin_srun = &answers;
    measure_srun (&s, sp, runs, &f);
    measure_stepd (&s, sp, runs, &f);
    measure_doctor (&s, runs, &f);
    print_row (&s, &f);
    return 0;
}
