/* option.c - the settings of every context: plugstack.conf's arguments, and
 * --dist-train[=SPEC] or its environment default DIST_TRAIN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "dist_train.h"

#define ENV_DEFAULT "DIST_TRAIN"

/* This process's settings: filled in init and init_post_opt (the option's
 * callback has no argument to carry them), read-only after. */
static struct {
    struct dist_config cfg;
    bool given; /* --dist-train seen (srun, or via sbatch) */
    char error[DIST_ERR_MAX]; /* slurmstepd: the first bad setting, "" none */
} settings;

const struct dist_config *dist_train_config (void)
{
    return &settings.cfg;
}

const char *dist_train_config_error (void)
{
    return settings.error;
}

/* slurmstepd keeps the node healthy and fails the step in task_init instead. */
static void defer_error (const char *msg)
{
    size_t len = strnlen (msg, sizeof (settings.error) - 1);

    if (settings.error[0] != '\0')
        return;
    memcpy (settings.error, msg, len);
    settings.error[len] = '\0';
    dist_printable (settings.error);
}

/* Parse SPEC into the settings.  In srun/sbatch an error stops the
 * command; in slurmstepd it is kept for task_init. */
static int apply_spec (const char *spec, const char *origin)
{
    char err[DIST_ERR_MAX];
    char msg[DIST_ERR_MAX + 64];
    bool remote = spank_context () == S_CTX_REMOTE;

    if (dist_config_parse_spec (&settings.cfg, spec, err, sizeof (err)) < 0) {
        snprintf (msg, sizeof (msg), "%s (from %s)", err, origin);
        dist_printable (msg);
        if (remote) {
            defer_error (msg);
            return 0;
        }
        slurm_error ("%s: %s", PLUGIN_NAME, msg);
        return -1;
    }
    if (settings.cfg.help && !remote) {
        slurm_spank_log ("%s", dist_config_help ());
        return -1;
    }
    return 0;
}

static int option_cb (int val, const char *spec, int remote)
{
    /* sbatch/salloc pass a flag given without SPEC to the job's steps as the
     * text "(null)" (Slurm prints the NULL optarg into the environment). */
    if (spec != NULL && strcmp (spec, "(null)") == 0)
        spec = NULL;
    settings.given = true;
    return apply_spec (spec, "--dist-train");
}

/* (.usage, srun --help's text, is made from the table of SPEC's words) */
static struct spank_option dist_train_option = {
    .name = "dist-train",
    .arginfo = "[SPEC]",
    .has_arg = 2,
    .val = 0,
    .cb = option_cb,
};

int dist_train_options_init (spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context ();
    char err[DIST_ERR_MAX];
    int i;

    memset (&settings, 0, sizeof (settings));
    dist_config_init (&settings.cfg);
    for (i = 0; i < ac; i++) {
        if (dist_config_parse_arg (&settings.cfg, av[i], err, sizeof (err)) < 0) {
            /* srun and sbatch stop here, so an admin's typo is seen at once */
            dist_printable (err);
            if (ctx != S_CTX_REMOTE) {
                slurm_error ("%s: plugstack.conf: %s", PLUGIN_NAME, err);
                return -1;
            }
            defer_error (err);
        }
    }
    dist_train_option.usage = (char *) dist_config_usage ();
    if (spank_option_register (sp, &dist_train_option) != ESPANK_SUCCESS) {
        slurm_error ("%s: cannot register --dist-train", PLUGIN_NAME);
        return -1;
    }
    return 0;
}

/* Without the flag, DIST_TRAIN in the job's environment decides: job
 * templates and slurmrestd cannot pass SPANK options. */
int dist_train_apply_env_default (spank_t sp)
{
    char spec[1024];

    if (settings.given)
        return 0;
    if (spank_context () == S_CTX_REMOTE) {
        spank_err_t rc = spank_getenv (sp, ENV_DEFAULT, spec, sizeof (spec));
        if (rc == ESPANK_ENV_NOEXIST)
            return 0;
        if (rc != ESPANK_SUCCESS) {
            defer_error (ENV_DEFAULT " is longer than 1023 characters");
            return 0;
        }
    } else {
        const char *value = getenv (ENV_DEFAULT);
        if (value == NULL)
            return 0;
        /* refused here too, or srun would pass what slurmstepd refuses */
        if (strlen (value) >= sizeof (spec)) {
            slurm_error ("%s: " ENV_DEFAULT " is longer than %zu characters", PLUGIN_NAME,
                         sizeof (spec) - 1);
            return -1;
        }
        snprintf (spec, sizeof (spec), "%s", value);
    }
    return apply_spec (spec, ENV_DEFAULT);
}
