/* test_fuzz_regressions.c - what the fuzz harnesses (tests/fuzz) found,
 * replayed through fuzz_spank's own code with ASan and UBSan: the harness
 * aborts where the plugin breaks a promise, and the test fails.
 *
 * A new case that the plugin still fails goes in XFAIL_TESTS
 * (tests/fuzz/local.mk) until its fix lands: then XPASS fails the suite and
 * the test leaves that list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void replay (const char *input)
{
    assert_int_equal (LLVMFuzzerTestOneInput ((const uint8_t *) input, strlen (input)), 0);
}

/* fuzz_spank, crash-e6716f10...: a node name of the step's SLURM_STEP_NODELIST
 * (the job's environment: a user's own launch request can hold anything;
 * Slurm's hostlist splits only on commas, spaces and tabs) reached slurmd's
 * log unchanged in fail fast's message (spank/failfast.c, slurm_info), where
 * a newline forges a log line.  dist_train.node_name is copied from the
 * hostlist in spank/remote.c (collect_step) without dist_printable. */
static void test_node_name_in_fail_fast_log (void **state)
{
    replay ("option torch\n"
            "item job=88 step=2 nnodes=2 nodeid=1 ntasks=2 local=1 base=1 cores=0 exit=256"
            " exittask=0\n"
            "env SLURM_STEP_NODELIST=n1,n2\\nslurmd:error:forged\n"
            "env SLURM_DIST_TRAIN_SRUN=step=88.2 rank0=n1 addr=10.9.0.1 fail_fast=1\n");
}

/* SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE were once read into
 * 8 KiB buffers, and a step of 1,500 nodes whose names do not compress
 * (12 KiB and more) failed every task with "cannot read the step's nodes".
 * Here 1,500 names of 9 to 13 characters (about 17 KiB), the last node's
 * task: it must get its rank and the step's size. */
static void test_1500_nodes_of_scattered_names (void **state)
{
    size_t size = 1 << 16, len = 0;
    char *input = malloc (size), first[32] = "";

    assert_non_null (input);
    len += (size_t) snprintf (input + len, size - len,
                              "option torch\n"
                              "item job=91 step=0 nnodes=1500 nodeid=1499 ntasks=1500 local=1"
                              " base=1499 cores=0\n"
                              "env SLURM_STEP_TASKS_PER_NODE=1(x1500)\n"
                              "env SLURM_STEP_NODELIST=");
    for (int n = 0; n < 1500; n++) {
        char name[32];
        /* racks and slots in no order hostlist can range */
        snprintf (name, sizeof (name), "r%dgpu%dx%d", (n * 7) % 61, n * 13 + 5, n % 3);
        if (n == 0)
            snprintf (first, sizeof (first), "%s", name);
        len += (size_t) snprintf (input + len, size - len, "%s%s", n > 0 ? "," : "", name);
    }
    assert_true (len > 16384);
    len += (size_t) snprintf (
        input + len, size - len,
        "\nenv SLURM_DIST_TRAIN_SRUN=step=91.0 rank0=%s addr=10.9.0.1 fail_fast=1\n"
        "expect WORLD_SIZE=1500\n"
        "expect RANK=1499\n"
        "expect GROUP_RANK=1499\n"
        "expect MASTER_ADDR=10.9.0.1\n",
        first);
    assert_true (len < size);
    replay (input);
    free (input);
}

/* pyxis, run before the plugin, copies a container's environment into each
 * task: the image's MASTER_ADDR and MASTER_PORT, and WORLD_SIZE from enroot's
 * hook.  What srun's environment held is the user's (MASTER_PORT here) and
 * is kept; the rest is the plugin's, whatever the task's environment held
 * when its task_init ran. */
static void test_values_over_a_container_environment (void **state)
{
    replay ("option torch\n"
            "item job=95 step=3 nnodes=2 nodeid=1 ntasks=4 local=2 base=2 cores=0-1\n"
            "env SLURM_STEP_NODELIST=n1,n2\n"
            "env SLURM_DIST_TRAIN_SRUN=step=95.3 rank0=n1 addr=10.9.0.1 fail_fast=1\n"
            "env MASTER_PORT=23456\n"
            "taskenv MASTER_PORT=29500\n"
            "taskenv MASTER_ADDR=127.0.0.1\n"
            "taskenv WORLD_SIZE=2\n"
            "taskenv OMP_NUM_THREADS=8\n"
            "expect MASTER_PORT=23456\n"
            "expect MASTER_ADDR=10.9.0.1\n"
            "expect WORLD_SIZE=4\n"
            "expect OMP_NUM_THREADS=1\n");
}

/* The launcher profile: one task on the second of two nodes, with the node's 4 GPUs,
 * starts 4 processes; the user's MASTER_PORT is what torchrun is told too. */
static void test_launcher_counts_the_launched_processes (void **state)
{
    replay ("option launcher\n"
            "item job=96 step=0 nnodes=2 nodeid=1 ntasks=2 local=1 base=1 cpus=2 cores=0-1\n"
            "env SLURM_STEP_NODELIST=n1,n2\n"
            "env CUDA_VISIBLE_DEVICES=0,1,2,3\n"
            "env SLURM_STEP_GPUS=0,1,2,3\n"
            "env SLURM_DIST_TRAIN_SRUN=step=96.0 rank0=n1 addr=10.9.0.1 fail_fast=1\n"
            "env MASTER_PORT=23456\n"
            "expect PET_NPROC_PER_NODE=4\n"
            "expect PET_NODE_RANK=1\n"
            "expect PET_MASTER_PORT=23456\n"
            "expect PET_MASTER_ADDR=10.9.0.1\n"
            "expect WORLD_SIZE=8\n"
            "expect BASE_RANK=4\n"
            "expect CUDA_VISIBLE_DEVICES=0,1,2,3\n");
}

/* fuzz_spank, crash-ae8566e1...: the site's topology file (HWLOC_XMLFILE in
 * slurmd's environment, or plugstack's topology=) named with a carriage
 * return, and absent: its name reached slurmd's log in the "cannot read it"
 * line unchanged (spank/topocache.c, load_site_file). */
static void test_topology_file_name_in_log (void **state)
{
    replay ("option torch\n"
            "item job=97 step=0 nnodes=1 nodeid=0 ntasks=1 local=1 base=0 cores=0\n"
            "env SLURM_STEP_NODELIST=n1\n"
            "env SLURM_DIST_TRAIN_SRUN=step=97.0 rank0=n1 addr=10.9.0.1 fail_fast=1\n"
            "topology amd\\r\\nslurmd: error: forged.xml\n");
}

int main (int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_node_name_in_fail_fast_log),
        cmocka_unit_test (test_1500_nodes_of_scattered_names),
        cmocka_unit_test (test_values_over_a_container_environment),
        cmocka_unit_test (test_launcher_counts_the_launched_processes),
        cmocka_unit_test (test_topology_file_name_in_log),
    };

    LLVMFuzzerInitialize (&argc, &argv);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
