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
    const char *hosts[] = {"node1", "node1", "node2"};
    char *t = dist_tf_config_prefix (hosts, 3, 20016, 20000, 32767);
    assert_non_null (t);
    assert_string_equal (t, "{\"cluster\": {\"worker\": [\"node1:20016\", \"node1:20017\", "
                            "\"node2:20018\"]}, \"task\": {\"type\": \"worker\", \"index\": ");
    free (t);
}

static void test_ports_wrap_in_range (void **state)
{
    const char *hosts[] = {"a", "b", "c"};
    char *t = dist_tf_config_prefix (hosts, 3, 30001, 30000, 30002);
    assert_non_null (t);
    assert_non_null (strstr (t, "\"a:30001\", \"b:30002\", \"c:30000\""));
    free (t);
}

static void test_refusals (void **state)
{
    const char *hosts[] = {"a", "b", "c"};
    const char *bad[] = {"a", "x\"y", "c"};
    assert_null (dist_tf_config_prefix (hosts, 3, 30000, 30000, 30001)); /* ports repeat */
    assert_null (dist_tf_config_prefix (bad, 3, 20000, 20000, 32767));
    assert_null (dist_tf_config_prefix (hosts, 0, 20000, 20000, 32767));
    assert_null (dist_tf_config_prefix (hosts, 3, 100, 20000, 32767));
}

/* Linux refuses an environment string above 128 KiB: thousands of ranks
 * are refused here, not by execve in every task. */
static void test_too_long (void **state)
{
    static const char *hosts[8000];
    char *t;
    size_t i, n;

    for (i = 0; i < 8000; i++)
        hosts[i] = "gpu-node-0123";
    assert_false (dist_tf_config_fits (hosts, 8000));
    assert_null (dist_tf_config_prefix (hosts, 8000, 20000, 20000, 32767));
    /* the largest that fits is built, and stays within the limit */
    for (n = 8000; n > 0 && !dist_tf_config_fits (hosts, n); n--)
        ;
    assert_true (n > 4000 && n < 8000);
    t = dist_tf_config_prefix (hosts, n, 20000, 20000, 32767);
    assert_non_null (t);
    assert_true (strlen (t) + sizeof ("TF_CONFIG=") + 6 < 128 * 1024);
    free (t);
    assert_null (dist_tf_config_prefix (hosts, n + 1, 20000, 20000, 32767));
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_three_workers),
        cmocka_unit_test (test_ports_wrap_in_range),
        cmocka_unit_test (test_refusals),
        cmocka_unit_test (test_too_long),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
