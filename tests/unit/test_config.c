/* test_config.c - SPEC and plugstack arguments: what is accepted, what is
 * refused, and that refusals name the bad token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/config.h"

static void test_defaults (void **state)
{
    struct dist_config cfg;
    dist_config_init (&cfg);
    assert_int_equal (cfg.profile, DIST_PROFILE_OFF);
    assert_false (cfg.verbose);
    assert_int_equal (cfg.port_lo, DIST_PORT_LO_DEFAULT);
    assert_int_equal (cfg.port_hi, DIST_PORT_HI_DEFAULT);
    assert_string_equal (cfg.ifname, "");
    /* The default range stays below the Linux ephemeral range. */
    assert_true (cfg.port_hi < 32768);
}

static void test_spec_empty_means_torch (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX];
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, NULL, err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_TORCH);
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, "", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_TORCH);
}

static void test_spec_tokens (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX];
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, "torch,verbose", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_TORCH);
    assert_true (cfg.verbose);
    assert_int_equal (dist_config_parse_spec (&cfg, "off", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_OFF);
    assert_false (cfg.verbose); /* each SPEC starts afresh */
    assert_int_equal (dist_config_parse_spec (&cfg, "verbose", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_TORCH);
    assert_int_equal (dist_config_parse_spec (&cfg, "jax,verbose", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_JAX);
    assert_int_equal (dist_config_parse_spec (&cfg, "tf", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_TF);
    assert_int_equal (dist_config_parse_spec (&cfg, "help", err, sizeof (err)), 0);
    assert_true (cfg.help);
    assert_int_equal (dist_config_parse_spec (&cfg, "torch,,torch", err, sizeof (err)), 0);
    assert_false (cfg.help);
}

static void test_spec_unknown_token_named (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX] = "";
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, "torch,bogus", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "'bogus'"));
    assert_non_null (strstr (err, "valid: torch, jax, tf, off, launcher, lightning, submitit"));
}

static void test_spec_two_profiles (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX] = "";
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, "torch,off", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "two profiles"));
}

static void test_spec_hostile (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX] = "";
    char big[4096];
    dist_config_init (&cfg);
    memset (big, 'a', sizeof (big) - 1);
    big[sizeof (big) - 1] = '\0';
    assert_int_equal (dist_config_parse_spec (&cfg, big, err, sizeof (err)), -1);
    assert_non_null (strstr (err, "longer than"));
    /* format directives are data, not formats */
    assert_int_equal (dist_config_parse_spec (&cfg, "%s%n%x", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "'%s%n%x'"));
    /* a long bad token is cut, the message stays bounded */
    memset (big, 'b', 300);
    big[300] = '\0';
    assert_int_equal (dist_config_parse_spec (&cfg, big, err, sizeof (err)), -1);
    assert_true (strlen (err) < sizeof (err));
}

static void test_arg_port_range (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX] = "";
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_arg (&cfg, "port_range=40000-40009", err, sizeof (err)), 0);
    assert_int_equal (cfg.port_lo, 40000);
    assert_int_equal (cfg.port_hi, 40009);
    assert_int_equal (dist_config_parse_arg (&cfg, "port_range=5000-5000", err, sizeof (err)), 0);
    assert_int_equal (cfg.port_lo, 5000);
    assert_int_equal (cfg.port_hi, 5000);
}

static void test_arg_port_range_bad (void **state)
{
    static const char *bad[] = {
        "port_range=", "port_range=100", "port_range=30000-20000",
        "port_range=80-90", "port_range=20000-70000", "port_range=-5-10",
        "port_range=20000-", "port_range=2e4-3e4", "port_range=20000-30000x",
        "port_range=99999999999999999999-1",
    };
    size_t i;
    for (i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        struct dist_config cfg;
        char err[DIST_ERR_MAX] = "";
        dist_config_init (&cfg);
        assert_int_equal (dist_config_parse_arg (&cfg, bad[i], err, sizeof (err)), -1);
        assert_non_null (strstr (err, "port_range="));
        /* nothing half-applied */
        assert_int_equal (cfg.port_lo, DIST_PORT_LO_DEFAULT);
        assert_int_equal (cfg.port_hi, DIST_PORT_HI_DEFAULT);
    }
}

static void test_arg_ifname (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX] = "";
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_arg (&cfg, "ifname=ib0", err, sizeof (err)), 0);
    assert_string_equal (cfg.ifname, "ib0");
    assert_int_equal (dist_config_parse_arg (&cfg, "ifname=", err, sizeof (err)), -1);
    assert_int_equal (dist_config_parse_arg (&cfg, "ifname=abcdefghijklmnop", err, sizeof (err)), -1);
    assert_int_equal (dist_config_parse_arg (&cfg, "ifname=a/b", err, sizeof (err)), -1);
    assert_int_equal (dist_config_parse_arg (&cfg, "ifname=a b", err, sizeof (err)), -1);
    assert_string_equal (cfg.ifname, "ib0");
}

static void test_arg_unknown_key_named (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX] = "";
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_arg (&cfg, "portrange=1-2", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "'portrange'"));
    assert_non_null (strstr (err, "valid keys"));
    assert_int_equal (dist_config_parse_arg (&cfg, "verbose", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "key=value"));
}

static void test_bind_spec_and_site (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX];

    dist_config_init (&cfg);
    assert_int_equal (dist_config_bind (&cfg), DIST_BIND_AUTO);
    assert_int_equal (dist_config_parse_spec (&cfg, "torch,bind=cpu", err, sizeof (err)), 0);
    assert_int_equal (dist_config_bind (&cfg), DIST_BIND_CPU);
    assert_int_equal (dist_config_parse_spec (&cfg, "bind=gpu,visible=own", err, sizeof (err)), 0);
    assert_int_equal (dist_config_bind (&cfg), DIST_BIND_GPU);
    assert_true (cfg.visible_own);

    /* the site's none wins over the user's choice; other site values do not */
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_arg (&cfg, "bind=none", err, sizeof (err)), 0);
    assert_int_equal (dist_config_parse_spec (&cfg, "bind=auto", err, sizeof (err)), 0);
    assert_int_equal (dist_config_bind (&cfg), DIST_BIND_NONE);
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_arg (&cfg, "bind=gpu", err, sizeof (err)), 0);
    assert_int_equal (dist_config_bind (&cfg), DIST_BIND_GPU);
    assert_int_equal (dist_config_parse_spec (&cfg, "bind=cpu", err, sizeof (err)), 0);
    assert_int_equal (dist_config_bind (&cfg), DIST_BIND_CPU);
}

static void test_bind_bad_values_named (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX];

    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, "bind=socket", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "bind=socket"));
    assert_non_null (strstr (err, "auto, gpu, cpu or none"));
    assert_int_equal (dist_config_parse_spec (&cfg, "visible=some", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "visible=some"));
    assert_int_equal (dist_config_parse_spec (&cfg, "cpus=4", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "cpus=4"));
    assert_int_equal (dist_config_parse_arg (&cfg, "bind=", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "bind="));
    assert_int_equal (dist_config_parse_arg (&cfg, "nic=on", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "nic=on"));
    assert_int_equal (dist_config_parse_arg (&cfg, "topology=relative.xml", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "absolute path"));
}

static void test_fail_fast (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX];

    dist_config_init (&cfg);
    assert_true (dist_config_fail_fast (&cfg));
    assert_int_equal (dist_config_parse_spec (&cfg, "fail_fast=off", err, sizeof (err)), 0);
    assert_false (dist_config_fail_fast (&cfg));
    assert_int_equal (dist_config_parse_spec (&cfg, "jax,fail_fast=on", err, sizeof (err)), 0);
    assert_true (dist_config_fail_fast (&cfg));
    assert_int_equal (dist_config_parse_spec (&cfg, "fail_fast=yes", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "fail_fast=yes"));

    /* the site's off wins */
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_arg (&cfg, "fail_fast=off", err, sizeof (err)), 0);
    assert_int_equal (dist_config_parse_spec (&cfg, "fail_fast=on", err, sizeof (err)), 0);
    assert_false (dist_config_fail_fast (&cfg));
    assert_int_equal (dist_config_parse_arg (&cfg, "fail_fast=1", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "on or off"));
}

static void test_watchdog (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX];

    dist_config_init (&cfg);
    assert_int_equal (cfg.watchdog_s, 0);
    assert_int_equal (dist_config_parse_spec (&cfg, "torch,watchdog=600", err, sizeof (err)), 0);
    assert_int_equal (cfg.watchdog_s, 600);
    assert_int_equal (dist_config_parse_spec (&cfg, "watchdog=0", err, sizeof (err)), 0);
    assert_int_equal (cfg.watchdog_s, 0);
    assert_int_equal (dist_config_parse_spec (&cfg, "watchdog=-1", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "watchdog=-1"));
    assert_int_equal (dist_config_parse_spec (&cfg, "watchdog=10m", err, sizeof (err)), -1);
    assert_int_equal (dist_config_parse_spec (&cfg, "watchdog=99999999999999999999", err,
                                              sizeof (err)), -1);
    assert_int_equal (dist_config_parse_spec (&cfg, "watchdog=", err, sizeof (err)), -1);
}

static void test_arg_nic_and_topology (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX];
    char longpath[DIST_PATH_MAX + 16]; /* the path alone is longer than the limit */

    dist_config_init (&cfg);
    assert_false (cfg.nic_auto);
    assert_string_equal (cfg.topology, "");
    assert_int_equal (dist_config_parse_arg (&cfg, "nic=auto", err, sizeof (err)), 0);
    assert_true (cfg.nic_auto);
    assert_int_equal (dist_config_parse_arg (&cfg, "nic=off", err, sizeof (err)), 0);
    assert_false (cfg.nic_auto);
    assert_int_equal (dist_config_parse_arg (&cfg, "topology=/etc/slurm/node.xml", err,
                                             sizeof (err)), 0);
    assert_string_equal (cfg.topology, "/etc/slurm/node.xml");
    memset (longpath, 'a', sizeof (longpath));
    memcpy (longpath, "topology=/", 10);
    longpath[sizeof (longpath) - 1] = '\0';
    assert_int_equal (dist_config_parse_arg (&cfg, longpath, err, sizeof (err)), -1);
    assert_string_equal (cfg.topology, "/etc/slurm/node.xml");
}

/* A user's text in a message can forge no log line. */
static void test_printable (void **state)
{
    char forged[] = "torch,x\n[2026-11-23T10:00:00] error: Node n1 has low real_memory\x1b[2J\x7f";
    char plain[] = "torch,verbose";

    dist_printable (forged);
    assert_null (strchr (forged, '\n'));
    assert_null (strchr (forged, '\x1b'));
    assert_null (strchr (forged, '\x7f'));
    assert_string_equal (forged, "torch,x?[2026-11-23T10:00:00] error: Node n1 has low real_memory?[2J?");
    dist_printable (plain);
    assert_string_equal (plain, "torch,verbose");
}

static void test_launcher_and_framework_profiles (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX];

    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, "launcher", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_LAUNCHER);
    assert_int_equal (cfg.nproc, 0);
    assert_int_equal (dist_config_parse_spec (&cfg, "nproc=8,launcher", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_LAUNCHER);
    assert_int_equal (cfg.nproc, 8);
    /* each SPEC starts afresh */
    assert_int_equal (dist_config_parse_spec (&cfg, "launcher", err, sizeof (err)), 0);
    assert_int_equal (cfg.nproc, 0);
    assert_int_equal (dist_config_parse_spec (&cfg, "lightning,verbose", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_LIGHTNING);
    assert_int_equal (dist_config_parse_spec (&cfg, "submitit", err, sizeof (err)), 0);
    assert_int_equal (cfg.profile, DIST_PROFILE_SUBMITIT);
    assert_string_equal (dist_profile_name (DIST_PROFILE_LAUNCHER), "launcher");
    assert_string_equal (dist_profile_name (DIST_PROFILE_TORCH), "torch");

    /* nproc= outside the launcher profile, and bad counts, named */
    assert_int_equal (dist_config_parse_spec (&cfg, "torch,nproc=4", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "nproc= is for the launcher profile"));
    assert_int_equal (dist_config_parse_spec (&cfg, "nproc=4", err, sizeof (err)), -1);
    static const char *const bad[] = { "launcher,nproc=0", "launcher,nproc=", "launcher,nproc=-1",
                                       "launcher,nproc=1025", "launcher,nproc=4x",
                                       "launcher,nproc=99999999999999999999" };
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        assert_int_equal (dist_config_parse_spec (&cfg, bad[i], err, sizeof (err)), -1);
        assert_non_null (strstr (err, "nproc= takes"));
    }
    assert_int_equal (dist_config_parse_spec (&cfg, "launcher,nproc=1024", err, sizeof (err)), 0);

    /* preflight checks ranks: never for the launcher profile */
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, "launcher,preflight", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "launcher profile runs one task per node"));
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_arg (&cfg, "preflight=on", err, sizeof (err)), 0);
    assert_int_equal (dist_config_parse_spec (&cfg, "launcher", err, sizeof (err)), 0);
    assert_false (dist_config_preflight (&cfg));
    assert_int_equal (dist_config_parse_spec (&cfg, "torch", err, sizeof (err)), 0);
    assert_true (dist_config_preflight (&cfg));

    /* two profiles */
    assert_int_equal (dist_config_parse_spec (&cfg, "launcher,lightning", err, sizeof (err)), -1);
    assert_non_null (strstr (err, "names two profiles"));
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_defaults),
        cmocka_unit_test (test_launcher_and_framework_profiles),
        cmocka_unit_test (test_spec_empty_means_torch),
        cmocka_unit_test (test_spec_tokens),
        cmocka_unit_test (test_spec_unknown_token_named),
        cmocka_unit_test (test_spec_two_profiles),
        cmocka_unit_test (test_spec_hostile),
        cmocka_unit_test (test_arg_port_range),
        cmocka_unit_test (test_arg_port_range_bad),
        cmocka_unit_test (test_arg_ifname),
        cmocka_unit_test (test_arg_unknown_key_named),
        cmocka_unit_test (test_bind_spec_and_site),
        cmocka_unit_test (test_bind_bad_values_named),
        cmocka_unit_test (test_arg_nic_and_topology),
        cmocka_unit_test (test_fail_fast),
        cmocka_unit_test (test_watchdog),
        cmocka_unit_test (test_printable),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
