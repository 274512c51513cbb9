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

int main (int argc, char **argv)
{
    const char *xml = NULL, *gpus = NULL, *cores = NULL, *label = "topology";
    int ntasks = 0, runs = 0, step_gpu[DIST_GPUS_MAX], nstep, i, rc;
    struct dist_topo t;
    struct dist_bind_plan plan;
    hwloc_bitmap_t allowed;
    char err[256];
    double t0, t_load;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp (a, "--help") == 0 || strcmp (a, "-h") == 0) {
            usage (stdout);
            return 0;
        }
        if (v == NULL) {
            usage (stderr);
            return 2;
        }
        if (strcmp (a, "--topology") == 0)
            xml = v;
        else if (strcmp (a, "--tasks") == 0)
            ntasks = atoi (v);
        else if (strcmp (a, "--gpus") == 0)
            gpus = v;
        else if (strcmp (a, "--cores") == 0)
            cores = v;
        else if (strcmp (a, "--bench") == 0)
            runs = atoi (v);
        else if (strcmp (a, "--timeout") == 0) {
            char *end;
            long sec = strtol (v, &end, 10);
            if (end == v || *end != '\0' || sec < 1 || sec > 3600) {
                fprintf (stderr,
                         "dist-train-plan: --timeout %s: expected whole seconds, 1 to "
                         "3600\n",
                         v);
                return 2;
            }
            dist_topo_file_timeout_ms = (int) sec * 1000;
        } else {
            usage (stderr);
            return 2;
        }
        i++;
    }
    /* A file is read by hwloc in a child, as the plugin does: a corrupt one is named as
     * such, not a crash of this program; what is planned here is the child's export of
     * it, the text slurmstepd parses (the file itself is never parsed in this process). */
    if (xml == NULL && (xml = getenv ("HWLOC_XMLFILE")) != NULL)
        label = "HWLOC_XMLFILE";
    if (xml != NULL) {
        size_t len = 0;
        char *checked = NULL;
        if (dist_topo_read_file (label, xml, DIST_TOPO_IO, NULL, NULL, &checked, &len, err,
                                 sizeof (err))
            != 1) {
            fprintf (stderr, "dist-train-plan: %s\n", err);
            return 1;
        }
        t0 = now_us ();
        rc = dist_topo_load_xml (&t, checked, len + 1, DIST_TOPO_IO, err, sizeof (err));
        free (checked);
    } else {
        t0 = now_us ();
        rc = dist_topo_load (&t, NULL, DIST_TOPO_IO, err, sizeof (err));
    }
    if (rc < 0) {
        fprintf (stderr, "dist-train-plan: %s\n", err);
        return 1;
    }
    t_load = now_us () - t0;
    if (gpus != NULL && strcmp (gpus, "none") == 0) {
        nstep = 0;
    } else if (gpus != NULL) {
        nstep = dist_parse_index_list (gpus, step_gpu, DIST_GPUS_MAX);
        if (nstep < 0) {
            fprintf (stderr, "dist-train-plan: --gpus %s: expected a list like 0,1 or 0-3\n", gpus);
            return 2;
        }
    } else {
        for (nstep = 0; nstep < t.ngpus; nstep++)
            step_gpu[nstep] = nstep;
    }
    allowed = hwloc_bitmap_alloc ();
    if (cores != NULL) {
        hwloc_bitmap_t missing = hwloc_bitmap_alloc ();
        char list[256];
        if (dist_topo_cores_cpuset (&t, cores, allowed, missing, err, sizeof (err)) < 0) {
            fprintf (stderr, "dist-train-plan: --cores: %s\n", err);
            return 2;
        }
        if (!hwloc_bitmap_iszero (missing)) {
            hwloc_bitmap_list_snprintf (list, sizeof (list), missing);
            fprintf (stderr,
                     "dist-train-plan: --cores: the topology has no core %s (it has %d): "
                     "left out\n",
                     list, dist_topo_core_count (&t));
        }
        hwloc_bitmap_free (missing);
    } else {
        hwloc_bitmap_copy (allowed, hwloc_topology_get_topology_cpuset (t.topo));
    }
    if (ntasks <= 0)
        ntasks = nstep > 0 ? nstep : 1;
    if (dist_bind_plan (&t, allowed, step_gpu, nstep, ntasks, &plan, err, sizeof (err)) < 0) {
        fprintf (stderr, "dist-train-plan: %s\n", err);
        return 1;
    }
    printf ("topology %s: %d PUs, %d NUMA nodes, %d GPUs, %d RDMA NICs\n",
            xml != NULL ? xml : "(this machine)", hwloc_get_nbobjs_by_type (t.topo, HWLOC_OBJ_PU),
            hwloc_get_nbobjs_by_type (t.topo, HWLOC_OBJ_NUMANODE), t.ngpus, t.nnics);
    print_plan (&t, step_gpu, &plan);
    dist_bind_plan_free (&plan);
    if (runs > 0) {
        t0 = now_us ();
        for (i = 0; i < runs; i++) {
            dist_bind_plan (&t, allowed, step_gpu, nstep, ntasks, &plan, err, sizeof (err));
            dist_bind_plan_free (&plan);
        }
        printf ("bench: load %.0f us; plan %d tasks, %d GPUs: %.1f us per node (mean of %d)\n",
                t_load, ntasks, nstep, (now_us () - t0) / runs, runs);
    }
    hwloc_bitmap_free (allowed);
    dist_topo_destroy (&t);
    return 0;
}
