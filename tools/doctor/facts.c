/* facts.c - what this task is, as its environment and the kernel say:
 * the contract's variables, its node, its binding and its real affinity. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor.h"
#include "facts.h"

/* A variable, bounded and printable; "" when unset. */
static void env_text (const char *name, char *out, size_t size)
{
    const char *v = getenv (name);
    doctor_printable (out, size, v != NULL ? v : "");
}

/* A variable as a count: -1 when unset or not a plain number. */
static long env_long (const char *name)
{
    const char *v = getenv (name);
    char *end;
    long n;

    if (v == NULL || v[0] < '0' || v[0] > '9' || strlen (v) > 12)
        return -1;
    errno = 0;
    n = strtol (v, &end, 10);
    return errno != 0 || *end != '\0' || n > (long) DOCTOR_RANKS_MAX * 64 ? -1 : n;
}

/* The CPUs this task may run on, as a "0-3,8" list ("" if unknown); grows
 * the mask for machines beyond 1,024 CPUs, where a fixed set fails. */
static void real_affinity (char *out, size_t size)
{
    cpu_set_t *mask = NULL;
    size_t setsize = 0, off = 0;
    int ncpus, cpu, lo;

    out[0] = '\0';
    for (ncpus = 1024; ncpus <= DOCTOR_CPUS_MAX; ncpus *= 2) {
        if ((mask = CPU_ALLOC (ncpus)) == NULL)
            return;
        setsize = CPU_ALLOC_SIZE (ncpus);
        if (sched_getaffinity (0, setsize, mask) == 0)
            break;
        CPU_FREE (mask);
        mask = NULL;
        if (errno != EINVAL)
            return;
    }
    if (mask == NULL)
        return;
    for (cpu = 0; cpu < ncpus; cpu++) {
        if (!CPU_ISSET_S ((size_t) cpu, setsize, mask))
            continue;
        for (lo = cpu; cpu + 1 < ncpus && CPU_ISSET_S ((size_t) cpu + 1, setsize, mask); cpu++)
            ;
        int n = lo == cpu ? snprintf (out + off, size - off, "%s%d", off ? "," : "", lo)
                          : snprintf (out + off, size - off, "%s%d-%d", off ? "," : "", lo, cpu);
        if (n < 0 || (size_t) n >= size - off) {
            out[0] = '\0'; /* cut lists would be wrong lists */
            break;
        }
        off += (size_t) n;
    }
    CPU_FREE (mask);
}

void doctor_facts_gather (struct doctor_rank *r)
{
    char host[256];

    memset (r, 0, sizeof (*r));
    r->procid = env_long ("SLURM_PROCID");
    r->rank = env_long ("RANK");
    r->local_rank = env_long ("LOCAL_RANK");
    r->world_size = env_long ("WORLD_SIZE");
    r->local_world_size = env_long ("LOCAL_WORLD_SIZE");
    r->group_rank = env_long ("GROUP_RANK");
    r->connect_ms = -1;
    r->fabric_port = r->fabric_mtu = -1;
    if (getenv ("SLURMD_NODENAME") != NULL)
        env_text ("SLURMD_NODENAME", r->node, sizeof (r->node));
    else if (gethostname (host, sizeof (host)) == 0) {
        host[sizeof (host) - 1] = '\0';
        doctor_printable (r->node, sizeof (r->node), host);
    }
    env_text ("MASTER_ADDR", r->master_addr, sizeof (r->master_addr));
    env_text ("MASTER_PORT", r->master_port, sizeof (r->master_port));
    env_text ("CUDA_VISIBLE_DEVICES", r->visible, sizeof (r->visible));
    env_text ("DIST_TRAIN_GPUS", r->gpus, sizeof (r->gpus));
    env_text ("DIST_TRAIN_DEVICE", r->device, sizeof (r->device));
    env_text ("DIST_TRAIN_CPUS", r->plan_cpus, sizeof (r->plan_cpus));
    real_affinity (r->cpus, sizeof (r->cpus));
}

const char *doctor_facts_ifname (void)
{
    const char *v = getenv ("NCCL_SOCKET_IFNAME");

    if (v == NULL || v[0] == '\0')
        v = getenv ("GLOO_SOCKET_IFNAME");
    return v != NULL && v[0] != '\0' ? v : NULL;
}
