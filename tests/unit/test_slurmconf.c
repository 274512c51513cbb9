/* test_slurmconf.c - a Slurm configuration file's keys, read as Slurm reads them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/slurmconf.h"

/* mpi.conf as Slurm reads it: the fence type is what the shim refuses "tree" by. */
static bool fence_of (const char *text, char *out, size_t len)
{
    return dist_slurm_conf_value (text, strlen (text), "PMIxCollFence", out, len);
}

static void fence_type_from_mpi_conf (void **state)
{
    char v[16];

    assert_true (fence_of ("PMIxCollFence=tree\n", v, sizeof (v)));
    assert_string_equal (v, "tree");
    assert_true (fence_of ("# site\npmixcollfence = ring # why\n", v, sizeof (v)));
    assert_string_equal (v, "ring");
    assert_true (fence_of ("  PMIXCOLLFENCE=\"tree\"\r\n", v, sizeof (v)));
    assert_string_equal (v, "tree");
    /* The last line wins, as in Slurm. */
    assert_true (fence_of ("PMIxCollFence=tree\nPMIxCollFence=mixed", v, sizeof (v)));
    assert_string_equal (v, "mixed");
    assert_false (fence_of ("#PMIxCollFence=tree\n", v, sizeof (v)));
    assert_false (fence_of ("PMIxCollFenceX=tree\nPMIxDebug=1\n", v, sizeof (v)));
    assert_false (fence_of ("PMIxCollFence\n", v, sizeof (v)));
    assert_false (fence_of ("", v, sizeof (v)));
    /* A value longer than the buffer is not cut to a shorter one. */
    assert_false (fence_of ("PMIxCollFence=treetreetreetreetree", v, sizeof (v)));
    /* No NUL in the text needed: only len bytes are read. */
    assert_true (
        dist_slurm_conf_value ("PMIxCollFence=ringXX", 18, "PMIxCollFence", v, sizeof (v)));
    assert_string_equal (v, "ring");
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (fence_type_from_mpi_conf),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
