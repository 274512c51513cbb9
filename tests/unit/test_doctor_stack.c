/* test_doctor_stack.c - dist-train-doctor's verdicts on a node's collective
 * stack: for each check the healthy case and every bad case, with the line
 * that names the fix.  A PMIx 5.0.8 server cannot be made on this machine
 * (Debian 12 has 4.2.2): the table of releases here is that check's test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tools/doctor/stack.h"

#define MSG 512

static void test_version_parse (void **state)
{
    struct doctor_version v;

    assert_int_equal (
        doctor_version_parse ("OpenPMIx 4.2.2 (PMIx Standard: 4.2, Stable ABI: 0.0)", &v), 0);
    assert_int_equal (v.major * 10000 + v.minor * 100 + v.micro, 40202);
    assert_int_equal (doctor_version_parse ("5.0.8rc1", &v), 0);
    assert_int_equal (v.micro, 8);
    assert_int_equal (doctor_version_parse ("22.05", &v), 0);
    assert_int_equal (v.micro, 0);
    assert_int_equal (doctor_version_parse ("", &v), -1);
    assert_int_equal (doctor_version_parse ("PMIx", &v), -1);
    assert_int_equal (doctor_version_parse ("5.", &v), -1);
}

/* Debian 12 as it is here: Slurm 22.05.8, mpi_pmix_v4.so, PMIx 4.2.2 loaded. */
static struct doctor_pmix_facts debian12 (void)
{
    return (struct doctor_pmix_facts){
        .step_mpi = "none",
        .plugin = "mpi_pmix_v4.so",
        .plugin_pmix = 4,
        .lib = "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so",
        .lib_error = "",
        .server = "4.2.2",
        .client = "4.2.2",
        .slurm = "22.05.8",
    };
}

static void test_pmix_lib (void **state)
{
    struct doctor_pmix_facts f = debian12 ();
    char msg[MSG];

    assert_int_equal (doctor_check_pmix_lib (&f, msg, sizeof (msg)), DOCTOR_FINE);
    assert_string_equal (msg, "");
    /* libpmix2 without libpmix-dev: the unversioned name is missing */
    f.lib_error = "cannot open shared object file: No such file or directory";
    assert_int_equal (doctor_check_pmix_lib (&f, msg, sizeof (msg)), DOCTOR_WARN);
    assert_non_null (strstr (msg, "mpi/pmix (mpi_pmix_v4.so) cannot open "
                                  "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so"));
    assert_non_null (strstr (msg, "\"can not load PMIx library\"; install libpmix-dev"));
    /* from 23.11 the versioned name, which the runtime package ships */
    f.lib = "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2";
    f.plugin = "mpi_pmix_v5.so";
    assert_int_equal (doctor_check_pmix_lib (&f, msg, sizeof (msg)), DOCTOR_WARN);
    assert_non_null (strstr (msg, "install libpmix2 (Debian 13: libpmix2t64)"));
    /* Slurm without mpi/pmix (Debian's 26.05): nothing to load */
    f.plugin = "";
    assert_int_equal (doctor_check_pmix_lib (&f, msg, sizeof (msg)), DOCTOR_FINE);
}

struct hang_case {
    const char *slurm, *pmix;
    int built;
    bool hangs;
};

static void test_pmix_hang_table (void **state)
{
    static const struct hang_case cases[] = {
        {"22.05.8", "4.2.2", 4, false}, /* Debian 12 */
        {"24.11.5", "5.0.7", 5, false}, /* Debian 13 */
        {"24.11.5", "5.0.8", 5, true},  {"24.11.5", "5.0.9", 5, true},
        {"24.11.5", "5.0.10", 5, true}, /* still passes the callback */
        {"22.05.8", "6.0.0", 5, true},  {"25.05.1", "5.0.8", 5, true},
        {"25.05.2", "5.0.8", 5, false}, {"25.05.3", "5.0.9", 5, false},
        {"25.05.4", "5.0.8", 5, true},  {"25.05.4", "6.0.0", 6, false},
        {"25.11.1", "5.0.9", 5, true},  {"25.11.2", "5.0.8", 5, false},
        {"25.11.2", "5.0.8", 4, true}, /* an mpi_pmix_v4 over a 5.0.8 library */
        {"26.05.5", "7.0.0", 0, false}, /* Debian forky: no mpi/pmix, but fixed */
    };
    struct doctor_version s, p;

    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
        assert_int_equal (doctor_version_parse (cases[i].slurm, &s), 0);
        assert_int_equal (doctor_version_parse (cases[i].pmix, &p), 0);
        if (doctor_pmix_hangs (&s, cases[i].built, &p) != cases[i].hangs)
            fail_msg ("Slurm %s, PMIx %s, built for %d: expected %s", cases[i].slurm, cases[i].pmix,
                      cases[i].built, cases[i].hangs ? "a hang" : "none");
    }
}

static void test_pmix_hang (void **state)
{
    struct doctor_pmix_facts f = debian12 ();
    char msg[MSG];

    assert_int_equal (doctor_check_pmix_hang (&f, msg, sizeof (msg)), DOCTOR_FINE);
    f.slurm = "24.11.5";
    f.plugin = "mpi_pmix_v5.so";
    f.plugin_pmix = 5;
    f.server = "5.0.8";
    assert_int_equal (doctor_check_pmix_hang (&f, msg, sizeof (msg)), DOCTOR_WARN);
    assert_non_null (strstr (msg, "PMIx 5.0.8 (Slurm's PMIx server) under Slurm 24.11.5's "
                                  "mpi/pmix (mpi_pmix_v5.so)"));
    assert_non_null (strstr (msg, "(srun --mpi=pmix) hangs in PMIx_Init; upgrade Slurm to "
                                  "25.11.2 or later, or install a PMIx older than 5.0.8"));
    /* this very step runs under mpi/pmix: its clients hang, the doctor fails */
    f.step_mpi = "pmix_v5";
    assert_int_equal (doctor_check_pmix_hang (&f, msg, sizeof (msg)), DOCTOR_FAIL);
    assert_non_null (strstr (msg, "every PMIx client of this step hangs in PMIx_Init"));
    /* an unknown server version says nothing */
    f.server = "";
    assert_int_equal (doctor_check_pmix_hang (&f, msg, sizeof (msg)), DOCTOR_FINE);
}

static void test_range_parse (void **state)
{
    struct doctor_range r;

    assert_int_equal (doctor_range_parse ("20000-32767", &r), 0);
    assert_true (r.lo == 20000 && r.hi == 32767);
    assert_int_equal (doctor_range_parse ("32768\t60999\n", &r), 0);
    assert_true (r.lo == 32768 && r.hi == 60999);
    assert_int_equal (doctor_range_parse ("", &r), -1);
    assert_true (r.lo < 0);
    assert_int_equal (doctor_range_parse ("40000-30000", &r), -1);
    assert_int_equal (doctor_range_parse ("1-70000", &r), -1);
    assert_int_equal (doctor_range_parse ("1-2x", &r), -1);
    assert_int_equal (doctor_range_parse (NULL, &r), -1);
}

/* The plugin's default range beside Linux's defaults. */
static struct doctor_port_facts defaults (void)
{
    return (struct doctor_port_facts){
        .plugin = {20000, 32767},
        .srun = {-1, -1},
        .ephemeral = {32768, 60999},
        .reserved = "",
        .master_port = 20001,
    };
}

static void test_srun_ports (void **state)
{
    struct doctor_port_facts f = defaults ();
    char msg[MSG];

    assert_int_equal (doctor_check_srun_ports (&f, msg, sizeof (msg)), DOCTOR_FINE);
    f.srun = (struct doctor_range){60001, 63000};
    assert_int_equal (doctor_check_srun_ports (&f, msg, sizeof (msg)), DOCTOR_FINE);
    f.srun = (struct doctor_range){30000, 31000};
    assert_int_equal (doctor_check_srun_ports (&f, msg, sizeof (msg)), DOCTOR_WARN);
    assert_string_equal (msg, "port_range 20000-32767 overlaps SrunPortRange 30000-31000 "
                              "(slurm.conf): srun listens on those ports where it runs, often "
                              "rank 0's node, and can hold MASTER_PORT; ask the admin to move "
                              "port_range (plugstack.conf) or SrunPortRange apart");
}

static void test_ephemeral_ports (void **state)
{
    struct doctor_port_facts f = defaults ();
    char msg[MSG];

    assert_int_equal (doctor_check_ephemeral_ports (&f, msg, sizeof (msg)), DOCTOR_FINE);
    /* an admin's port_range that reaches into the kernel's */
    f.plugin = (struct doctor_range){30000, 40000};
    f.master_port = 35000;
    assert_int_equal (doctor_check_ephemeral_ports (&f, msg, sizeof (msg)), DOCTOR_WARN);
    assert_non_null (strstr (msg, "port_range 30000-40000 overlaps the kernel's ephemeral ports "
                                  "32768-60999 (net.ipv4.ip_local_port_range), this step's "
                                  "MASTER_PORT 35000 among them"));
    assert_non_null (strstr (msg, "keep port_range below 32768, or reserve the ports: sysctl -w "
                                  "net.ipv4.ip_local_reserved_ports=32768-40000"));
    /* a reservation that keeps part out: the rest is named, with what is there */
    f.reserved = "8080,32768-35000";
    f.master_port = 31000;
    assert_int_equal (doctor_check_ephemeral_ports (&f, msg, sizeof (msg)), DOCTOR_WARN);
    assert_null (strstr (msg, "MASTER_PORT 31000"));
    assert_non_null (strstr (msg, "ip_local_reserved_ports=8080,32768-35000,32768-40000"));
    /* the whole overlap reserved: the admin's fix */
    f.reserved = "32768-36000,36001-40000";
    assert_int_equal (doctor_check_ephemeral_ports (&f, msg, sizeof (msg)), DOCTOR_FINE);
    /* an unreadable /proc says nothing */
    f.reserved = "";
    f.ephemeral = (struct doctor_range){-1, -1};
    assert_int_equal (doctor_check_ephemeral_ports (&f, msg, sizeof (msg)), DOCTOR_FINE);
}

/* What the plugin exports by default: all three on eth0. */
static struct doctor_ifname_facts agreed (void)
{
    return (struct doctor_ifname_facts){
        .nccl = "eth0",
        .nccl_found = "eth0",
        .gloo = "eth0",
        .gloo_missing = "",
        .plugin = "eth0",
        .family = "IPv4",
    };
}

static void test_ifnames (void **state)
{
    struct doctor_ifname_facts f = agreed ();
    char msg[MSG];

    assert_int_equal (doctor_check_ifnames (&f, msg, sizeof (msg)), DOCTOR_FINE);
    /* NCCL's prefix that names the plugin's interface agrees */
    f.nccl = "eth";
    assert_int_equal (doctor_check_ifnames (&f, msg, sizeof (msg)), DOCTOR_FINE);
    /* NCCL's exclusion: the routes choose, nothing to compare */
    f.nccl = "^docker";
    f.nccl_found = "";
    assert_int_equal (doctor_check_ifnames (&f, msg, sizeof (msg)), DOCTOR_FINE);
    /* a script's GLOO_SOCKET_IFNAME on another interface */
    f = agreed ();
    f.gloo = "lo";
    assert_int_equal (doctor_check_ifnames (&f, msg, sizeof (msg)), DOCTOR_WARN);
    assert_string_equal (msg, "NCCL_SOCKET_IFNAME=eth0 (eth0), GLOO_SOCKET_IFNAME=lo and the "
                              "plugin's choice eth0 disagree: NCCL and gloo then take other ways "
                              "than the one the plugin found towards rank 0, and the doctor "
                              "tried only NCCL's; unset both, or set both to one interface that "
                              "reaches rank 0");
    /* both on the user's interface, not the plugin's */
    f = agreed ();
    f.nccl = f.nccl_found = f.gloo = "ib0";
    assert_int_equal (doctor_check_ifnames (&f, msg, sizeof (msg)), DOCTOR_WARN);
    assert_non_null (strstr (msg, "the plugin's choice eth0 disagree"));
    /* gloo on an interface without an address cannot start */
    f = agreed ();
    f.gloo = f.gloo_missing = "nosuch0";
    assert_int_equal (doctor_check_ifnames (&f, msg, sizeof (msg)), DOCTOR_FAIL);
    assert_string_equal (msg, "GLOO_SOCKET_IFNAME=nosuch0: nosuch0 has no IPv4 address here, so "
                              "gloo cannot start on it; unset GLOO_SOCKET_IFNAME (the plugin "
                              "chose eth0), or name an interface that reaches rank 0 (ip -br "
                              "addr)");
    /* outside the plugin: nothing chosen, the variables alone */
    f = agreed ();
    f.plugin = "";
    assert_int_equal (doctor_check_ifnames (&f, msg, sizeof (msg)), DOCTOR_FINE);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_version_parse),   cmocka_unit_test (test_pmix_lib),
        cmocka_unit_test (test_pmix_hang_table), cmocka_unit_test (test_pmix_hang),
        cmocka_unit_test (test_range_parse),     cmocka_unit_test (test_srun_ports),
        cmocka_unit_test (test_ephemeral_ports), cmocka_unit_test (test_ifnames),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
