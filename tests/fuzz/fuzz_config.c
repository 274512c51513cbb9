/* fuzz_config.c - the admin's plugstack arguments and the user's SPEC
 * (libdist/config.c).  Input: plugstack arguments, one a line, then a line
 * "--", then SPECs, one a line (--dist-train=, DIST_TRAIN). */
#include <stdbool.h>

#include "libdist/config.h"
#include "tests/fuzz/fuzz.h"

/* An error message: set, terminated, and printable once dist_printable ran. */
static void check_err (char *err)
{
    size_t i, len = strnlen (err, DIST_ERR_MAX);

    FUZZ_CHECK (len > 0 && len < DIST_ERR_MAX);
    dist_printable (err);
    for (i = 0; i < len; i++)
        FUZZ_CHECK ((unsigned char) err[i] >= 0x20 && (unsigned char) err[i] != 0x7f);
}

static void check_config (const struct dist_config *cfg)
{
    FUZZ_CHECK (cfg->port_lo >= 1024 && cfg->port_lo <= cfg->port_hi);
    FUZZ_CHECK (strnlen (cfg->ifname, sizeof (cfg->ifname)) < sizeof (cfg->ifname));
    FUZZ_CHECK (strnlen (cfg->topology, sizeof (cfg->topology)) < sizeof (cfg->topology));
    FUZZ_CHECK (cfg->topology[0] == '\0' || cfg->topology[0] == '/');
    FUZZ_CHECK (cfg->fail_fast_user >= -1 && cfg->fail_fast_user <= 1);
    FUZZ_CHECK (cfg->watchdog_s <= 10000000);
    FUZZ_CHECK (cfg->nproc <= DIST_NPROC_MAX);
    if (cfg->profile == DIST_PROFILE_LAUNCHER)
        FUZZ_CHECK (!dist_config_preflight (cfg));
    FUZZ_CHECK (dist_config_bind (cfg) >= DIST_BIND_AUTO
                && dist_config_bind (cfg) <= DIST_BIND_CPU);
    FUZZ_CHECK (dist_config_fabric (cfg) >= DIST_FABRIC_FAIL
                && dist_config_fabric (cfg) <= DIST_FABRIC_OFF);
    /* the site's "none" and "off" cannot be overridden */
    if (cfg->bind_site == DIST_BIND_NONE)
        FUZZ_CHECK (dist_config_bind (cfg) == DIST_BIND_NONE);
    if (!cfg->fail_fast_site)
        FUZZ_CHECK (!dist_config_fail_fast (cfg));
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    struct dist_config cfg;
    char *text = fuzz_string (data, size), *p = text, *line;
    char *err = malloc (DIST_ERR_MAX);
    bool specs = false;

    dist_config_init (&cfg);
    while ((line = fuzz_line (&p)) != NULL) {
        char *arg = fuzz_dup (line); /* each argument in its own block */
        err[0] = '\0';
        if (!specs && strcmp (arg, "--") == 0) {
            specs = true;
        } else if (!specs) {
            if (dist_config_parse_arg (&cfg, arg, err, DIST_ERR_MAX) < 0)
                check_err (err);
        } else {
            if (dist_config_parse_spec (&cfg, arg, err, DIST_ERR_MAX) < 0)
                check_err (err);
            else {
                FUZZ_CHECK (cfg.profile >= DIST_PROFILE_OFF
                            && cfg.profile <= DIST_PROFILE_SUBMITIT);
                /* a SPEC that was taken: nproc= only with the launcher */
                FUZZ_CHECK (cfg.nproc == 0 || cfg.profile == DIST_PROFILE_LAUNCHER);
            }
        }
        check_config (&cfg);
        free (arg);
    }
    /* NULL is "--dist-train" without SPEC: torch */
    FUZZ_CHECK (dist_config_parse_spec (&cfg, NULL, err, DIST_ERR_MAX) == 0);
    FUZZ_CHECK (cfg.profile == DIST_PROFILE_TORCH);
    free (err);
    free (text);
    return 0;
}
