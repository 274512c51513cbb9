/* test_port.c - MASTER_PORT stays in range and differs where it must. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/port.h"

static void test_in_range (void **state)
{
    uint32_t job, step;
    for (job = 0; job < 5000; job += 7)
        for (step = 0; step < 40; step++) {
            uint16_t p = dist_port_for_step (20000, 32767, job, step);
            assert_in_range (p, 20000, 32767);
        }
    assert_int_equal (dist_port_for_step (20000, 32767, UINT32_MAX, UINT32_MAX),
                      dist_port_for_step (20000, 32767, UINT32_MAX, UINT32_MAX));
    assert_in_range (dist_port_for_step (65535, 65535, UINT32_MAX, 3), 65535, 65535);
    assert_in_range (dist_port_for_step (1024, 65535, UINT32_MAX, 3), 1024, 65535);
}

static void test_deterministic (void **state)
{
    assert_int_equal (dist_port_for_step (20000, 32767, 4242, 1),
                      dist_port_for_step (20000, 32767, 4242, 1));
}

/* Concurrent steps of one job never share a port, MASTER_PORT or RAS. */
static void test_steps_of_a_job_differ (void **state)
{
    uint16_t seen[2 * DIST_PORT_STEPS_PER_JOB];
    uint32_t s, t;
    for (s = 0; s < DIST_PORT_STEPS_PER_JOB; s++) {
        seen[2 * s] = dist_port_for_step (20000, 32767, 123456, s);
        seen[2 * s + 1] = dist_ras_port_for_step (20000, 32767, 123456, s);
        for (t = 0; t < 2 * s; t++) {
            assert_int_not_equal (seen[2 * s], seen[t]);
            assert_int_not_equal (seen[2 * s + 1], seen[t]);
        }
        assert_int_not_equal (seen[2 * s], seen[2 * s + 1]);
    }
    /* the pairs come round again after DIST_PORT_STEPS_PER_JOB steps */
    assert_int_equal (dist_port_for_step (20000, 32767, 123456, DIST_PORT_STEPS_PER_JOB + 1),
                      seen[2]);
}

/* Jobs that run at the same time have close ids: none of their first
 * steps may collide, across a window of hundreds of jobs. */
static void test_neighbour_jobs_differ (void **state)
{
    static uint8_t used[65536];
    const uint32_t first = 987654, jobs = 700;
    uint32_t j, s;
    memset (used, 0, sizeof (used));
    for (j = first; j < first + jobs; j++)
        for (s = 0; s < 4; s++) {
            uint16_t p = dist_port_for_step (20000, 32767, j, s);
            uint16_t r = dist_ras_port_for_step (20000, 32767, j, s);
            assert_int_equal (used[p], 0);
            used[p] = 1;
            assert_int_equal (used[r], 0);
            used[r] = 1;
        }
}

static void test_single_port_range (void **state)
{
    assert_int_equal (dist_port_for_step (29500, 29500, 77, 5), 29500);
    /* no second port: NCCL's RAS keeps its own default */
    assert_int_equal (dist_ras_port_for_step (29500, 29500, 77, 5), 0);
    assert_int_equal (dist_ras_port_for_step (29500, 29501, 77, 5), 29501);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_in_range),
        cmocka_unit_test (test_deterministic),
        cmocka_unit_test (test_steps_of_a_job_differ),
        cmocka_unit_test (test_neighbour_jobs_differ),
        cmocka_unit_test (test_single_port_range),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
