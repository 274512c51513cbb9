/* test_config.c - SPEC and plugstack arguments: what is accepted, what is
 * refused, that refusals name the bad token, and the texts made from the words' table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/config.h"

#define COUNT(a) (sizeof (a) / sizeof ((a)[0]))

/* Most cases are a run of steps on one config: parse a SPEC or a plugstack argument (or
 * only look), then check what the parser returned, a phrase of its message, and one value
 * the config gives. */
enum op { INIT, SPEC, ARG, SEE };
enum probe {
    NONE,
    PROFILE,
    VERBOSE,
    HELP,
    BIND,
    VISIBLE_OWN,
    FAIL_FAST,
    PREFLIGHT,
    FABRIC,
    WATCHDOG,
    HANG,
    NPROC,
    NIC,
    PORT_LO,
    PORT_HI,
    IFNAME,
    TOPOLOGY
};

struct step {
    enum op op;
    const char *text; /* the SPEC or the argument */
    int rc; /* what the parser returns */
    const char *says; /* a phrase of the last message (SEE: of the step before) */
    enum probe probe;
    long want; /* the probe's value, */
    const char *want_s; /* or text (IFNAME, TOPOLOGY) */
};

static long probe (const struct dist_config *cfg, enum probe p)
{
    switch (p) {
    case PROFILE:
        return cfg->profile;
    case VERBOSE:
        return cfg->verbose;
    case HELP:
        return cfg->help;
    case BIND:
        return dist_config_bind (cfg);
    case VISIBLE_OWN:
        return cfg->visible_own;
    case FAIL_FAST:
        return dist_config_fail_fast (cfg);
    case PREFLIGHT:
        return dist_config_preflight (cfg);
    case FABRIC:
        return dist_config_fabric (cfg);
    case WATCHDOG:
        return cfg->watchdog_s;
    case HANG:
        return dist_config_hang (cfg);
    case NPROC:
        return cfg->nproc;
    case NIC:
        return cfg->nic_auto;
    case PORT_LO:
        return cfg->port_lo;
    case PORT_HI:
        return cfg->port_hi;
    default:
        return 0;
    }
}

/* Run steps on cfg from its defaults; a failure names the step. */
static void run (struct dist_config *cfg, const struct step *steps, size_t n)
{
    char err[DIST_ERR_MAX] = "";

    dist_config_init (cfg);
    for (size_t i = 0; i < n; i++) {
        const struct step *s = &steps[i];
        const char *text = s->text != NULL ? s->text : "(look)";
        int rc = 0;

        if (s->op == INIT)
            dist_config_init (cfg);
        if (s->op == SPEC || s->op == ARG) {
            err[0] = '\0';
            rc = s->op == SPEC ? dist_config_parse_spec (cfg, s->text, err, sizeof (err))
                               : dist_config_parse_arg (cfg, s->text, err, sizeof (err));
            if (rc < 0 && err[0] == '\0')
                fail_msg ("step %zu '%s' failed without a message", i, text);
        }
        if (rc != s->rc)
            fail_msg ("step %zu '%s' returned %d, not %d: %s", i, text, rc, s->rc, err);
        if (s->says != NULL && strstr (err, s->says) == NULL)
            fail_msg ("step %zu '%s': \"%s\" does not say \"%s\"", i, text, err, s->says);
        if (s->probe == IFNAME || s->probe == TOPOLOGY) {
            const char *got = s->probe == IFNAME ? cfg->ifname : cfg->topology;
            if (strcmp (got, s->want_s) != 0)
                fail_msg ("step %zu '%s': got '%s', not '%s'", i, text, got, s->want_s);
        } else if (s->probe != NONE && probe (cfg, s->probe) != s->want) {
            fail_msg ("step %zu '%s': probe %d is %ld, not %ld", i, text, s->probe,
                      probe (cfg, s->probe), s->want);
        }
    }
}

#define RUN(cfg, steps) run (cfg, steps, COUNT (steps))

/* A case that is only steps, as a cmocka test's state. */
struct steps {
    const struct step *step;
    size_t n;
};

static void test_steps (void **state)
{
    const struct steps *steps = *state;
    struct dist_config cfg;

    run (&cfg, steps->step, steps->n);
}

#define STEPS_TEST(a)                                                                              \
    {                                                                                              \
        "test_" #a, test_steps, NULL, NULL, &(struct steps)                                        \
        {                                                                                          \
            a, COUNT (a)                                                                           \
        }                                                                                          \
    }

/* What every run of steps starts from; the tables check only what the words change. */
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
    assert_int_equal (dist_config_bind (&cfg), DIST_BIND_AUTO);
    assert_true (dist_config_fail_fast (&cfg));
    assert_int_equal (dist_config_fabric (&cfg), DIST_FABRIC_FAIL);
    assert_int_equal (cfg.watchdog_s, 0);
    assert_false (cfg.nic_auto);
    assert_string_equal (cfg.topology, "");
}

static const struct step spec_empty_means_torch[] = {
    {SPEC, NULL, .probe = PROFILE, .want = DIST_PROFILE_TORCH},
    {.op = INIT},
    {SPEC, "", .probe = PROFILE, .want = DIST_PROFILE_TORCH},
};

static const struct step spec_tokens[] = {
    {SPEC, "torch,verbose", .probe = PROFILE, .want = DIST_PROFILE_TORCH},
    {SEE, .probe = VERBOSE, .want = 1},
    {SPEC, "off", .probe = PROFILE, .want = DIST_PROFILE_OFF},
    {SEE, .probe = VERBOSE, .want = 0}, /* each SPEC starts afresh */
    {SPEC, "verbose", .probe = PROFILE, .want = DIST_PROFILE_TORCH},
    {SPEC, "jax,verbose", .probe = PROFILE, .want = DIST_PROFILE_JAX},
    {SPEC, "tf", .probe = PROFILE, .want = DIST_PROFILE_TF},
    {SPEC, "help", .probe = HELP, .want = 1},
    {SPEC, "torch,,torch", .probe = HELP, .want = 0},
};

static const struct step spec_refusals_named[] = {
    {SPEC, "torch,bogus", .rc = -1, .says = "'bogus'"},
    {SEE, .says = "valid: torch, jax, tf, off, launcher, lightning, submitit"},
    {.op = INIT},
    {SPEC, "torch,off", .rc = -1, .says = "two profiles"},
};

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

static const struct step arg_port_range[] = {
    {ARG, "port_range=40000-40009", .probe = PORT_LO, .want = 40000},
    {SEE, .probe = PORT_HI, .want = 40009},
    {ARG, "port_range=5000-5000", .probe = PORT_LO, .want = 5000},
    {SEE, .probe = PORT_HI, .want = 5000},
};

static void test_arg_port_range_bad (void **state)
{
    static const char *bad[] = {
        "port_range=",
        "port_range=100",
        "port_range=30000-20000",
        "port_range=80-90",
        "port_range=20000-70000",
        "port_range=-5-10",
        "port_range=20000-",
        "port_range=2e4-3e4",
        "port_range=20000-30000x",
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

static const struct step arg_ifname[] = {
    {ARG, "ifname=ib0", .probe = IFNAME, .want_s = "ib0"},
    {ARG, "ifname=", .rc = -1},
    {ARG, "ifname=abcdefghijklmnop", .rc = -1},
    {ARG, "ifname=a/b", .rc = -1},
    {ARG, "ifname=a b", .rc = -1, .probe = IFNAME, .want_s = "ib0"},
};

static const struct step arg_unknown_key_named[] = {
    {ARG, "portrange=1-2", .rc = -1, .says = "'portrange'"},
    {SEE, .says = "valid keys"},
    {ARG, "verbose", .rc = -1, .says = "key=value"},
};

static const struct step bind_spec_and_site[] = {
    {SPEC, "torch,bind=cpu", .probe = BIND, .want = DIST_BIND_CPU},
    {SPEC, "bind=gpu,visible=own", .probe = BIND, .want = DIST_BIND_GPU},
    {SEE, .probe = VISIBLE_OWN, .want = 1},
    /* the site's none wins over the user's choice; other site values do not */
    {.op = INIT},
    {ARG, "bind=none", .rc = 0},
    {SPEC, "bind=auto", .probe = BIND, .want = DIST_BIND_NONE},
    {.op = INIT},
    {ARG, "bind=gpu", .probe = BIND, .want = DIST_BIND_GPU},
    {SPEC, "bind=cpu", .probe = BIND, .want = DIST_BIND_CPU},
};

static const struct step bind_bad_values_named[] = {
    {SPEC, "bind=socket", .rc = -1, .says = "bind=socket"},
    {SEE, .says = "auto, gpu, cpu or none"},
    {SPEC, "visible=some", .rc = -1, .says = "visible=some"},
    {SPEC, "cpus=4", .rc = -1, .says = "cpus=4"},
    {ARG, "bind=", .rc = -1, .says = "bind="},
    {ARG, "nic=on", .rc = -1, .says = "nic=on"},
    {ARG, "topology=relative.xml", .rc = -1, .says = "absolute path"},
};

static const struct step fail_fast[] = {
    {SPEC, "fail_fast=off", .probe = FAIL_FAST, .want = 0},
    {SPEC, "jax,fail_fast=on", .probe = FAIL_FAST, .want = 1},
    {SPEC, "fail_fast=yes", .rc = -1, .says = "fail_fast=yes"},
    /* the site's off wins */
    {.op = INIT},
    {ARG, "fail_fast=off", .rc = 0},
    {SPEC, "fail_fast=on", .probe = FAIL_FAST, .want = 0},
    {ARG, "fail_fast=1", .rc = -1, .says = "on or off"},
};

/* fabric=: fail by default; the user's choice, else the site's, which is only a default. */
static const struct step fabric[] = {
    {SPEC, "preflight,fabric=warn", .probe = FABRIC, .want = DIST_FABRIC_WARN},
    {SEE, .probe = PREFLIGHT, .want = 1},
    {SPEC, "fabric=off", .probe = FABRIC, .want = DIST_FABRIC_OFF},
    {SPEC, "fabric=fail", .probe = FABRIC, .want = DIST_FABRIC_FAIL},
    {SPEC, "fabric=strict", .rc = -1, .says = "'fabric=strict': fabric= takes fail, warn or off"},
    {SPEC, "fabric=", .rc = -1, .says = "fabric= takes fail, warn or off"},
    {SPEC, "fabric=WARN", .rc = -1},
    {SEE, .probe = FABRIC, .want = DIST_FABRIC_FAIL}, /* a refused value changes nothing */
    {.op = INIT},
    {ARG, "fabric=warn", .probe = FABRIC, .want = DIST_FABRIC_WARN},
    {SPEC, "torch", .probe = FABRIC, .want = DIST_FABRIC_WARN},
    {SPEC, "fabric=fail", .probe = FABRIC, .want = DIST_FABRIC_FAIL},
    {.op = INIT},
    {ARG, "fabric=off", .probe = FABRIC, .want = DIST_FABRIC_OFF},
    {SPEC, "preflight,fabric=warn", .probe = FABRIC, .want = DIST_FABRIC_WARN},
    {.op = INIT},
    {ARG, "fabric=fail", .probe = FABRIC, .want = DIST_FABRIC_FAIL},
    {ARG, "fabric=on", .rc = -1, .says = "fabric=on: expected fail, warn or off"},
    {ARG, "fabric=", .rc = -1, .says = "expected fail, warn or off"},
    {SEE, .probe = FABRIC, .want = DIST_FABRIC_FAIL},
};

static const struct step watchdog[] = {
    {SPEC, "torch,watchdog=600", .probe = WATCHDOG, .want = 600},
    {SPEC, "watchdog=0", .probe = WATCHDOG, .want = 0},
    {SPEC, "watchdog=-1", .rc = -1, .says = "watchdog=-1"},
    {SPEC, "watchdog=10m", .rc = -1},
    {SPEC, "watchdog=99999999999999999999", .rc = -1},
    {SPEC, "watchdog=", .rc = -1},
};

/* hang=: off by default; the user's value, else the site's; never under
 * 10 s; none for the launcher profile. */
static const struct step hang[] = {
    {SPEC, "torch", .probe = HANG, .want = 0},
    {SPEC, "hang=600", .probe = HANG, .want = 600},
    {SPEC, "hang=off", .probe = HANG, .want = 0},
    {SPEC, "hang=10", .probe = HANG, .want = 10},
    {SPEC, "hang=9", .rc = -1, .says = "hang= takes seconds, 10 to 10000000, or off"},
    {SPEC, "hang=-5", .rc = -1, .says = "hang=-5"},
    {SPEC, "hang=20s", .rc = -1},
    {SPEC, "hang=99999999999999999999", .rc = -1},
    {SPEC, "hang=", .rc = -1},
    {.op = INIT},
    {ARG, "hang=300", .rc = 0},
    {SPEC, "torch", .probe = HANG, .want = 300},
    {SPEC, "hang=60", .probe = HANG, .want = 60},
    {SPEC, "hang=0", .probe = HANG, .want = 0},
    {.op = INIT},
    {ARG, "hang=300", .rc = 0},
    {SPEC, "launcher", .probe = HANG, .want = 0},
    {ARG, "hang=5", .rc = -1, .says = "10 to 10000000, or off"},
};

static void test_arg_nic_and_topology (void **state)
{
    static const struct step steps[] = {
        {ARG, "nic=auto", .probe = NIC, .want = 1},
        {ARG, "nic=off", .probe = NIC, .want = 0},
        {ARG, "topology=/etc/slurm/node.xml", .probe = TOPOLOGY, .want_s = "/etc/slurm/node.xml"},
    };
    struct dist_config cfg;
    char err[DIST_ERR_MAX];
    char longpath[DIST_PATH_MAX + 16]; /* the path alone is longer than the limit */

    RUN (&cfg, steps);
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
    assert_string_equal (forged,
                         "torch,x?[2026-11-23T10:00:00] error: Node n1 has low real_memory?[2J?");
    dist_printable (plain);
    assert_string_equal (plain, "torch,verbose");
}

static void test_launcher_and_framework_profiles (void **state)
{
    static const struct step steps[] = {
        {SPEC, "launcher", .probe = PROFILE, .want = DIST_PROFILE_LAUNCHER},
        {SEE, .probe = NPROC, .want = 0},
        {SPEC, "nproc=8,launcher", .probe = PROFILE, .want = DIST_PROFILE_LAUNCHER},
        {SEE, .probe = NPROC, .want = 8},
        {SPEC, "launcher", .probe = NPROC, .want = 0}, /* each SPEC starts afresh */
        {SPEC, "lightning,verbose", .probe = PROFILE, .want = DIST_PROFILE_LIGHTNING},
        {SPEC, "submitit", .probe = PROFILE, .want = DIST_PROFILE_SUBMITIT},
        /* nproc= outside the launcher profile, and bad counts, named */
        {SPEC, "torch,nproc=4", .rc = -1, .says = "nproc= is for the launcher profile"},
        {SPEC, "nproc=4", .rc = -1},
        {SPEC, "launcher,nproc=0", .rc = -1, .says = "nproc= takes"},
        {SPEC, "launcher,nproc=", .rc = -1, .says = "nproc= takes"},
        {SPEC, "launcher,nproc=-1", .rc = -1, .says = "nproc= takes"},
        {SPEC, "launcher,nproc=1025", .rc = -1, .says = "nproc= takes"},
        {SPEC, "launcher,nproc=4x", .rc = -1, .says = "nproc= takes"},
        {SPEC, "launcher,nproc=99999999999999999999", .rc = -1, .says = "nproc= takes"},
        {SPEC, "launcher,nproc=1024", .rc = 0},
        /* preflight checks ranks: never for the launcher profile */
        {.op = INIT},
        {SPEC, "launcher,preflight", .rc = -1, .says = "launcher profile runs one task per node"},
        {.op = INIT},
        {ARG, "preflight=on", .rc = 0},
        {SPEC, "launcher", .probe = PREFLIGHT, .want = 0},
        {SPEC, "torch", .probe = PREFLIGHT, .want = 1},
        /* two profiles */
        {SPEC, "launcher,lightning", .rc = -1, .says = "names two profiles"},
    };
    struct dist_config cfg;

    RUN (&cfg, steps);
    assert_string_equal (dist_profile_name (DIST_PROFILE_LAUNCHER), "launcher");
    assert_string_equal (dist_profile_name (DIST_PROFILE_TORCH), "torch");
}

/* The lists of valid words, made from the parser's table, have their form and hold the
 * words the old lists left out (test_man_tokens checks every word is in every list). */
static void test_messages_list_every_choice (void **state)
{
    static const struct step steps[] = {
        {SPEC, "cpus=4", .rc = -1,
         .says = "valid: preflight=on|off, fabric=fail|warn|off, bind=auto|gpu|cpu|none, "},
        {SEE, .says = ", fail_fast=on|off, "},
        {SEE, .says = ", watchdog=SECONDS, "},
        {SPEC, "bogus", .rc = -1, .says = ", fail_fast=, "},
        {SEE, .says = ", watchdog=, "},
        {SEE, .says = ", help (comma-separated)"},
        {SPEC, "torch,off", .rc = -1,
         .says = "give one of torch, jax, tf, off, launcher, lightning, submitit"},
        {SPEC, "preflight=maybe", .rc = -1,
         .says = "'preflight=maybe': preflight= takes on or off"},
        {SPEC, "launcher,nproc=0", .rc = -1,
         .says = "nproc= takes the processes a launcher starts on each node, 1 to 1024"},
        {ARG, "nic=on", .rc = -1, .says = "nic=on: expected auto or off"},
        {ARG, "visible=some", .rc = -1, .says = "visible=some: expected all or own"},
        {ARG, "doctor=bin/doctor", .rc = -1,
         .says = "doctor=bin/doctor: expected the absolute path of dist-train-doctor, "
                 "shorter than 512 characters"},
        {ARG, "nic", .rc = -1, .says = "valid keys: port_range, ifname, bind, visible, "},
    };
    struct dist_config cfg;
    char token[64], err[DIST_ERR_MAX];

    RUN (&cfg, steps);
    /* the longest message still ends whole: a bad token is cut, not the list */
    memset (token, 'x', sizeof (token) - 1);
    token[sizeof (token) - 1] = '\0';
    assert_int_equal (dist_config_parse_spec (&cfg, token, err, sizeof (err)), -1);
    assert_non_null (strstr (err, "help (comma-separated)"));
}

static int ends_with (const char *text, const char *tail)
{
    size_t n = strlen (text), m = strlen (tail);

    return n >= m && strcmp (text + n - m, tail) == 0;
}

/* The texts for --dist-train=help, srun --help and the admin, in the layout users read. */
static void test_help_and_usage (void **state)
{
    const char *help = dist_config_help (), *usage = dist_config_usage ();
    const char *site = dist_config_plugstack_help ();

    assert_ptr_equal (help, dist_config_help ());
    assert_int_equal (strncmp (help, "--dist-train[=SPEC], SPEC a comma list of:\n", 43), 0);
    /* the integration tests read this line */
    assert_non_null (strstr (help, "\n  torch    set the torchrun environment (default)\n"));
    assert_non_null (strstr (help, "\n  nproc=N  launcher: processes per node"));
    assert_non_null (strstr (help, "\n  bind=auto|gpu|cpu|none\n"
                                   "           bind each rank to its GPU(s) and nearby CPUs"));
    assert_non_null (strstr (help, "\n  fabric=fail|warn|off\n"
                                   "           preflight's checks of the paths between nodes"));
    assert_non_null (strstr (help, "\n  help     print this text\n"));
    assert_true (ends_with (help, "\nThe environment variable DIST_TRAIN=SPEC is used when the "
                                  "flag is not given."));

    assert_int_equal (strncmp (usage,
                               "Set up the environment for distributed training in "
                               "every task (RANK, WORLD_SIZE, MASTER_ADDR, "
                               "MASTER_PORT, ...). SPEC: torch (default), jax, tf, ",
                               136),
                      0);
    assert_non_null (strstr (usage, ", fail_fast=on|off, "));
    assert_non_null (strstr (usage, ", watchdog=SECONDS, "));
    assert_true (ends_with (usage, ". Default from the environment variable DIST_TRAIN."));
    assert_null (strchr (usage, '\n'));

    assert_non_null (strstr (site, "\n  port_range=LO-HI  MASTER_PORT is chosen"));
    assert_non_null (strstr (site, "(default 20000-32767, below the Linux\n"));
    assert_non_null (strstr (site, "\n  bind=auto|gpu|cpu|none\n                    GPU and CPU"));
    assert_non_null (strstr (site, "\n  fabric=fail|warn|off\n                    the default of "
                                   "fabric= for every step"));
    assert_true (ends_with (site, "\n  doctor=PATH       where preflight finds "
                                  "dist-train-doctor\n"));
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_defaults),
        cmocka_unit_test (test_launcher_and_framework_profiles),
        STEPS_TEST (spec_empty_means_torch),
        STEPS_TEST (spec_tokens),
        STEPS_TEST (spec_refusals_named),
        cmocka_unit_test (test_spec_hostile),
        STEPS_TEST (arg_port_range),
        cmocka_unit_test (test_arg_port_range_bad),
        STEPS_TEST (arg_ifname),
        STEPS_TEST (arg_unknown_key_named),
        STEPS_TEST (bind_spec_and_site),
        STEPS_TEST (bind_bad_values_named),
        STEPS_TEST (fail_fast),
        STEPS_TEST (fabric),
        STEPS_TEST (watchdog),
        STEPS_TEST (hang),
        cmocka_unit_test (test_arg_nic_and_topology),
        cmocka_unit_test (test_printable),
        cmocka_unit_test (test_messages_list_every_choice),
        cmocka_unit_test (test_help_and_usage),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
