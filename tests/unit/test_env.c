/* test_env.c - each profile's variables for a few ranks of a step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/env.h"

static const struct dist_var *find (const struct dist_var *v, size_t n, const char *name)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (strcmp (v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

static void expect (const struct dist_var *v, size_t n, const char *name,
                    const char *value, enum dist_overwrite ow)
{
    const struct dist_var *var = find (v, n, name);
    if (var == NULL)
        fail_msg ("%s is missing", name);
    assert_string_equal (var->value, value);
    assert_int_equal (var->overwrite, ow);
}

static struct dist_step two_nodes (void)
{
    struct dist_step s = {
        .job_id = 4242, .step_id = 3, .world_size = 4, .node_rank = 1,
        .node_count = 2, .local_world_size = 2, .cpus_per_task = 2,
        .restart_count = 1, .master_addr = "10.213.7.11", .master_port = 20035,
        .ifname = "eth0",
    };
    return s;
}

static void test_second_node_rank3 (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t n = dist_env_build (DIST_PROFILE_TORCH, &s, 3, 1, v);

    expect (v, n, "RANK", "3", DIST_FACT);
    expect (v, n, "LOCAL_RANK", "1", DIST_FACT);
    expect (v, n, "WORLD_SIZE", "4", DIST_FACT);
    expect (v, n, "LOCAL_WORLD_SIZE", "2", DIST_FACT);
    expect (v, n, "GROUP_RANK", "1", DIST_FACT);
    expect (v, n, "NODE_RANK", "1", DIST_FACT);
    expect (v, n, "GROUP_WORLD_SIZE", "2", DIST_FACT);
    expect (v, n, "ROLE_NAME", "default", DIST_FACT);
    expect (v, n, "ROLE_RANK", "3", DIST_FACT);
    expect (v, n, "ROLE_WORLD_SIZE", "4", DIST_FACT);
    expect (v, n, "MASTER_ADDR", "10.213.7.11", DIST_DEFAULT);
    expect (v, n, "MASTER_PORT", "20035", DIST_DEFAULT);
    expect (v, n, "TORCHELASTIC_RUN_ID", "slurm-4242.3", DIST_FACT);
    expect (v, n, "TORCHELASTIC_RESTART_COUNT", "1", DIST_FACT);
    expect (v, n, "TORCHELASTIC_MAX_RESTARTS", "0", DIST_DEFAULT);
    expect (v, n, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", DIST_DEFAULT);
    expect (v, n, "OMP_NUM_THREADS", "2", DIST_DEFAULT);
    expect (v, n, "NCCL_SOCKET_IFNAME", "eth0", DIST_DEFAULT);
    expect (v, n, "GLOO_SOCKET_IFNAME", "eth0", DIST_DEFAULT);
    assert_int_equal (n, 19);
}

static void test_unknown_ifname_left_out (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t n;
    s.ifname[0] = '\0';
    s.cpus_per_task = 0;
    n = dist_env_build (DIST_PROFILE_TORCH, &s, 0, 0, v);
    assert_null (find (v, n, "NCCL_SOCKET_IFNAME"));
    assert_null (find (v, n, "GLOO_SOCKET_IFNAME"));
    expect (v, n, "OMP_NUM_THREADS", "1", DIST_DEFAULT);
    expect (v, n, "RANK", "0", DIST_FACT);
}

static const enum dist_profile every_profile[] = {
    DIST_PROFILE_TORCH,     DIST_PROFILE_JAX,       DIST_PROFILE_TF,
    DIST_PROFILE_LAUNCHER,  DIST_PROFILE_LIGHTNING, DIST_PROFILE_SUBMITIT,
};

static void test_names_unique (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t p, i, j, n;

    s.watchdog_s = 60; /* every optional variable present */
    for (p = 0; p < sizeof (every_profile) / sizeof (every_profile[0]); p++) {
        n = dist_env_build (every_profile[p], &s, 2, 0, v);
        /* a full array would mean variables were dropped */
        assert_true (n > 0 && n < DIST_ENV_MAX);
        for (i = 0; i < n; i++)
            for (j = i + 1; j < n; j++)
                assert_string_not_equal (v[i].name, v[j].name);
    }
}

/* One task per node: torchrun's PET_* flags and composer's sizes count the
 * processes the launchers start, 4 on each of 2 nodes here. */
static void test_launcher_profile (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t n;

    s.world_size = 2;
    s.local_world_size = 1;
    s.nproc_per_node = 4;
    s.cpus_per_task = 16;
    n = dist_env_build (DIST_PROFILE_LAUNCHER, &s, 1, 0, v);
    expect (v, n, "PET_NNODES", "2", DIST_FACT);
    expect (v, n, "PET_NODE_RANK", "1", DIST_FACT);
    expect (v, n, "PET_NPROC_PER_NODE", "4", DIST_DEFAULT);
    expect (v, n, "PET_MASTER_ADDR", "10.213.7.11", DIST_DEFAULT);
    expect (v, n, "PET_MASTER_PORT", "20035", DIST_DEFAULT);
    expect (v, n, "PET_RDZV_ID", "slurm-4242.3", DIST_DEFAULT);
    expect (v, n, "WORLD_SIZE", "8", DIST_FACT);
    expect (v, n, "LOCAL_WORLD_SIZE", "4", DIST_FACT);
    expect (v, n, "NODE_RANK", "1", DIST_FACT);
    expect (v, n, "BASE_RANK", "4", DIST_FACT);
    expect (v, n, "MASTER_ADDR", "10.213.7.11", DIST_DEFAULT);
    expect (v, n, "MASTER_PORT", "20035", DIST_DEFAULT);
    expect (v, n, "OMP_NUM_THREADS", "4", DIST_DEFAULT);
    expect (v, n, "GLOO_SOCKET_IFNAME", "eth0", DIST_DEFAULT);
    /* the launcher sets the ranks of its processes, and its own run */
    assert_null (find (v, n, "RANK"));
    assert_null (find (v, n, "LOCAL_RANK"));
    assert_null (find (v, n, "TORCHELASTIC_RUN_ID"));
    /* fewer CPUs than processes: one thread each */
    s.cpus_per_task = 2;
    n = dist_env_build (DIST_PROFILE_LAUNCHER, &s, 1, 0, v);
    expect (v, n, "OMP_NUM_THREADS", "1", DIST_DEFAULT);
    /* a node rank times processes beyond 32 bits */
    s.node_rank = UINT32_MAX - 1;
    s.node_count = UINT32_MAX;
    s.nproc_per_node = 1024;
    n = dist_env_build (DIST_PROFILE_LAUNCHER, &s, 1, 0, v);
    expect (v, n, "BASE_RANK", "4398046509056", DIST_FACT);
    expect (v, n, "WORLD_SIZE", "4398046510080", DIST_FACT);
}

/* Lightning picks TorchElasticEnvironment over SLURMEnvironment whenever
 * TORCHELASTIC_RUN_ID is set: its profile is torch's without it. */
static void test_lightning_profile (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t n = dist_env_build (DIST_PROFILE_LIGHTNING, &s, 3, 1, v);

    expect (v, n, "RANK", "3", DIST_FACT);
    expect (v, n, "MASTER_ADDR", "10.213.7.11", DIST_DEFAULT);
    expect (v, n, "MASTER_PORT", "20035", DIST_DEFAULT);
    assert_null (find (v, n, "TORCHELASTIC_RUN_ID"));
    assert_null (find (v, n, "TORCHELASTIC_RESTART_COUNT"));
    assert_null (find (v, n, "TORCHELASTIC_MAX_RESTARTS"));
}

/* submitit's export() raises when one of the six variables it writes is set. */
static void test_submitit_profile (void **state)
{
    static const char *const exported[] = { "MASTER_ADDR", "MASTER_PORT", "RANK",
                                            "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE" };
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t i, n = dist_env_build (DIST_PROFILE_SUBMITIT, &s, 3, 1, v);

    for (i = 0; i < sizeof (exported) / sizeof (exported[0]); i++)
        if (find (v, n, exported[i]) != NULL)
            fail_msg ("%s is set", exported[i]);
    assert_null (find (v, n, "TORCHELASTIC_RUN_ID"));
    expect (v, n, "DIST_TRAIN_MASTER_ADDR", "10.213.7.11", DIST_FACT);
    expect (v, n, "DIST_TRAIN_MASTER_PORT", "20035", DIST_FACT);
    expect (v, n, "NODE_RANK", "1", DIST_FACT);
    expect (v, n, "GLOO_SOCKET_IFNAME", "eth0", DIST_DEFAULT);
}

static void test_large_ids (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t n;
    s.job_id = UINT32_MAX;
    s.step_id = UINT32_MAX;
    s.world_size = UINT32_MAX;
    n = dist_env_build (DIST_PROFILE_TORCH, &s, UINT32_MAX - 1, 0, v);
    expect (v, n, "TORCHELASTIC_RUN_ID", "slurm-4294967295.4294967295", DIST_FACT);
    expect (v, n, "RANK", "4294967294", DIST_FACT);
}

static void test_jax_profile (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t n = dist_env_build (DIST_PROFILE_JAX, &s, 2, 0, v);

    expect (v, n, "JAX_COORDINATOR_ADDRESS", "10.213.7.11:20035", DIST_DEFAULT);
    expect (v, n, "JAX_NUM_PROCESSES", "4", DIST_FACT);
    expect (v, n, "JAX_PROCESS_ID", "2", DIST_FACT);
    expect (v, n, "RANK", "2", DIST_FACT);
    expect (v, n, "MASTER_PORT", "20035", DIST_DEFAULT);
    /* torchrun's own variables belong to the torch profile only */
    assert_null (find (v, n, "TORCHELASTIC_RUN_ID"));
    assert_null (find (v, n, "ROLE_NAME"));
}

static void test_jax_ipv6_coordinator (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t n;
    snprintf (s.master_addr, sizeof (s.master_addr), "2001:db8::7");
    n = dist_env_build (DIST_PROFILE_JAX, &s, 0, 0, v);
    expect (v, n, "JAX_COORDINATOR_ADDRESS", "[2001:db8::7]:20035", DIST_DEFAULT);
}

static void test_watchdog_only_when_asked (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    size_t n = dist_env_build (DIST_PROFILE_TORCH, &s, 0, 0, v);

    assert_null (find (v, n, "DIST_TRAIN_WATCHDOG"));
    s.watchdog_s = 600;
    n = dist_env_build (DIST_PROFILE_JAX, &s, 0, 0, v);
    expect (v, n, "DIST_TRAIN_WATCHDOG", "600", DIST_DEFAULT);
    n = dist_env_build (DIST_PROFILE_TORCH, &s, 0, 0, v);
    expect (v, n, "DIST_TRAIN_WATCHDOG", "600", DIST_DEFAULT);
}

static void test_off_sets_nothing (void **state)
{
    struct dist_step s = two_nodes ();
    struct dist_var v[DIST_ENV_MAX];
    assert_int_equal (dist_env_build (DIST_PROFILE_OFF, &s, 0, 0, v), 0);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_second_node_rank3),
        cmocka_unit_test (test_unknown_ifname_left_out),
        cmocka_unit_test (test_names_unique),
        cmocka_unit_test (test_large_ids),
        cmocka_unit_test (test_jax_profile),
        cmocka_unit_test (test_jax_ipv6_coordinator),
        cmocka_unit_test (test_off_sets_nothing),
        cmocka_unit_test (test_watchdog_only_when_asked),
        cmocka_unit_test (test_launcher_profile),
        cmocka_unit_test (test_lightning_profile),
        cmocka_unit_test (test_submitit_profile),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
