/* container.c - the plugin's values in a container that another plugin
 * (pyxis) starts the task in.
 *
 * pyxis, in its task_init, copies the container's environment into the
 * task's, overwriting what is there: the image's ENV and what enroot's hooks
 * wrote (50-slurm-pytorch.sh sets MASTER_ADDR to a host name and MASTER_PORT
 * from the job id alone).  Then it joins the container's namespaces.  So:
 *
 *  - What the user set is what srun's environment had, read in user_init,
 *    before any plugin's task_init; task_init sets every variable of the
 *    contract again, to the user's value or ours, whatever the task's
 *    environment says by then.
 *  - The plugin must run its task_init after pyxis's (plugstack.conf lists it
 *    after pyxis).  Listed before, its values would be overwritten after it
 *    ran: the step is refused with what to change, rather than started with
 *    a MASTER_ADDR and MASTER_PORT that hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dist_train.h"

/* The variables set with DIST_DEFAULT outside dist_env_build. */
static const char *const other_defaults[] = { "TF_CONFIG", "NCCL_IB_HCA", "UCX_NET_DEVICES" };

/* The inode of this process's mount namespace, 0 when unknown. */
static ino_t mount_ns (void)
{
    struct stat sb;
    return stat ("/proc/self/ns/mnt", &sb) == 0 ? sb.st_ino : 0;
}

static void keep_user_value (spank_t sp, const char *name)
{
    struct dist_user_var *v;
    char *value;
    size_t i;

    for (i = 0; i < dist_train.n_user_vars; i++)
        if (strcmp (dist_train.user_vars[i].name, name) == 0)
            return;
    if (dist_train.n_user_vars >= DIST_USER_VARS_MAX
        || (value = dist_train_getenv_any (sp, name)) == NULL)
        return;
    v = &dist_train.user_vars[dist_train.n_user_vars++];
    v->name = name;
    v->value = value;
}

/* A container plugin's option, given to this step. */
static bool option_given (spank_t sp, const char *name)
{
    struct spank_option opt = { .name = (char *) name, .has_arg = 1 };
    char *arg = NULL;

    return spank_option_getopt (sp, &opt, &arg) == ESPANK_SUCCESS;
}

void dist_train_container_note (spank_t sp, const struct dist_step *step)
{
    struct dist_var vars[DIST_ENV_MAX];
    size_t i, n;

    /* the names do not depend on the rank: rank 0's list serves every task */
    n = dist_env_build (dist_train.cfg.profile, step, 0, 0, vars);
    for (i = 0; i < n; i++)
        if (vars[i].overwrite == DIST_DEFAULT)
            keep_user_value (sp, vars[i].name);
    for (i = 0; i < sizeof (other_defaults) / sizeof (other_defaults[0]); i++)
        keep_user_value (sp, other_defaults[i]);
    dist_train.stepd_mount_ns = mount_ns ();
    /* pyxis's options (spank_option_getopt finds another plugin's by name) */
    dist_train.container_asked =
        option_given (sp, "container-image") || option_given (sp, "container-name");
}

void dist_train_container_release (void)
{
    size_t i;

    for (i = 0; i < dist_train.n_user_vars; i++)
        free (dist_train.user_vars[i].value);
    dist_train.n_user_vars = 0;
}

int dist_train_set_default (spank_t sp, const char *name, const char *value)
{
    size_t i;

    for (i = 0; i < dist_train.n_user_vars; i++)
        if (strcmp (dist_train.user_vars[i].name, name) == 0) {
            value = dist_train.user_vars[i].value;
            break;
        }
    return spank_setenv (sp, name, value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

enum dist_container dist_train_container_state (void)
{
    ino_t now = mount_ns ();

    if (now != 0 && dist_train.stepd_mount_ns != 0 && now != dist_train.stepd_mount_ns)
        return DIST_IN_CONTAINER;
    return dist_train.container_asked ? DIST_CONTAINER_LATER : DIST_NO_CONTAINER;
}
