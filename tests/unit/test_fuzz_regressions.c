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
            "env DIST_TRAIN_SRUN=step=88.2 rank0=n1 addr=10.9.0.1 fail_fast=1\n");
}

int main (int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_node_name_in_fail_fast_log),
    };

    LLVMFuzzerInitialize (&argc, &argv);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
