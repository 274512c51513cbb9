/* stepenv.c - the step's facts as slurmstepd and srun hand them to plugins:
 * variables of any size, the node list, counts, and which steps are users'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "dist_train.h"
#include "libdist/layout.h"

#define ENV_VALUE_MAX (4 << 20)

char *dist_train_getenv_any (spank_t sp, const char *name)
{
    size_t size = 8192;
    char *value = NULL, *bigger;
    spank_err_t rc;

    do {
        if ((bigger = realloc (value, size)) == NULL)
            break;
        value = bigger;
        rc = spank_getenv (sp, name, value, (int) size);
        if (rc == ESPANK_SUCCESS)
            return value;
        size *= 2;
    } while (rc == ESPANK_NOSPACE && size <= ENV_VALUE_MAX);
    free (value);
    return NULL;
}

dt_hostlist_t dist_train_step_hostlist (spank_t sp)
{
    char *nodelist = dist_train_getenv_any (sp, "SLURM_STEP_NODELIST");
    dt_hostlist_t hl = nodelist != NULL ? slurm_hostlist_create (nodelist) : NULL;

    free (nodelist);
    return hl;
}

bool dist_train_is_training_step (uint32_t step_id)
{
    return step_id != SLURM_BATCH_SCRIPT && step_id != SLURM_EXTERN_CONT
           && step_id != SLURM_INTERACTIVE_STEP && step_id != SLURM_PENDING_STEP;
}

/* A count from the step's environment; false when unset or not a number. */
bool dist_train_env_count (spank_t sp, const char *name, uint32_t *count)
{
    char value[16], *end;
    unsigned long n;

    if (spank_getenv (sp, name, value, sizeof (value)) != ESPANK_SUCCESS || value[0] < '0'
        || value[0] > '9')
        return false;
    n = strtoul (value, &end, 10);
    if (*end != '\0' || n > 1000000)
        return false;
    *count = (uint32_t) n;
    return true;
}

bool dist_train_is_arbitrary (spank_t sp)
{
    char dist[64];
    return spank_getenv (sp, "SLURM_DISTRIBUTION", dist, sizeof (dist)) == ESPANK_SUCCESS
           && dist_distribution_parse (dist) == DIST_DIST_ARBITRARY;
}
