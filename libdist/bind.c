/* bind.c - compute each local rank's GPUs, CPUs, NUMA nodes and NIC. */
#define _GNU_SOURCE /* qsort_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "ranges.h"

#define TREE_DEPTH_MAX 128

/* ---- GPUs ------------------------------------------------------------- */

struct gpu_key {
    int pos; /* position in Slurm's list */
    int first_pu; /* first PU of its NUMA locality */
    const char *busid;
};

static int compare_keys (const void *a, const void *b)
{
    const struct gpu_key *x = a, *y = b;

    if (x->first_pu != y->first_pu)
        return x->first_pu < y->first_pu ? -1 : 1;
    return strcmp (x->busid, y->busid);
}

static void order_gpus (const struct dist_topo *t, const int *step_gpu, struct dist_bind_plan *plan)
{
    struct gpu_key keys[DIST_GPUS_MAX];
    int i;

    for (i = 0; i < plan->ngpus; i++) {
        const struct dist_gpu *g = &t->gpu[step_gpu[i]];
        keys[i].pos = i;
        keys[i].first_pu = hwloc_bitmap_first (g->numa->cpuset);
        keys[i].busid = g->busid;
    }
    qsort (keys, (size_t) plan->ngpus, sizeof (keys[0]), compare_keys);
    for (i = 0; i < plan->ngpus; i++)
        plan->order[i] = keys[i].pos;
}

static void assign_gpus (struct dist_bind_plan *plan)
{
    long T = plan->ntasks, G = plan->ngpus;
    long r;

    for (r = 0; r < T; r++) {
        struct dist_bind_rank *rk = &plan->rank[r];
        if (G == 0) {
            rk->gpu_first = -1;
            rk->gpu_count = 0;
        } else if (T <= G) {
            rk->gpu_first = (int) (r * G / T);
            rk->gpu_count = (int) ((r + 1) * G / T) - rk->gpu_first;
        } else {
            rk->gpu_first = (int) (r * G / T);
            rk->gpu_count = 1;
        }
    }
}

/* ---- CPUs ------------------------------------------------------------- */

struct locality {
    hwloc_obj_t loc; /* NUMA locality object */
    hwloc_obj_t pkg;
};

/* Without GPUs: rank r goes to the NUMA node holding the middle of its
 * share of the step's CPUs, so ranks fill NUMA nodes in order. */
static void spread_over_numa (const struct dist_topo *t, hwloc_const_cpuset_t allowed, int ntasks,
                              struct locality *where)
{
    int nnuma = hwloc_get_nbobjs_by_type (t->topo, HWLOC_OBJ_NUMANODE);
    hwloc_bitmap_t tmp = hwloc_bitmap_alloc ();
    long total = 0, r;
    int i, nonempty = 0;

    for (i = 0; i < nnuma; i++) {
        hwloc_obj_t numa = hwloc_get_obj_by_type (t->topo, HWLOC_OBJ_NUMANODE, (unsigned) i);
        hwloc_bitmap_and (tmp, allowed, numa->cpuset);
        total += hwloc_bitmap_weight (tmp);
        nonempty += !hwloc_bitmap_iszero (tmp);
    }
    /* Fewer ranks than NUMA nodes: one place for all, divided in order, so
     * that a lone rank keeps the whole step and not one NUMA node of it. */
    if (ntasks < nonempty)
        total = 0;
    for (r = 0; r < ntasks; r++) {
        long target = (2 * r + 1) * total / (2L * ntasks), seen = 0;
        where[r].loc = hwloc_get_root_obj (t->topo);
        for (i = 0; i < nnuma && total > 0; i++) {
            hwloc_obj_t numa = hwloc_get_obj_by_type (t->topo, HWLOC_OBJ_NUMANODE, (unsigned) i);
            hwloc_bitmap_and (tmp, allowed, numa->cpuset);
            seen += hwloc_bitmap_weight (tmp);
            if (target < seen) {
                where[r].loc = numa->parent;
                break;
            }
        }
        where[r].pkg = where[r].loc;
        while (where[r].pkg->parent != NULL && where[r].pkg->type != HWLOC_OBJ_PACKAGE)
            where[r].pkg = where[r].pkg->parent;
        if (where[r].pkg->type != HWLOC_OBJ_PACKAGE)
            where[r].pkg = hwloc_get_root_obj (t->topo);
    }
    hwloc_bitmap_free (tmp);
}

/* Divide pool among ranks[0..n), n <= its PUs: whole cores when there are
 * enough, else PUs. */
static void split_pool (const struct dist_topo *t, hwloc_const_cpuset_t pool, const int *ranks,
                        int n, struct dist_bind_plan *plan)
{
    int ncores = hwloc_get_nbobjs_by_type (t->topo, HWLOC_OBJ_CORE);
    int npus = hwloc_bitmap_weight (pool);
    hwloc_obj_t *cores = NULL;
    int c = 0, i, k;

    if (ncores > 0 && (cores = calloc ((size_t) ncores, sizeof (*cores))) != NULL) {
        for (i = 0; i < ncores; i++) {
            hwloc_obj_t core = hwloc_get_obj_by_type (t->topo, HWLOC_OBJ_CORE, (unsigned) i);
            if (hwloc_bitmap_intersects (core->cpuset, pool))
                cores[c++] = core;
        }
    }
    if (c >= n) {
        for (i = 0; i < n; i++) {
            hwloc_bitmap_t set = plan->rank[ranks[i]].cpuset;
            hwloc_bitmap_zero (set);
            for (k = (int) ((long) i * c / n); k < (int) ((long) (i + 1) * c / n); k++)
                hwloc_bitmap_or (set, set, cores[k]->cpuset);
            hwloc_bitmap_and (set, set, pool);
        }
        free (cores);
        return;
    }
    free (cores);
    for (i = 0; i < n; i++) {
        hwloc_bitmap_t set = plan->rank[ranks[i]].cpuset;
        int lo = (int) ((long) i * npus / n), hi = (int) ((long) (i + 1) * npus / n);
        int idx = 0, pu;
        hwloc_bitmap_zero (set);
        hwloc_bitmap_foreach_begin (pu, pool)
        {
            if (idx >= lo && idx < hi)
                hwloc_bitmap_set (set, (unsigned) pu);
            idx++;
        }
        hwloc_bitmap_foreach_end ();
    }
}

/* For qsort: ranks by the first PU (logical order) of their place, then
 * by rank. */
struct rank_key {
    int rank;
    unsigned first;
};

static int compare_rank_keys (const void *a, const void *b)
{
    const struct rank_key *x = a, *y = b;

    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* More ranks than CPUs: one PU each, dealt out evenly.  The step's PUs in
 * hwloc's logical order (a core's PUs, then its neighbours') and the ranks
 * in the order of their places: the k-th rank gets PU k*C/T, so every PU
 * has T/C ranks, rounded down or up, and no rank shares a PU while another
 * of the step's has none.  Ranks near each other share, as near their GPUs
 * as an even share allows. */
static int share_evenly (const struct dist_topo *t, hwloc_const_cpuset_t allowed,
                         const struct locality *where, struct dist_bind_plan *plan)
{
    int T = plan->ntasks, C = hwloc_bitmap_weight (allowed), k = 0, r;
    hwloc_obj_t *pus = calloc ((size_t) C, sizeof (*pus));
    struct rank_key *key = calloc ((size_t) T, sizeof (*key));
    hwloc_obj_t pu = NULL;

    if (pus == NULL || key == NULL) {
        free (pus);
        free (key);
        return -1;
    }
    while (k < C
           && (pu = hwloc_get_next_obj_inside_cpuset_by_type (t->topo, allowed, HWLOC_OBJ_PU, pu))
                  != NULL)
        pus[k++] = pu;
    C = k;
    for (r = 0; r < T; r++) {
        hwloc_obj_t first = hwloc_get_next_obj_inside_cpuset_by_type (t->topo, where[r].loc->cpuset,
                                                                      HWLOC_OBJ_PU, NULL);
        key[r].rank = r;
        key[r].first = first != NULL ? first->logical_index : 0;
    }
    qsort (key, (size_t) T, sizeof (*key), compare_rank_keys);
    for (k = 0; k < T && C > 0; k++) {
        hwloc_bitmap_t set = plan->rank[key[k].rank].cpuset;
        hwloc_bitmap_only (set, pus[(long) k * C / T]->os_index);
    }
    plan->cpus_shared = true;
    free (pus);
    free (key);
    return 0;
}

/* A pool of the step's CPUs and the ranks that divide it. */
struct cpu_group {
    hwloc_bitmap_t pool;
    int n;
};

static int new_group (struct cpu_group *group, int *ngroups, hwloc_const_cpuset_t pool)
{
    group[*ngroups].pool = hwloc_bitmap_dup (pool);
    group[*ngroups].n = 0;
    return group[*ngroups].pool != NULL ? (*ngroups)++ : -1;
}

/* Where a homeless rank takes a CPU when the step has one for every rank
 * but not where its GPU is: from the group with the most to spare, near
 * its locality first, then its package, then anywhere. */
static int group_with_room (const struct cpu_group *group, int ngroups,
                            const struct locality *where)
{
    int best = -1, best_near = -1, best_spare = 0, i;

    for (i = 0; i < ngroups; i++) {
        int spare = hwloc_bitmap_weight (group[i].pool) - group[i].n;
        int near = hwloc_bitmap_intersects (group[i].pool, where->loc->cpuset)   ? 2
                   : hwloc_bitmap_intersects (group[i].pool, where->pkg->cpuset) ? 1
                                                                                 : 0;
        if (spare < 1)
            continue;
        if (near > best_near || (near == best_near && spare > best_spare)) {
            best = i;
            best_near = near;
            best_spare = spare;
        }
    }
    return best;
}

/* For qsort_r: ranks by the size of their place, then by rank. */
static int compare_places (const void *a, const void *b, void *arg)
{
    const struct locality *where = arg;
    int x = *(const int *) a, y = *(const int *) b;
    int wx = hwloc_bitmap_weight (where[x].loc->cpuset);
    int wy = hwloc_bitmap_weight (where[y].loc->cpuset);

    if (wx != wy)
        return wx < wy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The state the phases of assign_cpus share: which group each rank takes its
 * CPUs from, the groups so far, and the step's CPUs they hold. */
struct placement {
    const struct dist_topo *t;
    hwloc_const_cpuset_t allowed;
    const struct locality *where;
    struct dist_bind_plan *plan;
    int T;
    int *group_of; /* a rank's group, -1 while it has none */
    int *scratch; /* ranks: narrow places first, then one group's */
    struct cpu_group *group;
    int ngroups;
    hwloc_bitmap_t used; /* the CPUs the groups hold */
    hwloc_bitmap_t pool;
};

static int placement_init (struct placement *pl, const struct dist_topo *t,
                           hwloc_const_cpuset_t allowed, const struct locality *where,
                           struct dist_bind_plan *plan)
{
    pl->t = t;
    pl->allowed = allowed;
    pl->where = where;
    pl->plan = plan;
    pl->T = plan->ntasks;
    pl->group_of = calloc ((size_t) pl->T, sizeof (int));
    pl->scratch = calloc ((size_t) pl->T, sizeof (int));
    pl->group = calloc ((size_t) pl->T + 1, sizeof (*pl->group));
    pl->ngroups = 0;
    pl->used = hwloc_bitmap_alloc ();
    pl->pool = hwloc_bitmap_alloc ();
    if (pl->group_of == NULL || pl->scratch == NULL || pl->group == NULL || pl->used == NULL
        || pl->pool == NULL)
        return -1;
    return 0;
}

static void placement_free (struct placement *pl)
{
    int i;

    if (pl->group != NULL)
        for (i = 0; i < pl->ngroups; i++)
            hwloc_bitmap_free (pl->group[i].pool);
    free (pl->group);
    free (pl->group_of);
    free (pl->scratch);
    hwloc_bitmap_free (pl->used);
    hwloc_bitmap_free (pl->pool);
}

/* A rank's place at a level: 0 its NUMA locality, 1 its package. */
static hwloc_obj_t place_at (const struct locality *where, int level)
{
    return level == 0 ? where->loc : where->pkg;
}

/* The ranks without a group whose place at level is obj: a group of obj's
 * CPUs that no group holds yet, for all of them or for none. */
static void place_together (struct placement *pl, int level, hwloc_obj_t obj)
{
    int r, n = 0, g;

    for (r = 0; r < pl->T; r++)
        if (pl->group_of[r] < 0 && place_at (&pl->where[r], level) == obj)
            n++;
    hwloc_bitmap_and (pl->pool, pl->allowed, obj->cpuset);
    hwloc_bitmap_andnot (pl->pool, pl->pool, pl->used);
    if (hwloc_bitmap_weight (pl->pool) < n
        || (g = new_group (pl->group, &pl->ngroups, pl->pool)) < 0)
        return;
    for (r = 0; r < pl->T; r++)
        if (pl->group_of[r] < 0 && place_at (&pl->where[r], level) == obj) {
            pl->group_of[r] = g;
            pl->group[g].n++;
        }
    hwloc_bitmap_or (pl->used, pl->used, pl->pool);
}

/* 1. the NUMA locality, 2. the package: in the order ranks name them, all
 * the ranks of one place or none of them.  Narrow places first: a rank
 * whose GPUs span NUMA nodes must not take a whole package before the
 * ranks of one NUMA node there are placed. */
static void place_near (struct placement *pl)
{
    int r, k, level;

    for (r = 0; r < pl->T; r++) {
        pl->group_of[r] = -1;
        pl->scratch[r] = r;
    }
    qsort_r (pl->scratch, (size_t) pl->T, sizeof (int), compare_places, (void *) pl->where);
    for (level = 0; level < 2; level++)
        for (k = 0; k < pl->T; k++) {
            int s = pl->scratch[k];
            if (pl->group_of[s] < 0)
                place_together (pl, level, place_at (&pl->where[s], level));
        }
}

/* 3. the rest take what the step has left, and what the others spare */
static int place_homeless (struct placement *pl)
{
    int r, homeless = 0;

    for (r = 0; r < pl->T; r++)
        if (pl->group_of[r] < 0)
            homeless++;
    hwloc_bitmap_andnot (pl->pool, pl->allowed, pl->used);
    if (homeless == 0)
        return 0;
    if (!hwloc_bitmap_iszero (pl->pool) && new_group (pl->group, &pl->ngroups, pl->pool) < 0)
        return -1;
    for (r = 0; r < pl->T; r++) {
        if (pl->group_of[r] >= 0)
            continue;
        pl->group_of[r] = group_with_room (pl->group, pl->ngroups, &pl->where[r]);
        pl->group[pl->group_of[r]].n++;
    }
    return 0;
}

/* Each group's pool divided among its ranks. */
static void divide_groups (struct placement *pl)
{
    int i, r, n;

    for (i = 0; i < pl->ngroups; i++) {
        n = 0;
        for (r = 0; r < pl->T; r++)
            if (pl->group_of[r] == i)
                pl->scratch[n++] = r;
        if (n > 0)
            split_pool (pl->t, pl->group[i].pool, pl->scratch, n, pl->plan);
    }
}

/* Decide which pool each rank takes its CPUs from, then divide each pool
 * among its ranks.  A pool is given whole to the ranks placed in it, so
 * ranks that find no room near their GPU are fitted afterwards into what
 * the others can spare.  With fewer CPUs than ranks, the ranks share them
 * evenly instead. */
static int assign_cpus (const struct dist_topo *t, hwloc_const_cpuset_t allowed,
                        const struct locality *where, struct dist_bind_plan *plan)
{
    struct placement pl;
    int r, rv = -1;

    if (placement_init (&pl, t, allowed, where, plan) < 0)
        goto out;
    if (hwloc_bitmap_weight (allowed) < plan->ntasks) {
        if (share_evenly (t, allowed, where, plan) < 0)
            goto out;
    } else {
        place_near (&pl);
        if (place_homeless (&pl) < 0)
            goto out;
        divide_groups (&pl);
    }
    for (r = 0; r < plan->ntasks; r++)
        hwloc_cpuset_to_nodeset (t->topo, plan->rank[r].cpuset, plan->rank[r].nodeset);
    rv = 0;
out:
    placement_free (&pl);
    return rv;
}

/* ---- NICs ------------------------------------------------------------- */

/* Edges between two objects of the tree (I/O objects included). */
static int hops (hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t up[TREE_DEPTH_MAX];
    int na = 0, i, k = 0;

    for (; a != NULL && na < TREE_DEPTH_MAX; a = a->parent)
        up[na++] = a;
    for (; b != NULL; b = b->parent, k++)
        for (i = 0; i < na; i++)
            if (up[i] == b)
                return i + k;
    return 2 * TREE_DEPTH_MAX;
}

static void assign_nics (const struct dist_topo *t, const int *step_gpu,
                         const struct locality *where, struct dist_bind_plan *plan)
{
    int used[DIST_NICS_MAX] = {0};
    int r, i;

    for (r = 0; r < plan->ntasks; r++) {
        struct dist_bind_rank *rk = &plan->rank[r];
        hwloc_obj_t ref =
            rk->gpu_count > 0 ? t->gpu[step_gpu[plan->order[rk->gpu_first]]].pci : where[r].loc;
        int best = -1, best_hops = 0;
        for (i = 0; i < t->nnics; i++) {
            int h = hops (ref, t->nic[i].pci);
            if (best < 0 || h < best_hops || (h == best_hops && used[i] < used[best])) {
                best = i;
                best_hops = h;
            }
        }
        rk->nic = best;
        if (best >= 0)
            used[best]++;
    }
}

/* ---- the plan --------------------------------------------------------- */

/* A rank's locality: its GPUs' NUMA locality; when they lie on several NUMA
 * nodes (fewer ranks than GPUs), the smallest object that holds them all,
 * so that the rank's CPUs are near every one of its GPUs. */
static void gpus_locality (const struct dist_topo *t, const int *step_gpu,
                           const struct dist_bind_plan *plan, const struct dist_bind_rank *rk,
                           struct locality *where)
{
    const struct dist_gpu *g = &t->gpu[step_gpu[plan->order[rk->gpu_first]]];
    int i;

    where->loc = g->numa;
    where->pkg = g->package;
    for (i = 1; i < rk->gpu_count; i++) {
        const struct dist_gpu *h = &t->gpu[step_gpu[plan->order[rk->gpu_first + i]]];
        while (where->loc->parent != NULL
               && !hwloc_bitmap_isincluded (h->numa->cpuset, where->loc->cpuset))
            where->loc = where->loc->parent;
    }
    if (!hwloc_bitmap_isincluded (where->loc->cpuset, where->pkg->cpuset))
        where->pkg = where->loc;
}

static int check_input (const struct dist_topo *t, hwloc_const_cpuset_t allowed,
                        const int *step_gpu, int nstep_gpus, int ntasks, char *err, size_t errsz)
{
    int i, j;

    if (ntasks < 1 || ntasks > DIST_LOCAL_TASKS_MAX) {
        snprintf (err, errsz, "%d tasks on this node: binding plans 1 to %d", ntasks,
                  DIST_LOCAL_TASKS_MAX);
        return -1;
    }
    if (nstep_gpus < 0 || nstep_gpus > DIST_GPUS_MAX) {
        snprintf (err, errsz, "%d GPUs: binding plans at most %d", nstep_gpus, DIST_GPUS_MAX);
        return -1;
    }
    for (i = 0; i < nstep_gpus; i++) {
        if (step_gpu[i] < 0 || step_gpu[i] >= t->ngpus) {
            snprintf (err, errsz, "Slurm gave the step GPU %d but the topology has %d NVIDIA GPUs",
                      step_gpu[i], t->ngpus);
            return -1;
        }
        for (j = 0; j < i; j++)
            if (step_gpu[j] == step_gpu[i]) {
                snprintf (err, errsz, "Slurm lists GPU %d twice", step_gpu[i]);
                return -1;
            }
    }
    if (!hwloc_bitmap_intersects (allowed, hwloc_topology_get_topology_cpuset (t->topo))) {
        snprintf (err, errsz, "none of the step's CPUs is in the topology");
        return -1;
    }
    return 0;
}

int dist_bind_plan (const struct dist_topo *t, hwloc_const_cpuset_t allowed, const int *step_gpu,
                    int nstep_gpus, int ntasks, struct dist_bind_plan *plan, char *err,
                    size_t errsz)
{
    struct locality *where = NULL;
    hwloc_bitmap_t mine = NULL;
    int r;

    memset (plan, 0, sizeof (*plan));
    if (check_input (t, allowed, step_gpu, nstep_gpus, ntasks, err, errsz) < 0)
        return -1;
    plan->ntasks = ntasks;
    plan->ngpus = nstep_gpus;
    plan->rank = calloc ((size_t) ntasks, sizeof (*plan->rank));
    where = calloc ((size_t) ntasks, sizeof (*where));
    mine = hwloc_bitmap_dup (allowed);
    if (plan->rank == NULL || where == NULL || mine == NULL)
        goto nomem;
    hwloc_bitmap_and (mine, mine, hwloc_topology_get_topology_cpuset (t->topo));
    for (r = 0; r < ntasks; r++) {
        plan->rank[r].cpuset = hwloc_bitmap_alloc ();
        plan->rank[r].nodeset = hwloc_bitmap_alloc ();
        if (plan->rank[r].cpuset == NULL || plan->rank[r].nodeset == NULL)
            goto nomem;
    }
    order_gpus (t, step_gpu, plan);
    assign_gpus (plan);
    if (nstep_gpus > 0) {
        for (r = 0; r < ntasks; r++)
            gpus_locality (t, step_gpu, plan, &plan->rank[r], &where[r]);
    } else {
        spread_over_numa (t, mine, ntasks, where);
    }
    if (assign_cpus (t, mine, where, plan) < 0)
        goto nomem;
    assign_nics (t, step_gpu, where, plan);
    free (where);
    hwloc_bitmap_free (mine);
    return 0;
nomem:
    snprintf (err, errsz, "out of memory planning the binding");
    free (where);
    hwloc_bitmap_free (mine);
    dist_bind_plan_free (plan);
    return -1;
}

void dist_bind_plan_free (struct dist_bind_plan *plan)
{
    int r;

    if (plan->rank != NULL) {
        for (r = 0; r < plan->ntasks; r++) {
            hwloc_bitmap_free (plan->rank[r].cpuset);
            hwloc_bitmap_free (plan->rank[r].nodeset);
        }
        free (plan->rank);
    }
    memset (plan, 0, sizeof (*plan));
}

int dist_bind_visible (const struct dist_bind_plan *plan, int local_rank, bool own_only,
                       int out[DIST_GPUS_MAX])
{
    const struct dist_bind_rank *rk;
    bool taken[DIST_GPUS_MAX] = {false};
    int G = plan->ngpus, start, i, k = 0;

    if (local_rank < 0 || local_rank >= plan->ntasks || G == 0)
        return 0;
    rk = &plan->rank[local_rank];
    if (own_only) {
        for (i = 0; i < rk->gpu_count; i++)
            out[i] = plan->order[rk->gpu_first + i];
        return rk->gpu_count;
    }
    start = local_rank % G;
    if (start > G - rk->gpu_count)
        start = G - rk->gpu_count;
    for (i = 0; i < G; i++)
        out[i] = -1;
    for (i = 0; i < rk->gpu_count; i++) {
        out[start + i] = plan->order[rk->gpu_first + i];
        taken[rk->gpu_first + i] = true;
    }
    for (i = 0; i < G; i++) {
        if (out[i] >= 0)
            continue;
        while (taken[k])
            k++;
        out[i] = plan->order[k];
        taken[k] = true;
    }
    return G;
}

/* ---- Slurm's lists ---------------------------------------------------- */

struct index_list {
    int *out;
    int n, max;
};

static int add_indices (long lo, long hi, void *arg)
{
    struct index_list *l = arg;
    long v;

    for (v = lo; v <= hi; v++) {
        if (l->n == l->max)
            return -1;
        l->out[l->n++] = (int) v;
    }
    return 0;
}

int dist_parse_index_list (const char *list, int *out, int max)
{
    struct index_list l = {out, 0, max};

    if (dist_ranges_parse (list, 4095, add_indices, &l) < 0)
        return -1;
    return l.n;
}

int dist_step_gpus (const char *visible, const char *global, int *index, char (*tokens)[64],
                    char *err, size_t errsz)
{
    int ntok, nidx;

    if (visible == NULL || visible[0] == '\0' || strcmp (visible, "NoDevFiles") == 0)
        return 0;
    ntok = dist_split_list (visible, tokens, DIST_GPUS_MAX);
    if (ntok < 0) {
        snprintf (err, errsz, "CUDA_VISIBLE_DEVICES '%.64s' does not parse", visible);
        return -1;
    }
    if (global == NULL)
        global = visible;
    nidx = dist_parse_index_list (global, index, DIST_GPUS_MAX);
    if (nidx < 0) {
        snprintf (err, errsz, "GPUs '%.64s' are not Slurm indices (UUID or MIG?)", global);
        return -1;
    }
    if (nidx != ntok) {
        snprintf (err, errsz,
                  "SLURM_STEP_GPUS '%.64s' and CUDA_VISIBLE_DEVICES '%.64s' "
                  "differ in length",
                  global, visible);
        return -1;
    }
    return nidx;
}

int dist_split_list (const char *list, char (*tokens)[64], int max)
{
    const char *p = list;
    int n = 0;

    if (list == NULL || *list == '\0')
        return -1;
    for (;;) {
        size_t len = strcspn (p, ",");
        if (len == 0 || len >= 64 || n == max)
            return -1;
        memcpy (tokens[n], p, len);
        tokens[n][len] = '\0';
        n++;
        p += len;
        if (*p == '\0')
            return n;
        p++;
    }
}
