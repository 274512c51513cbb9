/* test_layout.c - rank-to-node maps checked against what srun really did
 * on the test cluster (see tests/integration/contract.bats). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/layout.h"

static void test_tasks_per_node (void **state)
{
    uint32_t c[16];
    assert_int_equal (dist_tasks_per_node_parse ("2(x3),1", c, 16), 4);
    assert_int_equal (c[0], 2);
    assert_int_equal (c[2], 2);
    assert_int_equal (c[3], 1);
    assert_int_equal (dist_tasks_per_node_parse ("3,1", c, 16), 2);
    assert_int_equal (c[1], 1);
    assert_int_equal (dist_tasks_per_node_parse ("1(x16)", c, 16), 16);
}

static void test_tasks_per_node_bad (void **state)
{
    uint32_t c[4];
    const char *bad[] = {"",   "x",   "2(x",   "2(x0)",       "2(x3", "2,",
                         ",2", "2;1", "1(x5)", "99999999999", "-1",   "2(x2)3"};
    size_t i;
    assert_int_equal (dist_tasks_per_node_parse (NULL, c, 4), -1);
    for (i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
        assert_int_equal (dist_tasks_per_node_parse (bad[i], c, 4), -1);
}

static void test_distribution_names (void **state)
{
    assert_int_equal (dist_distribution_parse (NULL), DIST_DIST_BLOCK);
    assert_int_equal (dist_distribution_parse ("block:cyclic"), DIST_DIST_BLOCK);
    assert_int_equal (dist_distribution_parse ("cyclic"), DIST_DIST_CYCLIC);
    assert_int_equal (dist_distribution_parse ("cyclic:block,Pack"), DIST_DIST_CYCLIC);
    assert_int_equal (dist_distribution_parse ("plane"), DIST_DIST_PLANE);
    assert_int_equal (dist_distribution_parse ("arbitrary"), DIST_DIST_ARBITRARY);
    assert_int_equal (dist_distribution_parse ("blocky"), DIST_DIST_UNKNOWN);
}

static void expect_map (enum dist_distribution d, uint32_t plane, const char *tpn,
                        const uint32_t *want, size_t ntasks)
{
    uint32_t counts[8], got[16];
    int n = dist_tasks_per_node_parse (tpn, counts, 8);
    assert_true (n > 0);
    assert_int_equal (dist_layout_assign (d, plane, counts, (size_t) n, got, ntasks), 0);
    assert_memory_equal (got, want, ntasks * sizeof (*want));
}

static void test_block (void **state)
{
    const uint32_t want[] = {0, 0, 0, 1}; /* srun -N2 -n4 here: 3 + 1 */
    expect_map (DIST_DIST_BLOCK, 0, "3,1", want, 4);
}

static void test_cyclic_skips_full_nodes (void **state)
{
    const uint32_t want[] = {0, 1, 2, 0, 0}; /* srun -N3 -n5 -m cyclic */
    expect_map (DIST_DIST_CYCLIC, 0, "3,1(x2)", want, 5);
}

static void test_plane (void **state)
{
    const uint32_t want[] = {0, 0, 1, 0, 0}; /* srun -N2 -n5 -m plane=2 */
    const uint32_t even[] = {0, 0, 1, 1, 0, 0, 1, 1};
    expect_map (DIST_DIST_PLANE, 2, "4,1", want, 5);
    expect_map (DIST_DIST_PLANE, 2, "4(x2)", even, 8);
}

static void test_refusals (void **state)
{
    uint32_t counts[] = {2, 2}, out[4];
    assert_int_equal (dist_layout_assign (DIST_DIST_BLOCK, 0, counts, 2, out, 3), -1);
    assert_int_equal (dist_layout_assign (DIST_DIST_ARBITRARY, 0, counts, 2, out, 4), -1);
    assert_int_equal (dist_layout_assign (DIST_DIST_PLANE, 0, counts, 2, out, 4), -1);
    assert_int_equal (dist_layout_assign (DIST_DIST_CYCLIC, 0, counts, 0, out, 0), -1);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_tasks_per_node),
        cmocka_unit_test (test_tasks_per_node_bad),
        cmocka_unit_test (test_distribution_names),
        cmocka_unit_test (test_block),
        cmocka_unit_test (test_cyclic_skips_full_nodes),
        cmocka_unit_test (test_plane),
        cmocka_unit_test (test_refusals),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
