/* test_netif.c - the interface that holds a local address, and the comparison of two
 * addresses it rests on. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/netif.h"

static struct sockaddr_storage addr (const char *text, uint16_t port)
{
    struct sockaddr_storage ss;
    struct sockaddr_in *in = (struct sockaddr_in *) &ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;

    memset (&ss, 0, sizeof (ss));
    if (inet_pton (AF_INET, text, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons (port);
    } else {
        assert_int_equal (inet_pton (AF_INET6, text, &in6->sin6_addr), 1);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons (port);
    }
    return ss;
}

static bool same (const char *a, uint16_t pa, const char *b, uint16_t pb)
{
    struct sockaddr_storage x = addr (a, pa), y = addr (b, pb);
    return dist_same_host ((struct sockaddr *) &x, (struct sockaddr *) &y);
}

static void test_same_host (void **state)
{
    assert_true (same ("10.0.0.1", 1, "10.0.0.1", 2)); /* ports aside */
    assert_false (same ("10.0.0.1", 1, "10.0.0.2", 1));
    assert_true (same ("2001:db8::7", 0, "2001:db8::7", 9));
    assert_false (same ("2001:db8::7", 0, "2001:db8::8", 0));
    /* one host's IPv4 address and its IPv4-mapped form are two families */
    assert_false (same ("10.0.0.1", 0, "::ffff:10.0.0.1", 0));
}

static void test_interface_of (void **state)
{
    struct sockaddr_storage lo = addr ("127.0.0.1", 0), none = addr ("192.0.2.77", 0);
    char ifname[16] = "x", tiny[2] = "x";

    if (dist_interface_of ((struct sockaddr *) &lo, ifname, sizeof (ifname)) < 0)
        skip (); /* no loopback interface here */
    assert_true (ifname[0] != '\0');
    /* a name that does not fit is not cut to another */
    assert_int_equal (dist_interface_of ((struct sockaddr *) &lo, tiny, sizeof (tiny)), -1);
    assert_string_equal (tiny, "");
    /* TEST-NET-1: no interface holds it */
    assert_int_equal (dist_interface_of ((struct sockaddr *) &none, ifname, sizeof (ifname)), -1);
    assert_string_equal (ifname, "");
}

/* pyxis's --container-unshare list: net among its names, whole names only. */
static void test_unshare_lists_net (void **state)
{
    (void) state;
    assert_true (dist_unshare_lists_net ("net"));
    assert_true (dist_unshare_lists_net ("ipc,net"));
    assert_true (dist_unshare_lists_net ("net,ipc,uts"));
    assert_true (dist_unshare_lists_net (",net"));
    assert_false (dist_unshare_lists_net (NULL));
    assert_false (dist_unshare_lists_net (""));
    assert_false (dist_unshare_lists_net ("ipc,uts"));
    assert_false (dist_unshare_lists_net ("network"));
    assert_false (dist_unshare_lists_net ("ne"));
    assert_false (dist_unshare_lists_net ("netns,ipc"));
    assert_false (dist_unshare_lists_net ("ipc,,uts"));
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_same_host),
        cmocka_unit_test (test_interface_of),
        cmocka_unit_test (test_unshare_lists_net),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
