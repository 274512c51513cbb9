/* plan.c - dist-train-plan: show the binding --dist-train would compute for
 * a node, from its live topology or an XML file, and time it.
 *
 *   dist-train-plan [--topology FILE] [--tasks N] [--gpus LIST] [--cores LIST]
 *                   [--bench RUNS] [--timeout SECONDS]
 *
 * --gpus is Slurm's global GPU index list (default: all GPUs), --cores
 * Slurm's core list (default: every core).  An admin can check a site's
 * topology file here before naming it in plugstack.conf.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libdist/bind.h"
#include "libdist/topo.h"

static double now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static void usage (FILE *f)
{
    fprintf (f, "usage: dist-train-plan [--topology FILE] [--tasks N] [--gpus LIST] "
                "[--cores LIST] [--bench RUNS] [--timeout SECONDS]\n");
}

static void print_plan (const struct dist_topo *t, const int *step_gpu,
                        const struct dist_bind_plan *plan)
{
    char cpus[1024], mems[256];
    int r, i, vis[DIST_GPUS_MAX];

    printf ("%-5s %-28s %-10s %-20s %-6s %s\n", "RANK", "GPUS", "VISIBLE", "CPUS", "MEMS", "NIC");
    for (r = 0; r < plan->ntasks; r++) {
        const struct dist_bind_rank *rk = &plan->rank[r];
        char gpus[DIST_GPUS_MAX * DIST_BUSID_MAX] = "-", visible[256] = "-";
        size_t off = 0;
        int n;
        for (i = 0; i < rk->gpu_count; i++)
            off += (size_t) snprintf (gpus + off, sizeof (gpus) - off, "%s%s", i ? "," : "",
                                      t->gpu[step_gpu[plan->order[rk->gpu_first + i]]].busid);
        n = dist_bind_visible (plan, r, false, vis);
        off = 0;
        for (i = 0; i < n && off < sizeof (visible); i++)
            off += (size_t) snprintf (visible + off, sizeof (visible) - off, "%s%d", i ? "," : "",
                                      vis[i]);
        hwloc_bitmap_list_snprintf (cpus, sizeof (cpus), rk->cpuset);
        hwloc_bitmap_list_snprintf (mems, sizeof (mems), rk->nodeset);
        printf ("%-5d %-28s %-10s %-20s %-6s %s\n", r, gpus, visible, cpus, mems,
                rk->nic >= 0 ? t->nic[rk->nic].name : "-");
    }
    if (plan->cpus_shared)
        printf ("(more ranks than CPUs: one CPU each, shared evenly)\n");
}

/* What the command line asks for. */
struct options {
    const char *xml, *gpus, *cores;
    const char *label; /* what to call xml in a message: its option or variable */
    int ntasks, runs;
};

/* --timeout's whole seconds become the file reader's limit; -1, said on
 * stderr, for anything else. */
static int parse_timeout (const char *v)
{
    char *end;
    long sec = strtol (v, &end, 10);

    if (end == v || *end != '\0' || sec < 1 || sec > 3600) {
        fprintf (stderr, "dist-train-plan: --timeout %s: expected whole seconds, 1 to 3600\n", v);
        return -1;
    }
    dist_topo_file_timeout_ms = (int) sec * 1000;
    return 0;
}

/* The options into o: true to go on, false to exit with *status (0 after
 * --help, 2 for an argument it does not take). */
static bool parse_options (int argc, char **argv, struct options *o, int *status)
{
    *status = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp (a, "--help") == 0 || strcmp (a, "-h") == 0) {
            usage (stdout);
            *status = 0;
            return false;
        }
        if (v == NULL) {
            usage (stderr);
            return false;
        }
        if (strcmp (a, "--topology") == 0)
            o->xml = v;
        else if (strcmp (a, "--tasks") == 0)
            o->ntasks = atoi (v);
        else if (strcmp (a, "--gpus") == 0)
            o->gpus = v;
        else if (strcmp (a, "--cores") == 0)
            o->cores = v;
        else if (strcmp (a, "--bench") == 0)
            o->runs = atoi (v);
        else if (strcmp (a, "--timeout") == 0) {
            if (parse_timeout (v) < 0)
                return false;
        } else {
            usage (stderr);
            return false;
        }
        i++;
    }
    return true;
}

/* The topology into t, from --topology, HWLOC_XMLFILE or this machine, and
 * how long hwloc took to load it into *t_load (us); -1, said on stderr,
 * when it cannot be read. */
static int load_topology (struct options *o, struct dist_topo *t, double *t_load)
{
    char err[256];
    double t0;
    int rc;

    /* A file is read by hwloc in a child, as the plugin does: a corrupt one is named as
     * such, not a crash of this program; what is planned here is the child's export of
     * it, the text slurmstepd parses (the file itself is never parsed in this process). */
    if (o->xml == NULL && (o->xml = getenv ("HWLOC_XMLFILE")) != NULL)
        o->label = "HWLOC_XMLFILE";
    if (o->xml != NULL) {
        size_t len = 0;
        char *checked = NULL;
        if (dist_topo_read_file (o->label, o->xml, DIST_TOPO_IO, NULL, NULL, &checked, &len, err,
                                 sizeof (err))
            != 1) {
            fprintf (stderr, "dist-train-plan: %s\n", err);
            return -1;
        }
        t0 = now_us ();
        rc = dist_topo_load_xml (t, checked, len + 1, DIST_TOPO_IO, err, sizeof (err));
        free (checked);
    } else {
        t0 = now_us ();
        rc = dist_topo_load (t, NULL, DIST_TOPO_IO, err, sizeof (err));
    }
    if (rc < 0) {
        fprintf (stderr, "dist-train-plan: %s\n", err);
        return -1;
    }
    *t_load = now_us () - t0;
    return 0;
}

/* The step's GPUs, as topology indices, into step_gpu: --gpus's list,
 * none, or every GPU; how many, or -1 (said on stderr) for a bad list. */
static int step_gpus (const struct options *o, const struct dist_topo *t, int *step_gpu)
{
    int nstep;

    if (o->gpus != NULL && strcmp (o->gpus, "none") == 0)
        return 0;
    if (o->gpus != NULL) {
        nstep = dist_parse_index_list (o->gpus, step_gpu, DIST_GPUS_MAX);
        if (nstep < 0)
            fprintf (stderr, "dist-train-plan: --gpus %s: expected a list like 0,1 or 0-3\n",
                     o->gpus);
        return nstep < 0 ? -1 : nstep;
    }
    for (nstep = 0; nstep < t->ngpus; nstep++)
        step_gpu[nstep] = nstep;
    return nstep;
}

/* The step's CPUs into allowed: --cores's cores, or every PU of the
 * topology.  A core the topology lacks is left out with a warning; -1,
 * said on stderr, for a list that is not one. */
static int allowed_cpus (const struct options *o, const struct dist_topo *t, hwloc_bitmap_t allowed)
{
    hwloc_bitmap_t missing;
    char err[256], list[256];

    if (o->cores == NULL) {
        hwloc_bitmap_copy (allowed, hwloc_topology_get_topology_cpuset (t->topo));
        return 0;
    }
    missing = hwloc_bitmap_alloc ();
    if (dist_topo_cores_cpuset (t, o->cores, allowed, missing, err, sizeof (err)) < 0) {
        fprintf (stderr, "dist-train-plan: --cores: %s\n", err);
        hwloc_bitmap_free (missing);
        return -1;
    }
    if (!hwloc_bitmap_iszero (missing)) {
        hwloc_bitmap_list_snprintf (list, sizeof (list), missing);
        fprintf (stderr,
                 "dist-train-plan: --cores: the topology has no core %s (it has %d): "
                 "left out\n",
                 list, dist_topo_core_count (t));
    }
    hwloc_bitmap_free (missing);
    return 0;
}

/* --bench: the plan computed runs times over, and its mean time. */
static void bench (const struct dist_topo *t, hwloc_const_bitmap_t allowed, const int *step_gpu,
                   int nstep, const struct options *o, double t_load)
{
    struct dist_bind_plan plan;
    char err[256];
    double t0 = now_us ();

    for (int i = 0; i < o->runs; i++) {
        dist_bind_plan (t, allowed, step_gpu, nstep, o->ntasks, &plan, err, sizeof (err));
        dist_bind_plan_free (&plan);
    }
    printf ("bench: load %.0f us; plan %d tasks, %d GPUs: %.1f us per node (mean of %d)\n", t_load,
            o->ntasks, nstep, (now_us () - t0) / o->runs, o->runs);
}

int main (int argc, char **argv)
{
    struct options o = {.label = "topology"};
    int step_gpu[DIST_GPUS_MAX], nstep, status;
    struct dist_topo t;
    struct dist_bind_plan plan;
    hwloc_bitmap_t allowed;
    char err[256];
    double t_load;

    if (!parse_options (argc, argv, &o, &status))
        return status;
    if (load_topology (&o, &t, &t_load) < 0)
        return 1;
    if ((nstep = step_gpus (&o, &t, step_gpu)) < 0)
        return 2;
    allowed = hwloc_bitmap_alloc ();
    if (allowed_cpus (&o, &t, allowed) < 0)
        return 2;
    if (o.ntasks <= 0)
        o.ntasks = nstep > 0 ? nstep : 1;
    if (dist_bind_plan (&t, allowed, step_gpu, nstep, o.ntasks, &plan, err, sizeof (err)) < 0) {
        fprintf (stderr, "dist-train-plan: %s\n", err);
        return 1;
    }
    printf ("topology %s: %d PUs, %d NUMA nodes, %d GPUs, %d RDMA NICs\n",
            o.xml != NULL ? o.xml : "(this machine)",
            hwloc_get_nbobjs_by_type (t.topo, HWLOC_OBJ_PU),
            hwloc_get_nbobjs_by_type (t.topo, HWLOC_OBJ_NUMANODE), t.ngpus, t.nnics);
    print_plan (&t, step_gpu, &plan);
    dist_bind_plan_free (&plan);
    if (o.runs > 0)
        bench (&t, allowed, step_gpu, nstep, &o, t_load);
    hwloc_bitmap_free (allowed);
    dist_topo_destroy (&t);
    return 0;
}
