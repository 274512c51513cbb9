/* test_hostlist.c - Slurm's node lists expanded by libdist/hostlist.c: padding, several
 * expressions, brackets with lists, what is refused, the bounds, and the nth name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/hostlist.h"

/* The names each gives, joined by ' ', up to stop_after of them (then each returns 7). */
struct names {
    char text[1024];
    int count, stop_after;
};

static int collect (const char *name, void *arg)
{
    struct names *n = arg;
    size_t len = strlen (n->text);

    snprintf (n->text + len, sizeof (n->text) - len, "%s%s", len > 0 ? " " : "", name);
    return ++n->count == n->stop_after ? 7 : 0;
}

/* The whole list's names as text, or NULL when it is refused. */
static const char *expand (const char *list, int flags)
{
    static struct names n;

    memset (&n, 0, sizeof (n));
    n.stop_after = -1;
    return dist_hostlist_each (list, flags, collect, &n) == 0 ? n.text : NULL;
}

static void check_expand (const char *list, const char *want)
{
    const char *got = expand (list, 0);

    if (want == NULL) {
        if (got != NULL)
            fail_msg ("%s: refused expected, got \"%s\"", list, got);
        return;
    }
    if (got == NULL)
        fail_msg ("%s: refused, expected \"%s\"", list, want);
    assert_string_equal (got, want);
}

static void padding_and_expressions (void **state)
{
    (void) state;
    check_expand ("node[08-10]", "node08 node09 node10");
    check_expand ("n[007-9]", "n007 n008 n009");
    check_expand ("n[8-10]", "n8 n9 n10");
    check_expand ("n[0]", "n0");
    check_expand ("node[01-03,07],gpu5", "node01 node02 node03 node07 gpu5");
    check_expand ("login,node[1-2],gpu[1-2]", "login node1 node2 gpu1 gpu2");
    check_expand ("gpu[07-09,11]x", "gpu07x gpu08x gpu09x gpu11x");
    check_expand ("r1-a[3,1,2]", "r1-a3 r1-a1 r1-a2");
    check_expand ("[1-2]", "1 2");
    /* anything but brackets, separators and blanks is a name's: the caller checks it */
    check_expand ("n\n1,n-2.x", "n\n1 n-2.x");
}

static void bad_lists (void **state)
{
    const char *bad[] = {"",       ",",       "a,",     ",a",      "a,,b",         "n[1-",
                         "n[1-3",  "n1-3]",   "n]",     "n[3-1]",  "n[]",          "n[1,]",
                         "n[,1]",  "n[1,,2]", "n[-1]",  "n[1--2]", "n[1-]",        "n[a]",
                         "n[1-b]", "n[ 1]",   "n[[1]]", "n[1]]",   "a[1-2]b[3-4]", "a[1][2]",
                         "a b",    "a\tb",    "n[1]x]", "]n[1]",   "n[1-2]x[",     "n[+1]"};

    (void) state;
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
        check_expand (bad[i], NULL);
    assert_int_equal (dist_hostlist_each (NULL, 0, collect, &(struct names){.stop_after = -1}), -1);
    assert_int_equal (dist_hostlist_each ("a", 0, NULL, NULL), -1);
    assert_int_equal (dist_hostlist_each ("a", 0x80, collect, &(struct names){.stop_after = -1}),
                      -1);
}

/* As slurm_hostlist_create reads: blanks and tabs separate, empty expressions vanish. */
static void loose_lists (void **state)
{
    struct names n = {.stop_after = -1};

    (void) state;
    assert_int_equal (dist_hostlist_each (" a,, b\tn[1,3] ,", DIST_HOSTLIST_LOOSE, collect, &n), 0);
    assert_string_equal (n.text, "a b n1 n3");
    memset (&n, 0, sizeof (n));
    n.stop_after = -1;
    assert_int_equal (dist_hostlist_each ("", DIST_HOSTLIST_LOOSE, collect, &n), 0);
    assert_int_equal (n.count, 0);
    assert_int_equal (dist_hostlist_each (", \t", DIST_HOSTLIST_LOOSE, collect, &n), 0);
    assert_int_equal (n.count, 0);
    /* what the brackets hold is the same as strictly */
    assert_int_equal (dist_hostlist_each ("n[1, 2]", DIST_HOSTLIST_LOOSE, collect, &n), -1);
    assert_int_equal (dist_hostlist_each ("a[1]b[2]", DIST_HOSTLIST_LOOSE, collect, &n), -1);
}

/* each's non-zero return ends the walk and is returned; what follows is not looked at. */
static void each_stops (void **state)
{
    struct names n = {.stop_after = 2};

    (void) state;
    assert_int_equal (dist_hostlist_each ("a,n[1-5],b", 0, collect, &n), 7);
    assert_string_equal (n.text, "a n1");
    memset (&n, 0, sizeof (n));
    n.stop_after = 1;
    assert_int_equal (dist_hostlist_each ("a,n[", 0, collect, &n), 7);
    /* an expression is checked whole before its first name */
    memset (&n, 0, sizeof (n));
    n.stop_after = 1;
    assert_int_equal (dist_hostlist_each ("n[1-3,x]", 0, collect, &n), -1);
    assert_int_equal (n.count, 0);
}

static int count_only (const char *name, void *arg)
{
    (void) name;
    ++*(long *) arg;
    return 0;
}

/* A hostile list is refused before its first name, however large its ranges. */
static void bounds (void **state)
{
    char name[DIST_HOSTLIST_NAME_MAX + 8], list[2 * DIST_HOSTLIST_NAME_MAX];
    long calls = 0;

    (void) state;
    assert_int_equal (dist_hostlist_each ("n[0-1048575]", 0, count_only, &calls), 0);
    assert_int_equal (calls, DIST_HOSTLIST_MAX);
    calls = 0;
    assert_int_equal (dist_hostlist_each ("n[0-1048576]", 0, count_only, &calls), -1);
    assert_int_equal (dist_hostlist_each ("n[0-999999999]", 0, count_only, &calls), -1);
    assert_int_equal (dist_hostlist_each ("n[0-524287],m[0-524288]", 0, count_only, &calls), -1);
    assert_int_equal (calls, 524288); /* (the first expression, checked on its own) */
    calls = 0;
    assert_int_equal (dist_hostlist_each ("n[0-999999999999]", 0, count_only, &calls), -1);
    assert_int_equal (dist_hostlist_each ("n[1-9999999999]", 0, count_only, &calls), -1);
    assert_int_equal (calls, 0);
    /* names: DIST_HOSTLIST_NAME_MAX - 1 bytes at most, padding included */
    memset (name, 'a', sizeof (name));
    snprintf (list, sizeof (list), "%.*s", DIST_HOSTLIST_NAME_MAX - 1, name);
    assert_int_equal (dist_hostlist_each (list, 0, count_only, &calls), 0);
    snprintf (list, sizeof (list), "%.*s", DIST_HOSTLIST_NAME_MAX, name);
    assert_int_equal (dist_hostlist_each (list, 0, count_only, &calls), -1);
    snprintf (list, sizeof (list), "%.*s[8-10]", DIST_HOSTLIST_NAME_MAX - 3, name);
    assert_int_equal (dist_hostlist_each (list, 0, count_only, &calls), 0);
    snprintf (list, sizeof (list), "%.*s[8-100]", DIST_HOSTLIST_NAME_MAX - 3, name);
    assert_int_equal (dist_hostlist_each (list, 0, count_only, &calls), -1);
    snprintf (list, sizeof (list), "%.*s[001]", DIST_HOSTLIST_NAME_MAX - 3, name);
    assert_int_equal (dist_hostlist_each (list, 0, count_only, &calls), -1);
}

static void check_host (const char *list, long n, const char *want)
{
    char out[64];

    if (want == NULL) {
        assert_int_equal (dist_hostlist_nth (list, n, out, sizeof (out)), -1);
        return;
    }
    assert_int_equal (dist_hostlist_nth (list, n, out, sizeof (out)), 0);
    assert_string_equal (out, want);
}

/* The node of rank 0 by its index in SLURM_STEP_NODELIST, as the shim asks (shim/pmi2.c). */
static void host_lists (void **state)
{
    char tiny[6];

    (void) state;
    check_host ("node1", 0, "node1");
    check_host ("node1", 1, NULL);
    check_host ("node[1-3]", 2, "node3");
    check_host ("node[1-3]", 3, NULL);
    check_host ("node[1-3,7]", 3, "node7");
    check_host ("gpu[08-11]-ib", 2, "gpu10-ib");
    check_host ("login,node[1-2],gpu[1-2]", 0, "login");
    check_host ("login,node[1-2],gpu[1-2]", 2, "node2");
    check_host ("login,node[1-2],gpu[1-2]", 4, "gpu2");
    check_host ("n[0-999999999]", 999999999, "n999999999");
    check_host ("node[3-1]", 0, NULL);
    check_host ("node[1-3", 0, NULL);
    check_host ("node1-3]", 0, NULL);
    check_host ("node[1,]", 0, NULL);
    check_host ("node[]", 0, NULL);
    check_host ("node[a-b]", 0, NULL);
    check_host ("r[1-2]n[1-2]", 0, NULL);
    check_host ("node1,", 0, "node1");
    check_host ("node1,", 1, NULL);
    check_host ("", 0, NULL);
    check_host ("node1", -1, NULL);
    assert_int_equal (dist_hostlist_nth ("node123456", 0, tiny, sizeof (tiny)), -1);
    assert_int_equal (dist_hostlist_nth ("n[10-12]", 1, tiny, sizeof (tiny)), 0);
    assert_string_equal (tiny, "n11");
}

/* nth agrees with each, pads as it does, and is refused past the end and for bad text. */
static void nth_beyond_and_padding (void **state)
{
    const char *lists[] = {"node[01-03,07],gpu5", "a,b[9-11]c,d[000-002,7]", "x[0]"};

    (void) state;
    for (size_t i = 0; i < sizeof (lists) / sizeof (lists[0]); i++) {
        char all[1024], out[DIST_HOSTLIST_NAME_MAX], *save = NULL, *name;
        long n = 0;
        snprintf (all, sizeof (all), "%s", expand (lists[i], 0));
        for (name = strtok_r (all, " ", &save); name != NULL; name = strtok_r (NULL, " ", &save))
            check_host (lists[i], n++, name);
        assert_int_equal (dist_hostlist_nth (lists[i], n, out, sizeof (out)), -1);
        assert_int_equal (dist_hostlist_nth (lists[i], 1L << 40, out, sizeof (out)), -1);
    }
    /* far past a huge range, with nothing expanded */
    check_host ("n[0-999999999],m[5-999999999],last", 1999999994L, "m999999999");
    check_host ("n[0-999999999],m[5-999999999],last", 1999999995L, "last");
    check_host ("n[0-999999999],m[5-999999999],last", 1999999996L, NULL);
    /* text past the name asked for is not looked at; up to it, it is */
    check_host ("a,n[", 0, "a");
    check_host ("a,n[", 1, NULL);
    check_host ("n[1-2,x]", 0, NULL);
    check_host ("a b", 0, NULL);
    check_host (NULL, 0, NULL);
    assert_int_equal (dist_hostlist_nth ("a", 0, NULL, 4), -1);
    assert_int_equal (dist_hostlist_nth ("a", 0, (char[4]){0}, 0), -1);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (padding_and_expressions),
        cmocka_unit_test (bad_lists),
        cmocka_unit_test (loose_lists),
        cmocka_unit_test (each_stops),
        cmocka_unit_test (bounds),
        cmocka_unit_test (host_lists),
        cmocka_unit_test (nth_beyond_and_padding),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
