/* bind.c - GPU, CPU and NIC binding in slurmstepd: the node's plan once in
 * user_init, each task's share of it in task_init.
 *
 * Nothing here may fail the step: a topology that cannot be read, GPUs it
 * lacks, or Slurm lists that make no sense leave the task with the
 * environment only, and local rank 0 says why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

#include "dist_train.h"
#include "libdist/bind.h"
#include "libdist/topo.h"

#define GPU_LIST_MAX 1024
/* the kernel's list of PCI devices, read to learn whether the machine has GPUs */
#define PCI_DEVICES "/sys/bus/pci/devices"

struct task_binding {
    char *visible; /* CUDA_VISIBLE_DEVICES, NULL = no GPUs */
    int device; /* the index of its first own GPU in visible */
    char *gpus; /* bus ids */
    char *cpus; /* cpulist */
    char *mems;
    char nic[DIST_NICNAME_MAX];
    int ncpus;
    cpu_set_t *mask; /* NULL when the plan is not for this machine */
    size_t masksize;
};

/* A slurmstepd node's binding: planned in user_init, each task's applied in
 * its task_init. */
struct node_binding {
    const struct dist_config *cfg;
    const struct node_topology *topology; /* where it came from, for verbose */
    const char *node_name;
    const uint32_t *rank_of; /* RANK of each local task, NULL = Slurm's */
    uint32_t nranks;
    int ntasks;
    struct task_binding *task;
    char warning[DIST_ERR_MAX]; /* why binding was skipped or limited */
    bool cpus_asked; /* the user gave srun --cpu-bind */
    bool cpus_shared; /* for verbose: more ranks than CPUs */
    int step_cpus; /* for verbose: the CPUs the plan divides */
    double load_us, plan_us; /* for verbose: what planning cost here */
    bool task_failed; /* out of memory filling the tasks: none is bound */
};

static double now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

/* Keep the first problem; local rank 0 reports it.  b may be NULL: a question
 * asked outside planning, whose problems the plan reports. */
static void warn (struct node_binding *b, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));
static void warn (struct node_binding *b, const char *fmt, ...)
{
    va_list ap;

    if (b == NULL || b->warning[0] != '\0')
        return;
    va_start (ap, fmt);
    vsnprintf (b->warning, sizeof (b->warning), fmt, ap);
    va_end (ap);
}

/* The step's GPUs: Slurm's global indices (PCI order) and the tokens of
 * CUDA_VISIBLE_DEVICES that name them, position by position. */
static int step_gpus (struct node_binding *b, spank_t sp, int *index, char (*tokens)[64])
{
    char visible[GPU_LIST_MAX], global[GPU_LIST_MAX], err[DIST_ERR_MAX];
    bool have_visible, have_global;
    int n;

    have_visible =
        spank_getenv (sp, "CUDA_VISIBLE_DEVICES", visible, sizeof (visible)) == ESPANK_SUCCESS;
    have_global = spank_getenv (sp, "SLURM_STEP_GPUS", global, sizeof (global)) == ESPANK_SUCCESS;
    n = dist_step_gpus (have_visible ? visible : NULL, have_global ? global : NULL, index, tokens,
                        err, sizeof (err));
    if (n < 0)
        warn (b, "%.200s: GPUs left as Slurm set them", err);
    return n;
}

int dist_train_step_gpu_count (spank_t sp)
{
    char tokens[DIST_GPUS_MAX][64];
    int index[DIST_GPUS_MAX], n;

    n = step_gpus (NULL, sp, index, tokens);
    return n > 0 ? n : 0;
}

/* slurmstepd's own affinity, on machines of any size (a fixed cpu_set_t
 * holds 1,024 CPUs: beyond, sched_getaffinity fails with EINVAL). */
static int own_affinity (const struct dist_topo *t, hwloc_bitmap_t here)
{
    int ncpus, rc = -1;
    cpu_set_t *mask;
    size_t size;

    for (ncpus = 1024; ncpus <= (1 << 20); ncpus *= 2) {
        if ((mask = CPU_ALLOC (ncpus)) == NULL)
            return -1;
        size = CPU_ALLOC_SIZE (ncpus);
        rc = sched_getaffinity (0, size, mask);
        if (rc == 0)
            hwloc_cpuset_from_glibc_sched_affinity (t->topo, here, mask, (int) size);
        CPU_FREE (mask);
        if (rc == 0 || errno != EINVAL)
            break;
    }
    return rc;
}

/* The step's CPUs on this node: the job's cores, narrowed by what
 * slurmstepd may use (its cgroup) when the topology is this machine's.
 * Cores that Slurm names but the machine lacks mean that slurm.conf
 * describes the node with more CPUs than it has: Slurm's numbers say
 * nothing about this machine then, and the step is planned on what
 * slurmstepd may use, with a warning that names them. */
static int step_cpus (struct node_binding *b, spank_t sp, const struct dist_topo *t,
                      hwloc_bitmap_t allowed, hwloc_bitmap_t here)
{
    char *cores = NULL, err[DIST_ERR_MAX], gone[128], mine[128];
    hwloc_bitmap_t missing = hwloc_bitmap_alloc (), both = hwloc_bitmap_alloc ();
    int nmissing, rc = -1;
    bool have_here;

    if (missing == NULL || both == NULL)
        goto out;
    if (spank_get_item (sp, S_JOB_ALLOC_CORES, &cores) != ESPANK_SUCCESS || cores == NULL) {
        warn (b, "%s", "Slurm did not give the job's cores: CPUs not bound");
        goto out;
    }
    nmissing = dist_topo_cores_cpuset (t, cores, allowed, missing, err, sizeof (err));
    if (nmissing < 0) {
        warn (b, "%s", err);
        goto out;
    }
    have_here = own_affinity (t, here) == 0;
    if (have_here)
        hwloc_bitmap_and (both, here, hwloc_topology_get_topology_cpuset (t->topo));
    if (nmissing > 0) {
        hwloc_bitmap_list_snprintf (gone, sizeof (gone), missing);
        if (have_here && !hwloc_bitmap_iszero (both))
            hwloc_bitmap_copy (allowed, both);
        if (hwloc_bitmap_iszero (allowed)) {
            warn (b,
                  "Slurm gave the job cores %.64s, but the topology has %d: CPUs not bound "
                  "(slurm.conf may describe this node with more CPUs than it has: compare "
                  "with slurmd -C)",
                  cores, dist_topo_core_count (t));
            goto out;
        }
        hwloc_bitmap_list_snprintf (mine, sizeof (mine), allowed);
        warn (b,
              "Slurm gave the job cores %.64s, but this machine has no core%s %.64s (it has "
              "%d; slurm.conf describes the node with more CPUs than it has: compare with "
              "slurmd -C): ranks planned on CPUs %.64s, %s",
              cores, nmissing > 1 ? "s" : "", gone, dist_topo_core_count (t), mine,
              have_here && hwloc_bitmap_isequal (allowed, both) ? "the ones this step may use"
                                                                : "the job's cores it has");
        rc = 0;
        goto out;
    }
    if (have_here) {
        hwloc_bitmap_and (both, allowed, here);
        if (!hwloc_bitmap_iszero (both))
            hwloc_bitmap_copy (allowed, both);
    }
    if (hwloc_bitmap_iszero (allowed)) {
        warn (b, "the job's cores (%.64s) are not in the topology: CPUs not bound", cores);
        goto out;
    }
    rc = 0;
out:
    hwloc_bitmap_free (missing);
    hwloc_bitmap_free (both);
    return rc;
}

static char *join_tokens (const int *pos, int n, char (*tokens)[64])
{
    char buf[DIST_GPUS_MAX * 65] = "";
    size_t off = 0;
    int i;

    for (i = 0; i < n; i++)
        off +=
            (size_t) snprintf (buf + off, sizeof (buf) - off, "%s%s", i ? "," : "", tokens[pos[i]]);
    return strdup (buf);
}

static int fill_task (const struct dist_config *cfg, const struct dist_topo *t,
                      const struct dist_bind_plan *plan, const int *index, char (*tokens)[64],
                      hwloc_const_bitmap_t here, int r, struct task_binding *tb)
{
    const struct dist_bind_rank *rk = &plan->rank[r];
    int pos[DIST_GPUS_MAX], n, i;
    char buses[DIST_GPUS_MAX * DIST_BUSID_MAX] = "";
    size_t off = 0;

    if (plan->ngpus > 0) {
        n = dist_bind_visible (plan, r, cfg->visible_own, pos);
        tb->visible = join_tokens (pos, n, tokens);
        for (tb->device = 0; tb->device < n - 1; tb->device++)
            if (pos[tb->device] == plan->order[rk->gpu_first])
                break;
        for (i = 0; i < rk->gpu_count; i++)
            off += (size_t) snprintf (buses + off, sizeof (buses) - off, "%s%s", i ? "," : "",
                                      t->gpu[index[plan->order[rk->gpu_first + i]]].busid);
        tb->gpus = strdup (buses);
        if (tb->visible == NULL || tb->gpus == NULL)
            return -1;
    }
    if (hwloc_bitmap_list_asprintf (&tb->cpus, rk->cpuset) < 0
        || hwloc_bitmap_list_asprintf (&tb->mems, rk->nodeset) < 0)
        return -1;
    tb->ncpus = hwloc_bitmap_weight (rk->cpuset);
    if (rk->nic >= 0)
        snprintf (tb->nic, sizeof (tb->nic), "%s", t->nic[rk->nic].name);
    /* Bind only to CPUs this slurmstepd may use: an XML from another
     * machine gives a plan that is exported, not applied. */
    if (hwloc_bitmap_isincluded (rk->cpuset, here)) {
        tb->masksize = CPU_ALLOC_SIZE (hwloc_bitmap_last (rk->cpuset) + 1);
        tb->mask = CPU_ALLOC (hwloc_bitmap_last (rk->cpuset) + 1);
        if (tb->mask == NULL)
            return -1;
        hwloc_cpuset_to_glibc_sched_affinity (t->topo, rk->cpuset, tb->mask, tb->masksize);
    }
    return 0;
}

/* Asked once per node in user_init, before the tasks exist: srun puts
 * SLURM_CPU_BIND in the step's environment only for a --cpu-bind the user
 * gave, while task/affinity writes it into every task's environment, also
 * when it binds by its own default. */
static bool user_bound_cpus (spank_t sp)
{
    char v[256];
    return spank_getenv (sp, "SLURM_CPU_BIND", v, sizeof (v)) == ESPANK_SUCCESS;
}

/* Asked in each task, not once in user_init: there, a step of srun
 * --gpus-per-task=1 --cpu-bind=none was not yet seen as one (Slurm 22.05). */
static bool user_bound_gpus (spank_t sp)
{
    char v[256];
    return (spank_getenv (sp, "SLURMD_TRES_BIND", v, sizeof (v)) == ESPANK_SUCCESS
            && strstr (v, "gpu") != NULL)
           || spank_getenv (sp, "SLURM_GPUS_PER_TASK", v, sizeof (v)) == ESPANK_SUCCESS;
}

/* Each task's share of the plan, once the plan is made. */
static void fill_tasks (struct node_binding *b, const struct dist_topo *t,
                        const struct dist_bind_plan *plan, const int *index, char (*tokens)[64],
                        hwloc_const_bitmap_t here, uint32_t ntasks)
{
    int r;

    if ((b->task = calloc (ntasks, sizeof (*b->task))) == NULL)
        return;
    b->ntasks = (int) ntasks;
    for (r = 0; r < (int) ntasks; r++)
        if (fill_task (b->cfg, t, plan, index, tokens, here, r, &b->task[r]) < 0) {
            warn (b, "%s", "out of memory: not bound");
            b->task_failed = true;
            break;
        }
}

static void plan_on (struct node_binding *b, spank_t sp, const struct dist_topo *t, uint32_t ntasks,
                     const int *index, char (*tokens)[64], int ngpus)
{
    struct dist_bind_plan plan;
    char err[DIST_ERR_MAX];
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc (), here = hwloc_bitmap_alloc ();
    double t0 = now_us ();

    if (allowed == NULL || here == NULL || step_cpus (b, sp, t, allowed, here) < 0)
        goto out;
    if (dist_bind_plan (t, allowed, index, ngpus, (int) ntasks, &plan, err, sizeof (err)) < 0) {
        warn (b, "%.200s: not bound", err);
        goto out;
    }
    b->plan_us = now_us () - t0;
    fill_tasks (b, t, &plan, index, tokens, here, ntasks);
    /* not a problem (the user oversubscribed on purpose), said in verbose */
    b->cpus_shared = plan.cpus_shared;
    b->step_cpus = hwloc_bitmap_weight (allowed);
    dist_bind_plan_free (&plan);
out:
    hwloc_bitmap_free (allowed);
    hwloc_bitmap_free (here);
}

struct node_binding *dist_train_bind_plan (spank_t sp, const struct dist_config *cfg,
                                           struct node_topology *nt, const char *node_name,
                                           const uint32_t *rank_of, uint32_t nranks)
{
    struct node_binding *b = calloc (1, sizeof (*b));
    const struct dist_topo *t;
    char tokens[DIST_GPUS_MAX][64], err[DIST_ERR_MAX];
    int index[DIST_GPUS_MAX], ngpus;
    uint32_t ntasks;
    bool need_io;
    double t0;

    if (b == NULL)
        return NULL;
    b->cfg = cfg;
    b->topology = nt;
    b->node_name = node_name;
    b->rank_of = rank_of;
    b->nranks = nranks;
    b->cpus_asked = user_bound_cpus (sp);
    if (dist_config_bind (cfg) == DIST_BIND_NONE || nt == NULL
        || spank_get_item (sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS || ntasks == 0)
        return b;
    ngpus = step_gpus (b, sp, index, tokens);
    if (ngpus < 0)
        ngpus = 0;
    t0 = now_us ();
    /* I/O devices only for GPUs or NICs to place.  GPUs count only where the machine
     * has some: Slurm sets or clears CUDA_VISIBLE_DEVICES on a node whose GPUs are
     * its gres, but leaves the user's value in place on a node without, and the
     * user's word alone must not make slurmstepd walk the PCI bus. */
    need_io = cfg->nic_auto || (ngpus > 0 && dist_pci_has_gpu (PCI_DEVICES));
    if ((t = dist_train_topology_load (nt, need_io, err, sizeof (err))) == NULL) {
        warn (b, "%.200s: not bound", err);
        return b;
    }
    b->load_us = now_us () - t0;
    plan_on (b, sp, t, ntasks, index, tokens, ngpus);
    dist_train_topology_planned (nt);
    return b;
}

void dist_train_bind_free (struct node_binding *b)
{
    if (b == NULL)
        return;
    /* (fill_task may have stopped half way: every slot allocated is freed) */
    for (int r = 0; b->task != NULL && r < b->ntasks; r++) {
        struct task_binding *tb = &b->task[r];
        free (tb->visible);
        free (tb->gpus);
        free (tb->cpus);
        free (tb->mems);
        if (tb->mask != NULL)
            CPU_FREE (tb->mask);
    }
    free (b->task);
    free (b);
}

static void report (const struct node_binding *b, spank_t sp, bool cpus_theirs, bool gpus_theirs)
{
    const char *host = b->node_name;
    int r;

    if (gpus_theirs)
        slurm_spank_log ("%s: %s: --gpu-bind/--gpus-per-task given: GPUs left as Slurm bound them",
                         PLUGIN_NAME, host);
    if (cpus_theirs)
        slurm_spank_log ("%s: %s: --cpu-bind given: CPUs left as Slurm bound them", PLUGIN_NAME,
                         host);
    slurm_spank_log ("%s: %s: binding planned in %.0f us (topology loaded in %.0f us, %s)",
                     PLUGIN_NAME, host, b->plan_us, b->load_us,
                     dist_train_topology_said (b->topology));
    if (b->cpus_shared)
        slurm_spank_log ("%s: %s: more ranks than CPUs (%d ranks, %d CPUs): one CPU each, "
                         "shared evenly",
                         PLUGIN_NAME, host, b->ntasks, b->step_cpus);
    slurm_spank_log ("%s: %s:   LOCAL_RANK  RANK  GPUS  CPUS  MEMS  NIC", PLUGIN_NAME, host);
    for (r = 0; r < b->ntasks && r < 64; r++) {
        const struct task_binding *tb = &b->task[r];
        uint32_t rank = 0;
        if (b->rank_of != NULL && (uint32_t) r < b->nranks)
            rank = b->rank_of[r];
        else
            (void) spank_get_item (sp, S_JOB_LOCAL_TO_GLOBAL_ID, (uint32_t) r, &rank);
        slurm_spank_log ("%s: %s:   %-11d %-5lu %s  %s  %s  %s%s", PLUGIN_NAME, host, r,
                         (unsigned long) rank, tb->gpus ? tb->gpus : "-", tb->cpus, tb->mems,
                         tb->nic[0] ? tb->nic : "-",
                         tb->mask == NULL ? "  (not this machine: not applied)" : "");
    }
}

void dist_train_bind_task (const struct node_binding *b, spank_t sp, int local_rank,
                           const struct container_note *c, uint32_t *omp_threads)
{
    enum dist_bind mode = dist_config_bind (b->cfg);
    bool cpus_theirs = b->cpus_asked, gpus_theirs = user_bound_gpus (sp);
    const struct task_binding *tb;
    char device[16];
    double t0;

    if (local_rank == 0 && b->warning[0] != '\0')
        slurm_spank_log ("%s: warning: %s: %s", PLUGIN_NAME, b->node_name, b->warning);
    if (local_rank < 0 || local_rank >= b->ntasks || b->task_failed)
        return;
    if (b->cfg->verbose && local_rank == 0)
        report (b, sp, cpus_theirs, gpus_theirs);
    tb = &b->task[local_rank];
    t0 = now_us ();

    if (tb->visible != NULL && !gpus_theirs && mode != DIST_BIND_CPU) {
        (void) dist_train_setenv (c, sp, DIST_VAR_CUDA_VISIBLE_DEVICES, tb->visible);
        (void) dist_train_setenv (c, sp, DIST_VAR_CUDA_DEVICE_ORDER, "PCI_BUS_ID");
        (void) dist_train_setenv (c, sp, DIST_VAR_GPUS, tb->gpus);
        snprintf (device, sizeof (device), "%d", tb->device);
        (void) dist_train_setenv (c, sp, DIST_VAR_DEVICE, device);
    }
    if (!cpus_theirs && mode != DIST_BIND_GPU) {
        if (tb->mask != NULL && sched_setaffinity (0, tb->masksize, tb->mask) < 0)
            slurm_spank_log ("%s: warning: cannot bind local rank %d to CPUs %s: %m", PLUGIN_NAME,
                             local_rank, tb->cpus);
        (void) dist_train_setenv (c, sp, DIST_VAR_CPUS, tb->cpus);
        (void) dist_train_setenv (c, sp, DIST_VAR_MEMS, tb->mems);
        if (tb->ncpus > 0)
            *omp_threads = (uint32_t) tb->ncpus;
    }
    if (tb->nic[0] != '\0') {
        (void) dist_train_setenv (c, sp, DIST_VAR_NIC, tb->nic);
        if (b->cfg->nic_auto) {
            char value[DIST_NICNAME_MAX + 2];
            snprintf (value, sizeof (value), "=%s", tb->nic);
            (void) dist_train_setenv (c, sp, DIST_VAR_NCCL_IB_HCA, value);
            snprintf (value, sizeof (value), "%s:1", tb->nic);
            (void) dist_train_setenv (c, sp, DIST_VAR_UCX_NET_DEVICES, value);
        }
    }
    if (b->cfg->verbose && local_rank == 0)
        slurm_spank_log ("%s: %s: local rank 0's binding applied in %.0f us", PLUGIN_NAME,
                         b->node_name, now_us () - t0);
}
