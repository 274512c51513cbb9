/* test_tfconfig.c - TF_CONFIG's workers and their unique ports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/tfconfig.h"

static void test_three_workers (void **state)
{
    const char *hosts[] = { "node1", "node1", "node2" };
    char *t = dist_tf_config_prefix (hosts, 3, 20016, 20000, 32767);
    assert_non_null (t);
    assert_string_equal (t, "{\"cluster\": {\"worker\": [\"node1:20016\", \"node1:20017\", "
                            "\"node2:20018\"]}, \"task\": {\"type\": \"worker\", \"index\": ");
    free (t);
}

static void test_ports_wrap_in_range (void **state)
{
    const char *hosts[] = { "a", "b", "c" };
    char *t = dist_tf_config_prefix (hosts, 3, 30001, 30000, 30002);
    assert_non_null (t);
    assert_non_null (strstr (t, "\"a:30001\", \"b:30002\", \"c:30000\""));
    free (t);
}

static void test_refusals (void **state)
{
    const char *hosts[] = { "a", "b", "c" };
    const char *bad[] = { "a", "x\"y", "c" };
    assert_null (dist_tf_config_prefix (hosts, 3, 30000, 30000, 30001)); /* ports repeat */
    assert_null (dist_tf_config_prefix (bad, 3, 20000, 20000, 32767));
    assert_null (dist_tf_config_prefix (hosts, 0, 20000, 20000, 32767));
    assert_null (dist_tf_config_prefix (hosts, 3, 100, 20000, 32767));
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_three_workers),
        cmocka_unit_test (test_ports_wrap_in_range),
        cmocka_unit_test (test_refusals),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
