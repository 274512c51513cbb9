/* spank_standin.h - a small slurmstepd for fuzz_spank: the SPANK calls the
 * plugin makes (environment, items, option registration, logging), Slurm's
 * hostlist, and name resolution, all answered from one fuzz input.  No
 * Slurm runs: what slurmstepd would know comes from the input. */
#ifndef DIST_FUZZ_SPANK_STANDIN_H
#define DIST_FUZZ_SPANK_STANDIN_H

#include <stdbool.h>
#include <stdint.h>

#include <slurm/spank.h>

#define STANDIN_ENV_MAX 64
#define STANDIN_HOSTS_MAX 4096 /* the fuzzer's default: a hostlist larger is refused */

/* What slurmstepd knows of the step (spank_get_item); the harness keeps
 * Slurm's own invariants (nodeid < nnodes, local tasks within the step). */
struct standin_items {
    uint32_t job_id, step_id, nnodes, nodeid, ntasks, local, base, cpus_per_task, restart;
    char *cores; /* S_JOB_ALLOC_CORES */
    int task; /* the local task of task_init/task_exit, -1 none */
    int exit_status; /* S_TASK_EXIT_STATUS */
    const uint32_t *gtids; /* the node's tasks' Slurm ranks; NULL: base .. base + local - 1 */
};

extern struct standin_items standin_items;
extern struct spank_option *standin_option; /* what the plugin registered */
extern spank_context_t standin_context; /* spank_context()'s answer: S_CTX_REMOTE */
extern size_t standin_hosts_max; /* names a hostlist may hold: STANDIN_HOSTS_MAX */

/* What srun asks slurmctld (spank/local.c), for bench_sim; NULL (the fuzzer's) aborts
 * at any such call, as slurmstepd never makes one. */
struct standin_srun {
    slurm_step_layout_t *layout; /* the step's: the caller's, never freed here */
    const char *node_addr; /* every node's NodeAddr */
    const char *topology; /* the topology as Slurm prints it, one record a line */
};
extern const struct standin_srun *standin_srun;
extern bool standin_said; /* srun logged a line the user sees (info, error) */

/* Forget the previous input: the environment, the names, the option. */
void standin_reset (void);

/* The job's environment. */
void standin_setenv (const char *name, const char *value);
/* The value of name in the environment, or NULL. */
const char *standin_getenv (const char *name);
/* A copy of the environment, and back to it: each task's is its own. */
void standin_env_save (void);
void standin_env_restore (void);

/* With FUZZ_SPANK_TRACE set: the environment on stderr. */
void standin_trace_env (const char *when);

/* After each input: what slurmstepd would keep until it exits (the node's
 * binding plan of ntasks tasks, spank/bind.c; fail fast's "reported",
 * spank/failfast.c). */

/* What a name resolves to ("10.1.0.1,fd00::1"), for getaddrinfo. */
void standin_add_host (const char *name, const char *addrs);

#endif /* DIST_FUZZ_SPANK_STANDIN_H */
