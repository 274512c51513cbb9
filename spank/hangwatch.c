/* hangwatch.c - hang=SECONDS: start the node's watcher.
 *
 * The task of the node's first local rank starts it in task_init, just
 * before it execs the program: by then the task runs as the job's user, in
 * its own process, so nothing of the watcher runs as root or in
 * slurmstepd, and starting it costs the task one fork and one wait.  The
 * watcher (dist-train-doctor hang-watch, tools/doctor/hangwatch.c) is
 * detached from the task (its own session, a grandchild), so the program
 * never sees it among its children, and it ends with the node's tasks.
 * Its environment is built here, not inherited: the step's key, which the
 * task's environment (applied at exec) does not hold yet, and only what
 * srun and scancel need.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dist_train.h"
#include "libdist/handover.h"

#define ENV_MAX 6
#define WATCH_PATH_DEFAULT "/usr/local/bin:/usr/bin:/bin"

/* "NAME=value of the step's NAME" (malloc'ed), or NULL when unset. */
static char *env_entry (spank_t sp, const char *name, const char *fallback)
{
    char *value = dist_train_getenv_any (sp, name), *entry = NULL;
    const char *v = value != NULL ? value : fallback;

    if (v != NULL && asprintf (&entry, "%s=%s", name, v) < 0)
        entry = NULL;
    free (value);
    return entry;
}

/* In the grandchild: a clean slate, then the watcher. */
static void exec_watcher (char *const argv[], char *const envp[])
{
    sigset_t none;
    int null = open ("/dev/null", O_RDWR);

    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal (sig, SIG_DFL);
    if (null >= 0) {
        dup2 (null, STDIN_FILENO);
        dup2 (null, STDOUT_FILENO);
    }
    /* (stderr stays the task's: the decider's verdict goes there) */
    close_range (3, ~0U, 0);
    execve (argv[0], argv, envp);
    dprintf (STDERR_FILENO,
             "%s: hang=: cannot run %s (%s): this step runs without hang=; install "
             "slurm-dist-train where the task runs (or in its container image)\n",
             PLUGIN_NAME, argv[0], strerror (errno));
}

/* fork, a new session, fork again: the watcher is nobody's child here. */
static int spawn (char *const argv[], char *const envp[])
{
    pid_t pid = fork ();
    int status = 0;

    if (pid < 0)
        return -1;
    if (pid == 0) {
        setsid ();
        pid = fork ();
        if (pid == 0)
            exec_watcher (argv, envp);
        _exit (pid < 0 ? 1 : 0);
    }
    while (waitpid (pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED (status) && WEXITSTATUS (status) == 0 ? 0 : -1;
}

int dist_train_hang_watch_start (spank_t sp, const struct dist_hang_watch *h)
{
    char seconds[16], nodes[16], id[16], tasks[16], stepd[16], port[8], step[32];
    char *argv[] = {(char *) h->doctor,
                    "hang-watch",
                    step,
                    seconds,
                    nodes,
                    id,
                    tasks,
                    (char *) h->node_name,
                    stepd,
                    (char *) h->addr,
                    port,
                    h->lead ? "lead" : "follow",
                    NULL};
    char *envp[ENV_MAX + 1] = {NULL};
    int rc = -1;

    if (h->key[0] == '\0' || (h->port == 0 && h->node_count > 1)) {
        slurm_error ("%s: hang=: %s; this step runs without hang=", PLUGIN_NAME,
                     h->key[0] == '\0' ? "srun handed over no key for the step (load the plugin "
                                         "in srun's plugstack.conf too)"
                                       : "the site's port_range has a single port, and the "
                                         "watchers need the one after MASTER_PORT");
        return -1;
    }
    snprintf (step, sizeof (step), "%lu.%lu", (unsigned long) h->job_id,
              (unsigned long) h->step_id);
    snprintf (seconds, sizeof (seconds), "%lu", (unsigned long) h->seconds);
    snprintf (nodes, sizeof (nodes), "%lu", (unsigned long) h->node_count);
    snprintf (id, sizeof (id), "%lu", (unsigned long) h->node_id);
    snprintf (tasks, sizeof (tasks), "%lu", (unsigned long) h->local_tasks);
    snprintf (stepd, sizeof (stepd), "%ld", (long) getppid ());
    snprintf (port, sizeof (port), "%u", (unsigned) h->port);
    if (asprintf (&envp[0], "%s=%s", DIST_STEP_KEY_VAR, h->key) < 0)
        envp[0] = NULL;
    envp[1] = strdup ("DIST_TRAIN=off");
    envp[2] = env_entry (sp, "PATH", WATCH_PATH_DEFAULT);
    envp[3] = env_entry (sp, "SLURM_CONF", NULL);
    if (envp[0] != NULL && envp[1] != NULL && envp[2] != NULL)
        rc = spawn (argv, envp);
    if (rc < 0)
        slurm_error ("%s: hang=: cannot start the watcher on %s: %m; this step runs without "
                     "hang=",
                     PLUGIN_NAME, h->node_name);
    for (size_t i = 0; i < ENV_MAX; i++)
        free (envp[i]);
    return rc;
}
