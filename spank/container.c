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
#include "libdist/netif.h"

/* What user_init saw, for the tasks. */
struct container_note {
    char **srun_env; /* the step's environment in user_init (srun's) */
    ino_t stepd_mount_ns; /* slurmstepd's mount namespace, 0 unknown */
    bool asked; /* pyxis's --container-image/-name given */
    bool own_net; /* and its network namespace of its own (loopback alone) */
};

/* The inode of this process's mount namespace, 0 when unknown. */
static ino_t mount_ns (void)
{
    struct stat sb;
    return stat ("/proc/self/ns/mnt", &sb) == 0 ? sb.st_ino : 0;
}

void dist_train_container_free (struct container_note *c)
{
    if (c == NULL)
        return;
    for (char **e = c->srun_env; e != NULL && *e != NULL; e++)
        free (*e);
    free (c->srun_env);
    free (c);
}

/* A copy of the step's environment as it is now: srun's, with Slurm's own
 * variables; -1 when out of memory. */
static int copy_srun_env (spank_t sp, struct container_note *c)
{
    char **env = NULL;
    size_t n = 0, i;

    if (spank_get_item (sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || env == NULL)
        return 0;
    while (env[n] != NULL)
        n++;
    if ((c->srun_env = calloc (n + 1, sizeof (char *))) == NULL)
        return -1;
    for (i = 0; i < n; i++)
        if ((c->srun_env[i] = strdup (env[i])) == NULL)
            return -1;
    return 0;
}

/* NAME's value in srun's environment, or NULL. */
static const char *srun_value (const struct container_note *c, const char *name)
{
    size_t len = strlen (name);

    for (char **e = c->srun_env; e != NULL && *e != NULL; e++)
        if (strncmp (*e, name, len) == 0 && (*e)[len] == '=')
            return *e + len + 1;
    return NULL;
}

/* A container plugin's option's value, given to this step ("" for none);
 * NULL if not given. */
static const char *option_value (spank_t sp, const char *name)
{
    struct spank_option opt = {.name = (char *) name, .has_arg = 1};
    char *arg = NULL;

    if (spank_option_getopt (sp, &opt, &arg) != ESPANK_SUCCESS)
        return NULL;
    return arg != NULL ? arg : "";
}

static bool option_given (spank_t sp, const char *name)
{
    return option_value (sp, name) != NULL;
}

bool dist_train_pyxis_own_net (spank_t sp, const struct pyxis_defaults *env)
{
    const char *unshare = option_value (sp, "container-unshare");

    /* (the variables are pyxis's defaults for options not given) */
    if (!option_given (sp, "container-image") && !option_given (sp, "container-name")
        && (env->image == NULL || env->image[0] == '\0')
        && (env->name == NULL || env->name[0] == '\0'))
        return false;
    return dist_unshare_lists_net (unshare != NULL ? unshare : env->unshare);
}

struct container_note *dist_train_container_note (spank_t sp)
{
    struct container_note *c = calloc (1, sizeof (*c));

    if (c == NULL || copy_srun_env (sp, c) < 0) {
        dist_train_container_free (c);
        return NULL;
    }
    c->stepd_mount_ns = mount_ns ();
    /* pyxis's options (spank_option_getopt finds another plugin's by name) */
    c->asked = option_given (sp, "container-image") || option_given (sp, "container-name");
    struct pyxis_defaults env = {.image = srun_value (c, "PYXIS_CONTAINER_IMAGE"),
                                 .name = srun_value (c, "PYXIS_CONTAINER_NAME"),
                                 .unshare = srun_value (c, "PYXIS_CONTAINER_UNSHARE")};
    c->own_net = dist_train_pyxis_own_net (sp, &env);
    return c;
}

void dist_train_own_net_refusal (uint32_t nodes, char *buf, size_t size)
{
    snprintf (buf, size,
              "--container-unshare=net gives each node's container a network namespace of its "
              "own, with loopback alone, and this step spans %lu nodes: their ranks could never "
              "reach each other. Drop net from --container-unshare (ipc and uts can stay), or "
              "run the step on one node (-N1)",
              (unsigned long) nodes);
}

bool dist_train_container_own_net (const struct container_note *c)
{
    return c != NULL && c->own_net;
}

int dist_train_setenv (const struct container_note *c, spank_t sp, enum dist_var_id id,
                       const char *value)
{
    const struct dist_var_info *v = &dist_task_vars[id];
    const char *users = NULL;

    if (v->overwrite == DIST_DEFAULT && c != NULL)
        users = srun_value (c, v->name);
    return spank_setenv (sp, v->name, users != NULL ? users : value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

void dist_train_unsetenv (spank_t sp, enum dist_var_id id)
{
    spank_unsetenv (sp, dist_task_vars[id].name);
}

enum dist_container dist_train_container_state (const struct container_note *c)
{
    ino_t now = mount_ns ();

    if (now != 0 && c->stepd_mount_ns != 0 && now != c->stepd_mount_ns)
        return DIST_IN_CONTAINER;
    return c->asked ? DIST_CONTAINER_LATER : DIST_NO_CONTAINER;
}
