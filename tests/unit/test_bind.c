/* test_bind.c - the binding planner on recorded hwloc XMLs of real GPU
 * servers and on synthetic ones, checked against each machine's layout as
 * tests/topologies/README.md records it (not against the planner's output).
 * The XMLs are read from $TOPOLOGY_DIR (tests/topologies by default). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "libdist/bind.h"
#include "libdist/topo.h"
#include "topologies.h"

/* ---- the machines, as recorded (NUMA and PU numbers are OS indexes) -- */

struct numa_fact {
    unsigned os;
    const char *pus;
};

struct dev_fact {
    const char *name; /* GPU: PCI bus id; NIC: OpenFabrics name */
    unsigned numa;
};

struct machine {
    const char *file;
    int npus;
    struct numa_fact numa[8]; /* in PU order */
    int nnuma;
    struct dev_fact gpu[16]; /* in PCI order */
    int ngpus;
    struct dev_fact nic[8];
    int nnics;
    const char *cores; /* a partial allocation: Slurm's cores */
    const char *cores_pus; /* ... and the PUs they are */
    const char *subset; /* a GPU subset Slurm may give */
};

/* A list of facts and its length, from one writing of the list. */
#define FACTS(list, n, type, ...)                                                                  \
    .list = {__VA_ARGS__}, .n = (int) (sizeof ((type[]){__VA_ARGS__}) / sizeof (type))
#define NUMA(...) FACTS (numa, nnuma, struct numa_fact, __VA_ARGS__)
#define GPUS(...) FACTS (gpu, ngpus, struct dev_fact, __VA_ARGS__)
#define NICS(...) FACTS (nic, nnics, struct dev_fact, __VA_ARGS__)

static const struct machine dgx2 = {
    .file = "nvidiaDGX2.xml",
    .npus = 4,
    NUMA ({0, "0-1"}, {1, "24-25"}),
    GPUS ({"0000:34:00.0", 0}, {"0000:36:00.0", 0}, {"0000:39:00.0", 0}, {"0000:3b:00.0", 0},
          {"0000:57:00.0", 0}, {"0000:59:00.0", 0}, {"0000:5c:00.0", 0}, {"0000:5e:00.0", 0},
          {"0000:b7:00.0", 1}, {"0000:b9:00.0", 1}, {"0000:bc:00.0", 1}, {"0000:be:00.0", 1},
          {"0000:e0:00.0", 1}, {"0000:e2:00.0", 1}, {"0000:e5:00.0", 1}, {"0000:e7:00.0", 1}),
    /* no NICs */
    .cores = "2-3",
    .cores_pus = "24-25",
    .subset = "1,3,9,11",
};

static const struct machine e5_3gpu = {
    .file = "32em64t-2n8c2t-pci-wholeio.xml",
    .npus = 32,
    NUMA ({0, "0-7,16-23"}, {1, "8-15,24-31"}),
    GPUS ({"0000:03:00.0", 0}, {"0000:83:00.0", 1}, {"0000:84:00.0", 1}),
    /* not NUMA 0 as SOURCES.md has it: the XML has two 0000:04:00.0, a SAS
     * controller on package 0 and this ConnectX on package 1, and
     * hwloc-calc pci=0000:04:00.0 finds the first one; os=mlx5_0 gives
     * PUs 8-15,24-31 */
    NICS ({"mlx5_0", 1}),
    .cores = "0-3",
    .cores_pus = "0-3,16-19",
    .subset = "1,2",
};

static const struct machine g4dn = {
    .file = "g4dnmetal.xml",
    .npus = 96,
    NUMA ({0, "0-23,48-71"}, {1, "24-47,72-95"}),
    GPUS ({"0000:18:00.0", 0}, {"0000:19:00.0", 0}, {"0000:35:00.0", 0}, {"0000:36:00.0", 0},
          {"0000:e7:00.0", 1}, {"0000:e8:00.0", 1}, {"0000:f4:00.0", 1}, {"0000:f5:00.0", 1}),
    NICS ({"rdmap197s0", 1}),
    .cores = "0-23",
    .cores_pus = "0-23,48-71",
    .subset = "1,3",
};

static const struct machine lassen = {
    .file = "coral-lassen.xml",
    .npus = 160,
    NUMA ({0, "8-87"}, {8, "96-175"}),
    GPUS ({"0004:04:00.0", 0}, {"0004:05:00.0", 0}, {"0035:03:00.0", 8}, {"0035:04:00.0", 8}),
    NICS ({"mlx5_0", 0}, {"mlx5_1", 0}, {"mlx5_2", 8}, {"mlx5_3", 8}),
    .cores = "18-21",
    .cores_pus = "80-87,96-103",
    .subset = "1,3",
};

static const struct machine pascal = {
    .file = "cts1-pascal.xml",
    .npus = 72,
    NUMA ({0, "0-17,36-53"}, {1, "18-35,54-71"}),
    GPUS ({"0000:04:00.0", 0}, {"0000:07:00.0", 0}),
    NICS ({"mlx5_0", 0}),
    .cores = "18-35",
    .cores_pus = "18-35,54-71",
    .subset = "1",
};

static const struct machine dgxa100 = {
    .file = "dgxa100-like.xml",
    .npus = 256,
    NUMA ({0, "0-31"}, {1, "32-63"}, {2, "64-95"}, {3, "96-127"}, {4, "128-159"}, {5, "160-191"},
          {6, "192-223"}, {7, "224-255"}),
    GPUS ({"0000:07:00.0", 3}, {"0000:0f:00.0", 2}, {"0000:47:00.0", 1}, {"0000:4e:00.0", 0},
          {"0000:87:00.0", 7}, {"0000:90:00.0", 6}, {"0000:b7:00.0", 5}, {"0000:bd:00.0", 4}),
    NICS ({"mlx5_0", 3}, {"mlx5_1", 2}, {"mlx5_2", 1}, {"mlx5_3", 0}, {"mlx5_4", 7}, {"mlx5_5", 6},
          {"mlx5_6", 5}, {"mlx5_7", 4}),
    .cores = "0-3,64-67",
    .cores_pus = "0-7,128-135",
    .subset = "1,3",
};

static const struct machine amd = {
    .file = "amd-like.xml",
    .npus = 64,
    NUMA ({0, "0-7"}, {1, "8-15"}, {2, "16-23"}, {3, "24-31"}, {4, "32-39"}, {5, "40-47"},
          {6, "48-55"}, {7, "56-63"}),
    GPUS ({"0000:81:00.0", 5}, {"0000:91:00.0", 7}, {"0000:c1:00.0", 1}, {"0000:d1:00.0", 3}),
    NICS ({"mlx5_0", 1}, {"mlx5_1", 3}, {"mlx5_2", 5}, {"mlx5_3", 7}),
    .cores = "8-15,40-47",
    .cores_pus = "8-15,40-47",
    .subset = "1,3",
};

static const struct machine mini = {
    .file = "minicluster-4gpu.xml",
    .npus = 2,
    NUMA ({0, "0"}, {1, "1"}),
    GPUS ({"0000:1b:00.0", 0}, {"0000:3d:00.0", 0}, {"0000:89:00.0", 1}, {"0000:b2:00.0", 1}),
    NICS ({"mlx5_0", 1}),
    .cores = "1",
    .cores_pus = "1",
    .subset = "1,3",
};

/* A step with every GPU of its machine lists them in PCI order: its GPU i is the machine's. */
static const int every_gpu[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
_Static_assert(sizeof (every_gpu) / sizeof (every_gpu[0])
                   == sizeof (((struct machine *) 0)->gpu) / sizeof (struct dev_fact),
               "every_gpu holds as many GPUs as a machine has room for");

/* ---- helpers ---------------------------------------------------------- */

static void load (const struct machine *m, struct dist_topo *t)
{
    topology_load (m->file, t);
}

/* The PUs of Slurm's cores list, into pus: every core is the machine's. */
static void cores_pus (const struct dist_topo *t, const char *cores, hwloc_bitmap_t pus)
{
    char err[256];
    assert_int_equal (dist_topo_cores_cpuset (t, cores, pus, NULL, err, sizeof (err)), 0);
}

static hwloc_bitmap_t bitmap (const char *list)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc ();
    assert_non_null (b);
    assert_int_equal (hwloc_bitmap_list_sscanf (b, list), 0);
    return b;
}

static const struct numa_fact *numa_fact (const struct machine *m, unsigned os)
{
    int i;
    for (i = 0; i < m->nnuma; i++)
        if (m->numa[i].os == os)
            return &m->numa[i];
    fail_msg ("%s: no NUMA node %u in the facts", m->file, os);
    return NULL;
}

/* The recorded NUMA node of the topology's GPU i (PCI order). */
static unsigned gpu_numa (const struct machine *m, const struct dist_topo *t, int i)
{
    int k;
    for (k = 0; k < m->ngpus; k++)
        if (strcmp (m->gpu[k].name, t->gpu[i].busid) == 0)
            return m->gpu[k].numa;
    fail_msg ("%s: GPU %s is not in the facts", m->file, t->gpu[i].busid);
    return 0;
}

static int numa_rank (const struct machine *m, unsigned os)
{
    int i;
    for (i = 0; i < m->nnuma; i++)
        if (m->numa[i].os == os)
            return i;
    return -1;
}

/* The NUMA nodes, by the facts, that a cpuset touches. */
static hwloc_bitmap_t facts_nodeset (const struct machine *m, hwloc_const_cpuset_t cpus)
{
    hwloc_bitmap_t ns = hwloc_bitmap_alloc ();
    int i;
    for (i = 0; i < m->nnuma; i++) {
        hwloc_bitmap_t pus = bitmap (m->numa[i].pus);
        if (hwloc_bitmap_intersects (pus, cpus))
            hwloc_bitmap_set (ns, m->numa[i].os);
        hwloc_bitmap_free (pus);
    }
    return ns;
}

static void plan_ok (const struct dist_topo *t, hwloc_const_cpuset_t allowed, const int *gpus,
                     int ngpus, int ntasks, struct dist_bind_plan *plan)
{
    char err[256] = "";
    if (dist_bind_plan (t, allowed, gpus, ngpus, ntasks, plan, err, sizeof (err)) < 0)
        fail_msg ("dist_bind_plan: %s", err);
    assert_int_equal (plan->ntasks, ntasks);
    assert_int_equal (plan->ngpus, ngpus);
}

/* More ranks than CPUs: one PU each, and the ranks on each of the step's
 * PUs differ by at most one, so no PU is idle while another runs two. */
static void check_even_share (hwloc_const_cpuset_t allowed, const struct dist_bind_plan *p)
{
    int lo = p->ntasks, hi = 0, pu, r;

    for (r = 0; r < p->ntasks; r++)
        assert_int_equal (hwloc_bitmap_weight (p->rank[r].cpuset), 1);
    hwloc_bitmap_foreach_begin (pu, allowed)
    {
        int n = 0;
        for (r = 0; r < p->ntasks; r++)
            n += hwloc_bitmap_isset (p->rank[r].cpuset, (unsigned) pu);
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    hwloc_bitmap_foreach_end ();
    if (hi - lo > 1)
        fail_msg ("%d ranks on %d PUs: %d to %d ranks per PU", p->ntasks,
                  hwloc_bitmap_weight (allowed), lo, hi);
}

/* GPUs: a permutation in locality order (NUMA PUs first, then bus id) */
static void check_gpu_order (const struct machine *m, const struct dist_topo *t,
                             const int *step_gpu, const struct dist_bind_plan *p)
{
    bool seen[DIST_GPUS_MAX];
    int i;

    memset (seen, 0, sizeof (seen));
    for (i = 0; i < p->ngpus; i++) {
        assert_in_range (p->order[i], 0, p->ngpus - 1);
        assert_false (seen[p->order[i]]);
        seen[p->order[i]] = true;
        if (i > 0) {
            int a = step_gpu[p->order[i - 1]], b = step_gpu[p->order[i]];
            int na = numa_rank (m, gpu_numa (m, t, a)), nb = numa_rank (m, gpu_numa (m, t, b));
            assert_true (na < nb || (na == nb && strcmp (t->gpu[a].busid, t->gpu[b].busid) < 0));
        }
    }
}

/* even, contiguous shares; neighbours share when tasks > GPUs */
static void check_gpu_shares (const struct dist_bind_plan *p)
{
    int T = p->ntasks, G = p->ngpus, r, i;

    for (r = 0; r < T; r++) {
        const struct dist_bind_rank *rk = &p->rank[r];
        if (G == 0) {
            assert_int_equal (rk->gpu_count, 0);
        } else if (T <= G) {
            assert_int_equal (rk->gpu_first,
                              r == 0 ? 0 : p->rank[r - 1].gpu_first + p->rank[r - 1].gpu_count);
            assert_in_range (rk->gpu_count, G / T, (G + T - 1) / T);
        } else {
            assert_int_equal (rk->gpu_count, 1);
            assert_true (r == 0 ? rk->gpu_first == 0
                                : rk->gpu_first - p->rank[r - 1].gpu_first <= 1
                                      && rk->gpu_first >= p->rank[r - 1].gpu_first);
        }
    }
    if (G > 0 && T <= G)
        assert_int_equal (p->rank[T - 1].gpu_first + p->rank[T - 1].gpu_count, G);
    if (G > 0 && T > G) {
        int count[DIST_GPUS_MAX] = {0};
        assert_int_equal (p->rank[T - 1].gpu_first, G - 1);
        for (r = 0; r < T; r++)
            count[p->rank[r].gpu_first]++;
        for (i = 0; i < G; i++)
            assert_in_range (count[i], T / G, (T + G - 1) / G);
    }
}

/* Rank r's CPUs: some, all of them the step's; its memory: the NUMA nodes of
 * its CPUs, by their OS numbers; no overlap with the ranks before it unless
 * there are more ranks than CPUs. */
static void check_rank_cpus (const struct machine *m, hwloc_const_cpuset_t allowed,
                             const struct dist_bind_plan *p, int r)
{
    const struct dist_bind_rank *rk = &p->rank[r];
    int W = hwloc_bitmap_weight (allowed), s;
    hwloc_bitmap_t ns;

    assert_false (hwloc_bitmap_iszero (rk->cpuset));
    assert_true (hwloc_bitmap_isincluded (rk->cpuset, allowed));
    ns = facts_nodeset (m, rk->cpuset);
    assert_true (hwloc_bitmap_isequal (ns, rk->nodeset));
    hwloc_bitmap_free (ns);
    for (s = 0; s < r && W >= p->ntasks; s++)
        assert_false (hwloc_bitmap_intersects (rk->cpuset, p->rank[s].cpuset));
}

/* CUDA_VISIBLE_DEVICES: its own GPU at LOCAL_RANK, every GPU once */
static void check_visible (const struct dist_bind_plan *p, int r)
{
    const struct dist_bind_rank *rk = &p->rank[r];
    int G = p->ngpus, i, n, vis[DIST_GPUS_MAX];
    bool seen[DIST_GPUS_MAX];

    if (G == 0) {
        assert_int_equal (dist_bind_visible (p, r, false, vis), 0);
        return;
    }
    n = dist_bind_visible (p, r, false, vis);
    assert_int_equal (n, G);
    assert_int_equal (vis[r % G], p->order[rk->gpu_first]);
    for (i = 0; i < rk->gpu_count; i++)
        assert_int_equal (vis[r % G + i], p->order[rk->gpu_first + i]);
    memset (seen, 0, sizeof (seen));
    for (i = 0; i < G; i++) {
        assert_in_range (vis[i], 0, G - 1);
        assert_false (seen[vis[i]]);
        seen[vis[i]] = true;
    }
    n = dist_bind_visible (p, r, true, vis);
    assert_int_equal (n, rk->gpu_count);
    for (i = 0; i < n; i++)
        assert_int_equal (vis[i], p->order[rk->gpu_first + i]);
}

/* Every rule of bind.h that holds for any plan, checked with the recorded
 * layout. */
static void check_plan (const struct machine *m, const struct dist_topo *t,
                        hwloc_const_cpuset_t allowed, const int *step_gpu,
                        const struct dist_bind_plan *p)
{
    int W = hwloc_bitmap_weight (allowed), r;

    check_gpu_order (m, t, step_gpu, p);
    check_gpu_shares (p);
    for (r = 0; r < p->ntasks; r++) {
        check_rank_cpus (m, allowed, p, r);
        check_visible (p, r);
    }
    if (W >= p->ntasks)
        assert_false (p->cpus_shared);
    else
        assert_true (p->cpus_shared);
    if (W < p->ntasks)
        check_even_share (allowed, p);
}

/* The NUMA node of all of a rank's GPUs, or -1 when they span several. */
static int rank_numa (const struct machine *m, const struct dist_topo *t, const int *step_gpu,
                      const struct dist_bind_plan *p, int r)
{
    const struct dist_bind_rank *rk = &p->rank[r];
    unsigned numa = gpu_numa (m, t, step_gpu[p->order[rk->gpu_first]]);
    int i;

    for (i = 1; i < rk->gpu_count; i++)
        if (gpu_numa (m, t, step_gpu[p->order[rk->gpu_first + i]]) != numa)
            return -1;
    return (int) numa;
}

/* The GPUs' NUMA node when it has a CPU of the step for each rank whose GPUs
 * are all there (a rank whose GPUs span NUMA nodes takes what is left near
 * them: bind.h). */
static void check_gpu_locality (const struct machine *m, const struct dist_topo *t,
                                hwloc_const_cpuset_t allowed, const int *step_gpu,
                                const struct dist_bind_plan *p)
{
    int r, s;

    for (r = 0; r < p->ntasks; r++) {
        int numa = rank_numa (m, t, step_gpu, p, r), n = 0;
        hwloc_bitmap_t pus;
        if (numa < 0)
            continue;
        pus = bitmap (numa_fact (m, (unsigned) numa)->pus);
        for (s = 0; s < p->ntasks; s++)
            if (rank_numa (m, t, step_gpu, p, s) == numa)
                n++;
        hwloc_bitmap_and (pus, pus, allowed);
        if (hwloc_bitmap_weight (pus) >= n)
            assert_true (hwloc_bitmap_isincluded (p->rank[r].cpuset, pus));
        hwloc_bitmap_free (pus);
    }
}

/* A NIC on the rank's NUMA node when the machine has one there. */
static void check_nics (const struct machine *m, const struct dist_topo *t, const int *step_gpu,
                        const struct dist_bind_plan *p)
{
    int r, i;

    for (r = 0; r < p->ntasks; r++) {
        const struct dist_bind_rank *rk = &p->rank[r];
        unsigned numa;
        bool here = false;
        if (m->nnics == 0) {
            assert_int_equal (rk->nic, -1);
            continue;
        }
        assert_in_range (rk->nic, 0, t->nnics - 1);
        if (rk->gpu_count > 0)
            numa = gpu_numa (m, t, step_gpu[p->order[rk->gpu_first]]);
        else if (hwloc_bitmap_weight (rk->nodeset) == 1)
            numa = (unsigned) hwloc_bitmap_first (rk->nodeset);
        else
            continue;
        for (i = 0; i < m->nnics; i++)
            here |= m->nic[i].numa == numa;
        for (i = 0; here && i < m->nnics; i++)
            if (strcmp (m->nic[i].name, t->nic[rk->nic].name) == 0)
                assert_int_equal (m->nic[i].numa, numa);
    }
}

/* Without GPUs: each rank on one NUMA node, in rank order, in proportion
 * to the step's CPUs there; with fewer ranks than NUMA nodes, the step's
 * CPUs divided among them in order, all of them used. */
static void check_cpu_only (const struct machine *m, hwloc_const_cpuset_t allowed,
                            const struct dist_bind_plan *p)
{
    int T = p->ntasks, W = hwloc_bitmap_weight (allowed), r, i, last = -1, nonempty = 0;

    for (i = 0; i < m->nnuma; i++) {
        hwloc_bitmap_t pus = bitmap (m->numa[i].pus);
        nonempty += hwloc_bitmap_intersects (pus, allowed);
        hwloc_bitmap_free (pus);
    }
    if (T < nonempty) {
        hwloc_bitmap_t all = hwloc_bitmap_alloc ();
        for (r = 0; r < T; r++) {
            hwloc_bitmap_or (all, all, p->rank[r].cpuset);
            if (r > 0)
                assert_true (hwloc_bitmap_first (p->rank[r].cpuset)
                                 > hwloc_bitmap_last (p->rank[r - 1].cpuset)
                             || hwloc_bitmap_first (p->rank[r].cpuset)
                                    > hwloc_bitmap_first (p->rank[r - 1].cpuset));
        }
        assert_true (hwloc_bitmap_isequal (all, allowed));
        hwloc_bitmap_free (all);
        return;
    }

    for (r = 0; r < T && W >= T; r++) {
        int k;
        assert_int_equal (hwloc_bitmap_weight (p->rank[r].nodeset), 1);
        k = numa_rank (m, (unsigned) hwloc_bitmap_first (p->rank[r].nodeset));
        assert_true (k >= last);
        last = k;
    }
    for (i = 0; i < m->nnuma; i++) {
        hwloc_bitmap_t pus = bitmap (m->numa[i].pus);
        int n = 0;
        hwloc_bitmap_and (pus, pus, allowed);
        for (r = 0; r < T; r++)
            if (hwloc_bitmap_isset (p->rank[r].nodeset, m->numa[i].os))
                n++;
        if (W >= T) {
            double share = (double) T * hwloc_bitmap_weight (pus) / W;
            assert_true (n >= share - 1.0 && n <= share + 1.0);
        }
        hwloc_bitmap_free (pus);
    }
}

/* A plan that holds to every rule of check_plan (). */
static void plan_checked (const struct machine *m, const struct dist_topo *t,
                          hwloc_const_cpuset_t allowed, const int *gpus, int ngpus, int ntasks,
                          struct dist_bind_plan *p)
{
    plan_ok (t, allowed, gpus, ngpus, ntasks, p);
    check_plan (m, t, allowed, gpus, p);
}

static void run_case (const struct machine *m, const struct dist_topo *t,
                      hwloc_const_cpuset_t allowed, const int *gpus, int ngpus, int ntasks)
{
    struct dist_bind_plan p;

    plan_checked (m, t, allowed, gpus, ngpus, ntasks, &p);
    if (ngpus > 0)
        check_gpu_locality (m, t, allowed, gpus, &p);
    else
        check_cpu_only (m, allowed, &p);
    check_nics (m, t, gpus, &p);
    dist_bind_plan_free (&p);
}

/* ---- per machine ------------------------------------------------------ */

/* The topology as hwloc reads it is the recorded machine. */
static void check_topology (const struct machine *m, const struct dist_topo *t)
{
    int i, k;

    assert_int_equal (hwloc_get_nbobjs_by_type (t->topo, HWLOC_OBJ_PU), m->npus);
    assert_int_equal (hwloc_get_nbobjs_by_type (t->topo, HWLOC_OBJ_NUMANODE), m->nnuma);
    assert_false (t->this_system);
    for (i = 0; i < m->nnuma; i++) {
        hwloc_obj_t numa = hwloc_get_obj_by_type (t->topo, HWLOC_OBJ_NUMANODE, (unsigned) i);
        hwloc_bitmap_t pus = bitmap (m->numa[i].pus);
        assert_int_equal (numa->os_index, m->numa[i].os);
        assert_true (hwloc_bitmap_isequal (numa->cpuset, pus));
        hwloc_bitmap_free (pus);
    }
    assert_int_equal (t->ngpus, m->ngpus);
    for (i = 0; i < m->ngpus; i++) {
        hwloc_bitmap_t pus = bitmap (numa_fact (m, m->gpu[i].numa)->pus);
        assert_string_equal (t->gpu[i].busid, m->gpu[i].name);
        assert_int_equal (dist_topo_find_gpu (t, m->gpu[i].name), i);
        assert_true (hwloc_bitmap_isequal (t->gpu[i].numa->cpuset, pus));
        hwloc_bitmap_free (pus);
    }
    assert_int_equal (t->nnics, m->nnics);
    for (i = 0; i < m->nnics; i++) {
        bool found = false;
        for (k = 0; k < t->nnics; k++) {
            if (strcmp (t->nic[k].name, m->nic[i].name) == 0) {
                hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj (t->topo, t->nic[k].pci);
                hwloc_bitmap_t pus = bitmap (numa_fact (m, m->nic[i].numa)->pus);
                assert_true (hwloc_bitmap_isincluded (anc->cpuset, pus));
                hwloc_bitmap_free (pus);
                found = true;
            }
        }
        assert_true (found);
    }
}

/* tasks = GPUs, half, double, a partial CPU allocation, a GPU subset, no
 * GPUs, and many CPU-only ranks. */
static void check_machine (const struct machine *m)
{
    struct dist_topo t;
    hwloc_bitmap_t all, part, want;
    int sub[DIST_GPUS_MAX], nsub;

    load (m, &t);
    check_topology (m, &t);
    all = hwloc_bitmap_dup (hwloc_topology_get_topology_cpuset (t.topo));
    part = hwloc_bitmap_alloc ();
    cores_pus (&t, m->cores, part);
    want = bitmap (m->cores_pus);
    assert_true (hwloc_bitmap_isequal (part, want));
    nsub = dist_parse_index_list (m->subset, sub, DIST_GPUS_MAX);
    assert_true (nsub > 0);

    run_case (m, &t, all, every_gpu, t.ngpus, t.ngpus);
    run_case (m, &t, all, every_gpu, t.ngpus, t.ngpus > 1 ? t.ngpus / 2 : 1);
    run_case (m, &t, all, every_gpu, t.ngpus, 2 * t.ngpus);
    run_case (m, &t, part, every_gpu, t.ngpus, t.ngpus);
    run_case (m, &t, part, every_gpu, t.ngpus, 2 * t.ngpus);
    run_case (m, &t, all, sub, nsub, nsub);
    run_case (m, &t, all, sub, nsub, 2 * nsub);
    run_case (m, &t, part, sub, nsub, nsub);
    run_case (m, &t, all, NULL, 0, 1);
    run_case (m, &t, all, NULL, 0, m->nnuma);
    run_case (m, &t, all, NULL, 0, 2 * m->nnuma + 1);
    run_case (m, &t, part, NULL, 0, 3);
    run_case (m, &t, all, NULL, 0, 256);

    hwloc_bitmap_free (all);
    hwloc_bitmap_free (part);
    hwloc_bitmap_free (want);
    dist_topo_destroy (&t);
}

/* One test a machine, the machine its state (named in main). */
static void test_machine (void **state)
{
    check_machine (*state);
}

/* ---- plans spelled out ------------------------------------------------ */

/* CPUs that all lie within a list's. */
static void assert_cpus_within (hwloc_const_cpuset_t got, const char *within)
{
    hwloc_bitmap_t w = bitmap (within);
    assert_true (hwloc_bitmap_isincluded (got, w));
    hwloc_bitmap_free (w);
}

/* The CPUs of ranks 0, 1, ... in order, as lists, up to a NULL. */
static void assert_rank_cpus (const struct dist_bind_plan *p, ...)
{
    const char *want;
    va_list ap;
    int r = 0;

    va_start (ap, p);
    while ((want = va_arg (ap, const char *)) != NULL)
        assert_cpus (p->rank[r++].cpuset, want);
    va_end (ap);
}

/* A plan on all the machine's CPUs. */
static void plan_all (const struct dist_topo *t, const int *gpus, int ngpus, int ntasks,
                      struct dist_bind_plan *p)
{
    plan_ok (t, hwloc_topology_get_topology_cpuset (t->topo), gpus, ngpus, ntasks, p);
}

/* The machine with every GPU the step's (every_gpu), planned for ntasks ranks
 * on all its CPUs: where most of the plans spelled out start. */
static void plan_whole (const struct machine *m, struct dist_topo *t, int ngpus, int ntasks,
                        struct dist_bind_plan *p)
{
    load (m, t);
    plan_all (t, every_gpu, ngpus, ntasks, p);
}

static void plan_done (struct dist_bind_plan *p, struct dist_topo *t)
{
    dist_bind_plan_free (p);
    dist_topo_destroy (t);
}

/* A plan, checked, on the PUs of Slurm's cores list only: a step given part of the machine. */
static void plan_on_cores (const struct machine *m, const struct dist_topo *t, const char *cores,
                           const int *gpus, int ngpus, int ntasks, struct dist_bind_plan *p)
{
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc ();

    cores_pus (t, cores, allowed);
    plan_checked (m, t, allowed, gpus, ngpus, ntasks, p);
    hwloc_bitmap_free (allowed);
}

/* GPU order is not NUMA order: rank r still lands on NUMA r, with the NIC
 * beside its GPU, and cudaSetDevice(LOCAL_RANK) on its own GPU. */
static void test_dgxa100_gpu_order (void **state)
{
    static const char *const want_gpu[] = {"0000:4e:00.0", "0000:47:00.0", "0000:0f:00.0",
                                           "0000:07:00.0", "0000:bd:00.0", "0000:b7:00.0",
                                           "0000:90:00.0", "0000:87:00.0"};
    static const char *const want_nic[] = {"mlx5_3", "mlx5_2", "mlx5_1", "mlx5_0",
                                           "mlx5_7", "mlx5_6", "mlx5_5", "mlx5_4"};
    struct dist_topo t;
    struct dist_bind_plan p;
    int vis[DIST_GPUS_MAX], r;
    char cpus[32];

    plan_whole (&dgxa100, &t, 8, 8, &p);
    for (r = 0; r < 8; r++) {
        const struct dist_bind_rank *rk = &p.rank[r];
        assert_string_equal (t.gpu[every_gpu[p.order[rk->gpu_first]]].busid, want_gpu[r]);
        snprintf (cpus, sizeof (cpus), "%d-%d", 32 * r, 32 * r + 31);
        assert_cpus (rk->cpuset, cpus);
        assert_int_equal (hwloc_bitmap_first (rk->nodeset), r);
        assert_int_equal (hwloc_bitmap_weight (rk->nodeset), 1);
        assert_string_equal (t.nic[rk->nic].name, want_nic[r]);
        assert_int_equal (dist_bind_visible (&p, r, false, vis), 8);
        assert_string_equal (t.gpu[every_gpu[vis[r]]].busid, want_gpu[r]);
    }
    plan_done (&p, &t);
}

/* Fewer ranks than GPUs: a rank's two GPUs lie on two NUMA nodes, and its
 * CPUs are those of both (the smallest place that holds its GPUs). */
static void test_dgxa100_two_gpus_per_rank (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;
    int r;
    char cpus[32], mems[16];

    plan_whole (&dgxa100, &t, 8, 4, &p);
    for (r = 0; r < 4; r++) {
        const struct dist_bind_rank *rk = &p.rank[r];
        assert_int_equal (rk->gpu_count, 2);
        snprintf (cpus, sizeof (cpus), "%d-%d", 64 * r, 64 * r + 63);
        assert_cpus (rk->cpuset, cpus);
        snprintf (mems, sizeof (mems), "%d-%d", 2 * r, 2 * r + 1);
        assert_cpus (rk->nodeset, mems);
    }
    dist_bind_plan_free (&p);
    /* one rank drives all eight GPUs: the whole machine */
    plan_all (&t, every_gpu, 8, 1, &p);
    assert_cpus (p.rank[0].cpuset, "0-255");
    plan_done (&p, &t);
}

/* NUMA 0 has room for one rank only: the others of its package take
 * NUMA 1, never the other package. */
static void test_dgxa100_package_fallback (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc ();
    int gpu[] = {3}, r; /* 0000:4e:00.0, on NUMA 0 */

    load (&dgxa100, &t);
    cores_pus (&t, "0,16-31,64-79", allowed);
    assert_cpus (allowed, "0-1,32-63,128-159");
    plan_checked (&dgxa100, &t, allowed, gpu, 1, 4, &p);
    for (r = 0; r < 4; r++)
        assert_cpus_within (p.rank[r].cpuset, "0-127");
    hwloc_bitmap_free (allowed);
    plan_done (&p, &t);
}

/* 1 GPU on NUMA 0, 2 on NUMA 1: the lone GPU's rank has its socket. */
static void test_32em64t_asymmetric (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;

    plan_whole (&e5_3gpu, &t, 3, 3, &p);
    assert_string_equal (t.gpu[p.order[0]].busid, "0000:03:00.0");
    assert_rank_cpus (&p, "0-7,16-23", "8-11,24-27", "12-15,28-31", NULL);
    assert_string_equal (t.nic[p.rank[1].nic].name, "mlx5_0");
    dist_bind_plan_free (&p);
    /* half: one rank on the lone GPU, the other on the pair */
    plan_all (&t, every_gpu, 3, 2, &p);
    assert_int_equal (p.rank[0].gpu_count, 1);
    assert_int_equal (p.rank[1].gpu_count, 2);
    assert_rank_cpus (&p, "0-7,16-23", "8-15,24-31", NULL);
    plan_done (&p, &t);
}

/* Both GPUs on NUMA 0: the ranks divide NUMA 0, and when the step has only
 * socket 1's cores they still get CPUs (the step's, not the GPUs'). */
static void test_cts1_pascal_one_socket (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;

    plan_whole (&pascal, &t, 2, 2, &p);
    assert_rank_cpus (&p, "0-8,36-44", "9-17,45-53", NULL);
    assert_cpus (p.rank[0].nodeset, "0");
    assert_cpus (p.rank[1].nodeset, "0");
    assert_string_equal (t.nic[p.rank[1].nic].name, "mlx5_0");
    dist_bind_plan_free (&p);
    plan_on_cores (&pascal, &t, "18-35", every_gpu, 2, 4, &p);
    assert_cpus (p.rank[3].nodeset, "1");
    plan_done (&p, &t);
}

/* POWER: NUMA nodes P#0 and P#8, PCI domains 0004 and 0035. */
static void test_coral_lassen_numa8 (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;

    plan_whole (&lassen, &t, 4, 4, &p);
    assert_cpus (p.rank[0].nodeset, "0");
    assert_cpus (p.rank[2].nodeset, "8");
    assert_cpus (p.rank[2].cpuset, "96-135");
    assert_string_equal (t.gpu[every_gpu[p.order[p.rank[3].gpu_first]]].busid, "0035:04:00.0");
    /* two NICs as near as each other to both GPUs of a socket: one each */
    assert_string_equal (t.nic[p.rank[0].nic].name, "mlx5_0");
    assert_string_equal (t.nic[p.rank[1].nic].name, "mlx5_1");
    assert_string_equal (t.nic[p.rank[2].nic].name, "mlx5_2");
    assert_string_equal (t.nic[p.rank[3].nic].name, "mlx5_3");
    plan_done (&p, &t);
}

/* 16 GPUs on a topology trimmed to 4 PUs: neighbours share, per socket. */
static void test_dgx2_more_ranks_than_cpus (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;
    int r;

    plan_whole (&dgx2, &t, 16, 16, &p);
    assert_true (p.cpus_shared);
    for (r = 0; r < 16; r++)
        assert_cpus_within (p.rank[r].cpuset, r < 8 ? "0-1" : "24-25");
    plan_done (&p, &t);
}

/* Regression: three ranks whose GPUs are on NUMA node 0 and one on NUMA
 * node 1, on the two PUs of the test cluster's topology: the three shared
 * PU 0 while PU 1 ran one rank.  Shared evenly: two ranks on each. */
static void test_mini_more_ranks_than_cpus_evenly (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;
    hwloc_bitmap_t allowed = bitmap ("0-1");
    int gpus[] = {0, 1, 2};

    load (&mini, &t);
    plan_checked (&mini, &t, allowed, gpus, 3, 4, &p);
    assert_true (p.cpus_shared);
    /* in locality order: the first two ranks near GPUs 0-1 on PU 0 */
    assert_rank_cpus (&p, "0", "0", "1", "1", NULL);
    assert_cpus (p.rank[3].nodeset, "1");
    dist_bind_plan_free (&p);
    /* 5 ranks on 2 PUs: 3 and 2 */
    plan_checked (&mini, &t, allowed, NULL, 0, 5, &p);
    hwloc_bitmap_free (allowed);
    plan_done (&p, &t);
}

/* A node that slurm.conf describes with 8 CPUs on a machine of 2: Slurm's
 * cores 0 and 4 are one core here, and core 4 is named as missing (the
 * plugin then plans on the CPUs slurmstepd may use: spank/bind.c). */
static void test_mini_cores_the_machine_lacks (void **state)
{
    struct dist_topo t;
    hwloc_bitmap_t out = hwloc_bitmap_alloc (), missing = hwloc_bitmap_alloc ();
    char err[256];

    load (&mini, &t);
    assert_int_equal (dist_topo_core_count (&t), 2);
    assert_int_equal (dist_topo_cores_cpuset (&t, "0,4", out, missing, err, sizeof (err)), 1);
    assert_cpus (out, "0");
    assert_cpus (missing, "4");
    assert_int_equal (dist_topo_cores_cpuset (&t, "2-7", out, missing, err, sizeof (err)), 6);
    assert_true (hwloc_bitmap_iszero (out));
    assert_cpus (missing, "2-7");
    hwloc_bitmap_free (out);
    hwloc_bitmap_free (missing);
    dist_topo_destroy (&t);
}

/* Regression: ranks whose GPU's socket has no CPUs of the step took the
 * whole step's CPUs, on top of the ranks already placed there. */
static void test_g4dn_homeless_ranks_do_not_overlap (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;

    load (&g4dn, &t);
    plan_on_cores (&g4dn, &t, "0-23", every_gpu, 8, 8, &p);
    dist_bind_plan_free (&p);
    /* 6 PUs near GPUs 0-3 for 8 ranks, 48 near GPUs 4-7 */
    plan_on_cores (&g4dn, &t, "0-2,24-47", every_gpu, 8, 16, &p);
    assert_cpus (p.rank[0].cpuset, "0");
    plan_done (&p, &t);
}

/* Random steps (cores, GPU subsets in any order, 1 to 3G+1 tasks) on every
 * machine, with a fixed seed: every rule that holds for any plan. */
static void random_steps (const struct machine *m, unsigned seed, int steps)
{
    struct dist_topo t;
    int ncores, k;

    load (m, &t);
    ncores = hwloc_get_nbobjs_by_type (t.topo, HWLOC_OBJ_CORE);
    for (k = 0; k < steps; k++) {
        hwloc_bitmap_t allowed = hwloc_bitmap_alloc ();
        int gpus[DIST_GPUS_MAX], ngpus = 0, ntasks, i, c;

        /* a core list: some cores, at least one */
        for (c = 0; c < ncores; c++) {
            hwloc_obj_t core = hwloc_get_obj_by_type (t.topo, HWLOC_OBJ_CORE, (unsigned) c);
            if (rand_r (&seed) % 4 != 0)
                hwloc_bitmap_or (allowed, allowed, core->cpuset);
        }
        if (hwloc_bitmap_iszero (allowed))
            cores_pus (&t, "0", allowed);
        /* the step's GPUs: a random subset, in a random order */
        for (i = 0; i < t.ngpus; i++)
            if (rand_r (&seed) % 3 != 0)
                gpus[ngpus++] = i;
        for (i = ngpus - 1; i > 0; i--) {
            int j = (int) (rand_r (&seed) % (unsigned) (i + 1)), tmp = gpus[i];
            gpus[i] = gpus[j];
            gpus[j] = tmp;
        }
        ntasks = 1 + (int) (rand_r (&seed) % (unsigned) (3 * (ngpus > 0 ? ngpus : 4) + 1));
        run_case (m, &t, allowed, gpus, ngpus, ntasks);
        hwloc_bitmap_free (allowed);
    }
    dist_topo_destroy (&t);
}

static void test_random_steps (void **state)
{
    const struct machine *all[] = {&dgx2, &e5_3gpu, &g4dn, &lassen, &pascal, &dgxa100, &amd, &mini};
    size_t i;

    for (i = 0; i < sizeof (all) / sizeof (all[0]); i++)
        random_steps (all[i], 4 + (unsigned) i, 150);
}

/* ---- bad input -------------------------------------------------------- */

static void test_step_gpus_the_topology_lacks (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;
    hwloc_bitmap_t allowed;
    int missing[] = {0, 8}, twice[] = {1, 1}, negative[] = {-1}, ok[] = {0};
    char err[256] = "";

    load (&g4dn, &t);
    allowed = hwloc_bitmap_dup (hwloc_topology_get_topology_cpuset (t.topo));
    assert_int_equal (dist_bind_plan (&t, allowed, missing, 2, 2, &p, err, sizeof (err)), -1);
    assert_non_null (strstr (err, "GPU 8"));
    assert_null (p.rank);
    assert_int_equal (dist_bind_plan (&t, allowed, twice, 2, 2, &p, err, sizeof (err)), -1);
    assert_non_null (strstr (err, "GPU 1"));
    assert_int_equal (dist_bind_plan (&t, allowed, negative, 1, 1, &p, err, sizeof (err)), -1);
    assert_non_null (strstr (err, "GPU -1"));
    assert_int_equal (dist_bind_plan (&t, allowed, ok, 1, 0, &p, err, sizeof (err)), -1);
    assert_int_equal (
        dist_bind_plan (&t, allowed, ok, 1, DIST_LOCAL_TASKS_MAX + 1, &p, err, sizeof (err)), -1);
    assert_int_equal (dist_bind_plan (&t, allowed, ok, DIST_GPUS_MAX + 1, 1, &p, err, sizeof (err)),
                      -1);
    hwloc_bitmap_only (allowed, 4000); /* no such PU */
    err[0] = '\0';
    assert_int_equal (dist_bind_plan (&t, allowed, ok, 1, 1, &p, err, sizeof (err)), -1);
    assert_true (err[0] != '\0');
    hwloc_bitmap_free (allowed);
    dist_topo_destroy (&t);
}

/* The largest plan the planner takes, on the largest machine. */
static void test_most_tasks (void **state)
{
    struct dist_topo t;
    struct dist_bind_plan p;

    plan_whole (&dgxa100, &t, 8, DIST_LOCAL_TASKS_MAX, &p);
    check_plan (&dgxa100, &t, hwloc_topology_get_topology_cpuset (t.topo), every_gpu, &p);
    plan_done (&p, &t);
}

static void write_file (const char *path, const char *data, size_t len)
{
    FILE *f = fopen (path, "w");
    assert_non_null (f);
    assert_int_equal (fwrite (data, 1, len, f), len);
    assert_int_equal (fclose (f), 0);
}

static void test_broken_xml (void **state)
{
    char path[1024], tmp[] = "/tmp/test_bind.XXXXXX", file[64], err[256];
    static char xml[200000];
    struct dist_topo t;
    size_t len;
    FILE *f;

    topology_path (pascal.file, path, sizeof (path));
    f = fopen (path, "r");
    assert_non_null (f);
    len = fread (xml, 1, sizeof (xml), f);
    fclose (f);
    assert_true (len > 1000);
    assert_non_null (mkdtemp (tmp));
    snprintf (file, sizeof (file), "%s/broken.xml", tmp);

    write_file (file, xml, len / 2); /* truncated */
    err[0] = '\0';
    assert_int_equal (dist_topo_load (&t, file, DIST_TOPO_IO, err, sizeof (err)), -1);
    assert_non_null (strstr (err, file));
    assert_null (t.topo);
    write_file (file, "", 0); /* empty */
    err[0] = '\0';
    assert_int_equal (dist_topo_load (&t, file, DIST_TOPO_IO, err, sizeof (err)), -1);
    assert_true (err[0] != '\0');
    write_file (file, "<topology>", 10); /* not hwloc's */
    err[0] = '\0';
    assert_int_equal (dist_topo_load (&t, file, DIST_TOPO_IO, err, sizeof (err)), -1);
    assert_true (err[0] != '\0');
    assert_int_equal (unlink (file), 0); /* missing */
    err[0] = '\0';
    assert_int_equal (dist_topo_load (&t, file, DIST_TOPO_IO, err, sizeof (err)), -1);
    assert_non_null (strstr (err, file));
    assert_int_equal (rmdir (tmp), 0);
}

/* A device in a sysfs-like directory: DIR/NAME/vendor and DIR/NAME/class. */
static void pci_device (const char *dir, const char *name, const char *vendor, const char *cls)
{
    char path[1024];

    snprintf (path, sizeof (path), "%s/%s", dir, name);
    assert_int_equal (mkdir (path, 0755), 0);
    snprintf (path, sizeof (path), "%s/%s/vendor", dir, name);
    write_file (path, vendor, strlen (vendor));
    snprintf (path, sizeof (path), "%s/%s/class", dir, name);
    write_file (path, cls, strlen (cls));
}

static void pci_device_gone (const char *dir, const char *name)
{
    char path[1024];

    snprintf (path, sizeof (path), "%s/%s/vendor", dir, name);
    assert_int_equal (unlink (path), 0);
    snprintf (path, sizeof (path), "%s/%s/class", dir, name);
    assert_int_equal (unlink (path), 0);
    snprintf (path, sizeof (path), "%s/%s", dir, name);
    assert_int_equal (rmdir (path), 0);
}

/* GPUs are what hwloc's devices are taken for: NVIDIA's, of the VGA or 3D class;
 * not the BMC's graphics, not an NVSwitch, not a file that does not parse. */
static void test_pci_has_gpu (void **state)
{
    char tmp[] = "/tmp/test_bind_pci.XXXXXX", gone[1100];

    (void) state;
    assert_non_null (mkdtemp (tmp));
    snprintf (gone, sizeof (gone), "%s/none", tmp);
    assert_false (dist_pci_has_gpu (gone));
    assert_false (dist_pci_has_gpu (tmp));
    pci_device (tmp, "0000:00:00.0", "0x8086\n", "0x060000\n");
    pci_device (tmp, "0000:02:00.0", "0x102b\n", "0x030000\n"); /* BMC graphics */
    pci_device (tmp, "0000:c1:00.0", "0x10de\n", "0x068000\n"); /* NVSwitch */
    pci_device (tmp, "0000:c2:00.0", "0x10dez\n", "0x030200\n"); /* not a number */
    pci_device (tmp, "0000:c3:00.0", "0x10de\n", "0x0302"); /* class cut short */
    assert_false (dist_pci_has_gpu (tmp));
    pci_device (tmp, "0000:07:00.0", "0x10de\n", "0x030200\n"); /* a 3D controller */
    assert_true (dist_pci_has_gpu (tmp));
    pci_device_gone (tmp, "0000:07:00.0");
    pci_device (tmp, "0000:08:00.0", "0x10de", "0x030000"); /* VGA, no newline */
    assert_true (dist_pci_has_gpu (tmp));
    pci_device_gone (tmp, "0000:08:00.0");
    assert_false (dist_pci_has_gpu (tmp));
    pci_device_gone (tmp, "0000:00:00.0");
    pci_device_gone (tmp, "0000:02:00.0");
    pci_device_gone (tmp, "0000:c1:00.0");
    pci_device_gone (tmp, "0000:c2:00.0");
    pci_device_gone (tmp, "0000:c3:00.0");
    assert_int_equal (rmdir (tmp), 0);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
#define MACHINE_TEST(test, m)                                                                      \
    {.name = #test, .test_func = test_machine, .initial_state = (void *) &(m)}
        MACHINE_TEST (test_nvidia_dgx2, dgx2),
        MACHINE_TEST (test_32em64t, e5_3gpu),
        MACHINE_TEST (test_g4dnmetal, g4dn),
        MACHINE_TEST (test_coral_lassen, lassen),
        MACHINE_TEST (test_cts1_pascal, pascal),
        MACHINE_TEST (test_dgxa100_like, dgxa100),
        MACHINE_TEST (test_amd_like, amd),
        MACHINE_TEST (test_minicluster, mini),
        cmocka_unit_test (test_dgxa100_gpu_order),
        cmocka_unit_test (test_dgxa100_package_fallback),
        cmocka_unit_test (test_dgxa100_two_gpus_per_rank),
        cmocka_unit_test (test_32em64t_asymmetric),
        cmocka_unit_test (test_cts1_pascal_one_socket),
        cmocka_unit_test (test_coral_lassen_numa8),
        cmocka_unit_test (test_dgx2_more_ranks_than_cpus),
        cmocka_unit_test (test_g4dn_homeless_ranks_do_not_overlap),
        cmocka_unit_test (test_random_steps),
        cmocka_unit_test (test_step_gpus_the_topology_lacks),
        cmocka_unit_test (test_most_tasks),
        cmocka_unit_test (test_broken_xml),
        cmocka_unit_test (test_pci_has_gpu),
        cmocka_unit_test (test_mini_more_ranks_than_cpus_evenly),
        cmocka_unit_test (test_mini_cores_the_machine_lacks),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
