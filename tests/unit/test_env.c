/* test_env.c - each profile's variables for a few ranks of a step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/env.h"

#define COUNT(a) (sizeof (a) / sizeof ((a)[0]))

static const struct dist_var *find (const struct dist_var *v, size_t n, const char *name)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (strcmp (dist_task_vars[v[i].id].name, name) == 0)
            return &v[i];
    return NULL;
}

static struct dist_step two_nodes (void)
{
    struct dist_step s = {
        .job_id = 4242,
        .step_id = 3,
        .world_size = 4,
        .node_rank = 1,
        .node_count = 2,
        .local_world_size = 2,
        .cpus_per_task = 2,
        .restart_count = 1,
        .master_addr = "10.213.7.11",
        .master_port = 20035,
        .port_lo = 20000,
        .port_hi = 32767,
        .ifname = "eth0",
    };
    return s;
}

/* A variable the task gets with its value and overwrite mode, or (value NULL) must not get. */
struct want {
    const char *name;
    const char *value;
    enum dist_overwrite overwrite;
};

#define FACT(name, value)                                                                          \
    {                                                                                              \
        name, value, DIST_FACT                                                                     \
    }
#define DEFAULT(name, value)                                                                       \
    {                                                                                              \
        name, value, DIST_DEFAULT                                                                  \
    }
#define ABSENT(name)                                                                               \
    {                                                                                              \
        name, NULL, DIST_FACT                                                                      \
    }

/* One task's variables: the step is two_nodes () changed by `adjust`. */
struct env_case {
    const char *name;
    enum dist_profile profile;
    void (*adjust) (struct dist_step *s);
    uint32_t rank, local_rank;
    size_t count; /* how many variables in all; 0: not checked */
    struct want want[24]; /* up to the first with no name */
};

static void run_case (void **state)
{
    const struct env_case *c = *state;
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    const struct dist_var *var;
    const struct want *w;
    size_t n;

    if (c->adjust != NULL)
        c->adjust (&s);
    n = dist_env_build (c->profile, &s, c->rank, c->local_rank, v);
    for (w = c->want; w < c->want + COUNT (c->want) && w->name != NULL; w++) {
        var = find (v, n, w->name);
        if (w->value == NULL) {
            if (var != NULL)
                fail_msg ("%s is set", w->name);
            continue;
        }
        if (var == NULL)
            fail_msg ("%s is missing", w->name);
        assert_string_equal (var->value, w->value);
        assert_int_equal (dist_task_vars[var->id].overwrite, w->overwrite);
    }
    if (c->count > 0)
        assert_int_equal (n, c->count);
}

static void no_ifname_nor_cpus (struct dist_step *s)
{
    s->ifname[0] = '\0';
    s->cpus_per_task = 0;
}

/* One task per node: torchrun's PET_* flags and composer's sizes count the
 * processes the launchers start, 4 on each of 2 nodes here. */
static void four_per_node (struct dist_step *s)
{
    s->world_size = 2;
    s->local_world_size = 1;
    s->nproc_per_node = 4;
    s->cpus_per_task = 16;
}

static void four_per_node_two_cpus (struct dist_step *s)
{
    four_per_node (s);
    s->cpus_per_task = 2;
}

/* a node rank times processes beyond 32 bits */
static void launchers_beyond_32_bits (struct dist_step *s)
{
    four_per_node_two_cpus (s);
    s->node_rank = UINT32_MAX - 1;
    s->node_count = UINT32_MAX;
    s->nproc_per_node = 1024;
}

static void large_ids (struct dist_step *s)
{
    s->job_id = UINT32_MAX;
    s->step_id = UINT32_MAX;
    s->world_size = UINT32_MAX;
}

static void ipv6_master (struct dist_step *s)
{
    snprintf (s->master_addr, sizeof (s->master_addr), "2001:db8::7");
}

static void watchdog_600 (struct dist_step *s)
{
    s->watchdog_s = 600;
}

static const struct env_case cases[] = {
    {"second_node_rank3",
     DIST_PROFILE_TORCH,
     NULL,
     3,
     1,
     21,
     {
         FACT ("RANK", "3"),
         FACT ("LOCAL_RANK", "1"),
         FACT ("WORLD_SIZE", "4"),
         FACT ("LOCAL_WORLD_SIZE", "2"),
         FACT ("GROUP_RANK", "1"),
         FACT ("NODE_RANK", "1"),
         FACT ("GROUP_WORLD_SIZE", "2"),
         FACT ("ROLE_NAME", "default"),
         FACT ("ROLE_RANK", "3"),
         FACT ("ROLE_WORLD_SIZE", "4"),
         DEFAULT ("MASTER_ADDR", "10.213.7.11"),
         DEFAULT ("MASTER_PORT", "20035"),
         FACT ("TORCHELASTIC_RUN_ID", "slurm-4242.3"),
         FACT ("TORCHELASTIC_RESTART_COUNT", "1"),
         DEFAULT ("TORCHELASTIC_MAX_RESTARTS", "0"),
         DEFAULT ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
         DEFAULT ("OMP_NUM_THREADS", "2"),
         DEFAULT ("NCCL_SOCKET_IFNAME", "eth0"),
         DEFAULT ("GLOO_SOCKET_IFNAME", "eth0"),
         FACT ("DIST_TRAIN_IFNAME", "eth0"),
         FACT ("DIST_TRAIN_PORT_RANGE", "20000-32767"),
     }},
    {"unknown_ifname_left_out",
     DIST_PROFILE_TORCH,
     no_ifname_nor_cpus,
     0,
     0,
     0,
     {
         ABSENT ("NCCL_SOCKET_IFNAME"),
         ABSENT ("GLOO_SOCKET_IFNAME"),
         ABSENT ("DIST_TRAIN_IFNAME"),
         DEFAULT ("OMP_NUM_THREADS", "1"),
         FACT ("RANK", "0"),
     }},
    {"large_ids",
     DIST_PROFILE_TORCH,
     large_ids,
     UINT32_MAX - 1,
     0,
     0,
     {
         FACT ("TORCHELASTIC_RUN_ID", "slurm-4294967295.4294967295"),
         FACT ("RANK", "4294967294"),
     }},
    {"jax_profile",
     DIST_PROFILE_JAX,
     NULL,
     2,
     0,
     0,
     {
         DEFAULT ("JAX_COORDINATOR_ADDRESS", "10.213.7.11:20035"),
         FACT ("JAX_NUM_PROCESSES", "4"),
         FACT ("JAX_PROCESS_ID", "2"),
         FACT ("RANK", "2"),
         DEFAULT ("MASTER_PORT", "20035"),
         /* torchrun's own variables belong to the torch profile only */
         ABSENT ("TORCHELASTIC_RUN_ID"),
         ABSENT ("ROLE_NAME"),
     }},
    {"jax_ipv6_coordinator",
     DIST_PROFILE_JAX,
     ipv6_master,
     0,
     0,
     0,
     {
         DEFAULT ("JAX_COORDINATOR_ADDRESS", "[2001:db8::7]:20035"),
     }},
    {"watchdog_only_when_asked",
     DIST_PROFILE_TORCH,
     NULL,
     0,
     0,
     0,
     {
         ABSENT ("DIST_TRAIN_WATCHDOG"),
     }},
    {"watchdog_jax",
     DIST_PROFILE_JAX,
     watchdog_600,
     0,
     0,
     0,
     {
         DEFAULT ("DIST_TRAIN_WATCHDOG", "600"),
     }},
    {"watchdog_torch",
     DIST_PROFILE_TORCH,
     watchdog_600,
     0,
     0,
     0,
     {
         DEFAULT ("DIST_TRAIN_WATCHDOG", "600"),
     }},
    {"launcher_profile",
     DIST_PROFILE_LAUNCHER,
     four_per_node,
     1,
     0,
     0,
     {
         FACT ("PET_NNODES", "2"),
         FACT ("PET_NODE_RANK", "1"),
         DEFAULT ("PET_NPROC_PER_NODE", "4"),
         DEFAULT ("PET_MASTER_ADDR", "10.213.7.11"),
         DEFAULT ("PET_MASTER_PORT", "20035"),
         DEFAULT ("PET_RDZV_ID", "slurm-4242.3"),
         FACT ("WORLD_SIZE", "8"),
         FACT ("LOCAL_WORLD_SIZE", "4"),
         FACT ("NODE_RANK", "1"),
         FACT ("BASE_RANK", "4"),
         DEFAULT ("MASTER_ADDR", "10.213.7.11"),
         DEFAULT ("MASTER_PORT", "20035"),
         DEFAULT ("OMP_NUM_THREADS", "4"),
         DEFAULT ("GLOO_SOCKET_IFNAME", "eth0"),
         /* the launcher sets the ranks of its processes, and its own run */
         ABSENT ("RANK"),
         ABSENT ("LOCAL_RANK"),
         ABSENT ("TORCHELASTIC_RUN_ID"),
     }},
    /* fewer CPUs than processes: one thread each */
    {"launcher_fewer_cpus",
     DIST_PROFILE_LAUNCHER,
     four_per_node_two_cpus,
     1,
     0,
     0,
     {
         DEFAULT ("OMP_NUM_THREADS", "1"),
     }},
    {"launcher_beyond_32_bits",
     DIST_PROFILE_LAUNCHER,
     launchers_beyond_32_bits,
     1,
     0,
     0,
     {
         FACT ("BASE_RANK", "4398046509056"),
         FACT ("WORLD_SIZE", "4398046510080"),
     }},
    /* Lightning picks TorchElasticEnvironment over SLURMEnvironment whenever
     * TORCHELASTIC_RUN_ID is set: its profile is torch's without it. */
    {"lightning_profile",
     DIST_PROFILE_LIGHTNING,
     NULL,
     3,
     1,
     0,
     {
         FACT ("RANK", "3"),
         DEFAULT ("MASTER_ADDR", "10.213.7.11"),
         DEFAULT ("MASTER_PORT", "20035"),
         ABSENT ("TORCHELASTIC_RUN_ID"),
         ABSENT ("TORCHELASTIC_RESTART_COUNT"),
         ABSENT ("TORCHELASTIC_MAX_RESTARTS"),
     }},
    /* submitit's export() raises when one of the six variables it writes is set. */
    {"submitit_profile",
     DIST_PROFILE_SUBMITIT,
     NULL,
     3,
     1,
     0,
     {
         ABSENT ("MASTER_ADDR"),
         ABSENT ("MASTER_PORT"),
         ABSENT ("RANK"),
         ABSENT ("WORLD_SIZE"),
         ABSENT ("LOCAL_RANK"),
         ABSENT ("LOCAL_WORLD_SIZE"),
         ABSENT ("TORCHELASTIC_RUN_ID"),
         FACT ("DIST_TRAIN_MASTER_ADDR", "10.213.7.11"),
         FACT ("DIST_TRAIN_MASTER_PORT", "20035"),
         FACT ("NODE_RANK", "1"),
         DEFAULT ("GLOO_SOCKET_IFNAME", "eth0"),
     }},
};

/* Every profile the parser knows, with every optional variable present, fits the
 * caller's array and names each variable once. */
static void test_every_profile_fits (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t i, j, n, profiles = 0;
    enum dist_profile p;

    s.watchdog_s = 60; /* (two_nodes () has the rest: an interface, rank 0's address) */
    for (p = DIST_PROFILE_OFF + 1; strcmp (dist_profile_name (p), "?") != 0; p++) {
        n = dist_env_build (p, &s, 2, 0, v);
        /* a full array would mean variables were dropped */
        if (n == 0 || n >= DIST_ENV_MAX)
            fail_msg ("profile %s: %zu variables", dist_profile_name (p), n);
        for (i = 0; i < n; i++)
            for (j = i + 1; j < n; j++)
                assert_int_not_equal (v[i].id, v[j].id);
        profiles++;
    }
    /* torch, jax, tf, launcher, lightning, submitit */
    assert_true (profiles >= 6);
}

static void test_off_sets_nothing (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    assert_int_equal (dist_env_build (DIST_PROFILE_OFF, &s, 0, 0, v), 0);
}

int main (void)
{
    struct CMUnitTest tests[COUNT (cases) + 2] = {
        cmocka_unit_test (test_every_profile_fits),
        cmocka_unit_test (test_off_sets_nothing),
    };
    size_t i;

    for (i = 0; i < COUNT (cases); i++)
        tests[2 + i] = (struct CMUnitTest){
            .name = cases[i].name,
            .test_func = run_case,
            .initial_state = (void *) &cases[i],
        };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
