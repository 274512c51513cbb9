/* test_address.c - MASTER_ADDR is never loopback; IPv4 wins over IPv6. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "libdist/address.h"

#define MAXA 8

struct fake_list {
    struct addrinfo ai[MAXA];
    struct sockaddr_storage ss[MAXA];
    size_t n;
};

/* Build a getaddrinfo()-shaped list from numeric strings. */
static struct addrinfo *make_list (struct fake_list *l, const char **addrs)
{
    memset (l, 0, sizeof (*l));
    for (; *addrs != NULL && l->n < MAXA; addrs++) {
        struct addrinfo *ai = &l->ai[l->n];
        struct sockaddr_in *in = (struct sockaddr_in *) &l->ss[l->n];
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &l->ss[l->n];
        if (inet_pton (AF_INET, *addrs, &in->sin_addr) == 1) {
            in->sin_family = AF_INET;
            ai->ai_family = AF_INET;
            ai->ai_addrlen = sizeof (*in);
        } else {
            assert_int_equal (inet_pton (AF_INET6, *addrs, &in6->sin6_addr), 1);
            in6->sin6_family = AF_INET6;
            ai->ai_family = AF_INET6;
            ai->ai_addrlen = sizeof (*in6);
        }
        ai->ai_addr = (struct sockaddr *) &l->ss[l->n];
        if (l->n > 0)
            l->ai[l->n - 1].ai_next = ai;
        l->n++;
    }
    return l->n > 0 ? &l->ai[0] : NULL;
}

static void check_pick (const char **addrs, const char *want)
{
    struct fake_list l;
    char out[DIST_ADDR_MAX] = "";
    struct addrinfo *list = make_list (&l, addrs);
    if (want == NULL) {
        assert_int_equal (dist_address_pick (list, out, sizeof (out)), -1);
    } else {
        assert_int_equal (dist_address_pick (list, out, sizeof (out)), 0);
        assert_string_equal (out, want);
    }
}

static void test_debian_127_0_1_1_skipped (void **state)
{
    const char *a[] = {"127.0.1.1", "10.213.7.11", NULL};
    check_pick (a, "10.213.7.11");
}

static void test_only_loopback_refused (void **state)
{
    const char *a[] = {"127.0.1.1", "::1", "127.0.0.1", NULL};
    check_pick (a, NULL);
    check_pick ((const char *[]){NULL}, NULL);
}

static void test_ipv4_preferred (void **state)
{
    const char *a[] = {"2001:db8::5", "192.0.2.7", NULL};
    check_pick (a, "192.0.2.7");
}

static void test_ipv6_global_used_when_alone (void **state)
{
    const char *a[] = {"fe80::1", "::ffff:127.0.0.1", "2001:db8::5", NULL};
    check_pick (a, "2001:db8::5");
    const char *b[] = {"fe80::1", NULL};
    check_pick (b, NULL);
}

static void test_is_loopback (void **state)
{
    struct fake_list l;
    const char *a[] = {"127.200.3.4",      "128.0.0.1",       "::1",
                       "::ffff:127.0.0.9", "::ffff:10.0.0.1", NULL};
    make_list (&l, a);
    assert_true (dist_address_is_loopback (l.ai[0].ai_addr));
    assert_false (dist_address_is_loopback (l.ai[1].ai_addr));
    assert_true (dist_address_is_loopback (l.ai[2].ai_addr));
    assert_true (dist_address_is_loopback (l.ai[3].ai_addr));
    assert_false (dist_address_is_loopback (l.ai[4].ai_addr));
}

/* slurmstepd reads names from /etc/hosts alone: the usual file, aliases, comments, case,
 * Debian's 127.0.1.1 line, IPv6, and lines that are not addresses. */
static void test_from_hosts (void **state)
{
    const char hosts[] = "127.0.0.1\tlocalhost\n"
                         "127.0.1.1 node1.cluster node1 # Debian's own line\n"
                         "# 10.9.9.9 node1\n"
                         "10.0.0.1 node1.cluster node1\n"
                         "  10.0.0.2\tNode2 n2   \r\n"
                         "fd00::3 node3\n"
                         "fe80::4 node4\n"
                         "not-an-address node5\n"
                         "10.0.0.6 node6-longer node66\n"
                         "10.0.0.7 node7";
    char out[DIST_ADDR_MAX];

    (void) state;
    assert_int_equal (dist_address_from_hosts (hosts, strlen (hosts), "node1", out, sizeof (out)),
                      0);
    assert_string_equal (out, "10.0.0.1");
    assert_int_equal (
        dist_address_from_hosts (hosts, strlen (hosts), "NODE1.cluster", out, sizeof (out)), 0);
    assert_string_equal (out, "10.0.0.1");
    assert_int_equal (dist_address_from_hosts (hosts, strlen (hosts), "n2", out, sizeof (out)), 0);
    assert_string_equal (out, "10.0.0.2");
    assert_int_equal (dist_address_from_hosts (hosts, strlen (hosts), "node3", out, sizeof (out)),
                      0);
    assert_string_equal (out, "fd00::3");
    assert_int_equal (dist_address_from_hosts (hosts, strlen (hosts), "node7", out, sizeof (out)),
                      0);
    assert_string_equal (out, "10.0.0.7");
    /* only loopback, link-local, no address, a part of a name, a comment, none */
    assert_int_equal (
        dist_address_from_hosts (hosts, strlen (hosts), "localhost", out, sizeof (out)), -1);
    assert_int_equal (dist_address_from_hosts (hosts, strlen (hosts), "node4", out, sizeof (out)),
                      -1);
    assert_int_equal (dist_address_from_hosts (hosts, strlen (hosts), "node5", out, sizeof (out)),
                      -1);
    assert_int_equal (dist_address_from_hosts (hosts, strlen (hosts), "node6", out, sizeof (out)),
                      -1);
    assert_int_equal (dist_address_from_hosts (hosts, strlen (hosts), "node9", out, sizeof (out)),
                      -1);
    assert_int_equal (dist_address_from_hosts ("", 0, "node1", out, sizeof (out)), -1);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_debian_127_0_1_1_skipped),
        cmocka_unit_test (test_only_loopback_refused),
        cmocka_unit_test (test_ipv4_preferred),
        cmocka_unit_test (test_ipv6_global_used_when_alone),
        cmocka_unit_test (test_is_loopback),
        cmocka_unit_test (test_from_hosts),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
