/* fuzz_spank.c - the plugin's slurmstepd path end to end: slurm_spank_init
 * with the admin's plugstack arguments, the --dist-train callback,
 * init_post_opt, user_init, then task_init_privileged, task_init and
 * task_exit for each local task, and slurm_spank_exit, against the stand-in
 * slurmstepd of spank_standin.c.  The spank/ and libdist/ sources are linked
 * in; no Slurm runs.
 *
 * Input: one directive a line (values may hold \n, \r, \t, \e, \\):
 *   arg KEY=VALUE        a plugstack.conf argument
 *   option [SPEC]        --dist-train[=SPEC] given to srun
 *   item job=N step=N nnodes=N nodeid=N ntasks=N local=N base=N cpus=N
 *        restart=N cores=LIST exit=STATUS exittask=N
 *                        what slurmstepd knows (kept consistent as Slurm's is)
 *   env NAME=VALUE       the job's environment (SLURM_STEP_NODELIST, ...)
 *   taskenv NAME=VALUE   set in each task's environment after user_init and
 *                        before the plugin's task_init, as a plugin that ran
 *                        its task_init first does (pyxis: the container's
 *                        environment); at most 8
 *   host NAME=ADDR,...   what NAME resolves to (no DNS is asked)
 *   topology NAME        HWLOC_XMLFILE: tests/topologies/NAME (default
 *                        minicluster-4gpu.xml)
 *   expect NAME=VALUE    every task's environment must hold this after
 *                        task_init (at most 8; only in the regression
 *                        tests' build, FUZZ_SPANK_EXPECT: a fuzzer would
 *                        write wrong expectations of its own)
 * FUZZ_SPANK_TRACE=1 in the environment prints what the plugin logs and
 * what each task's environment becomes.
 *
 * What slurmstepd keeps until it exits (the node's binding plan, fail
 * fast's "reported", TF_CONFIG's text) is released after each input, so
 * that a leak shows and every input may report a failed rank. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spank/dist_train.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/spank_standin.h"

#ifndef FUZZ_TOPOLOGY_DIR
#define FUZZ_TOPOLOGY_DIR "tests/topologies"
#endif
#define ARGS_MAX 16
#define LOCAL_MAX 16 /* tasks on this node: each is a task_init */
#define STEP_MAX (1u << 16) /* nodes and tasks of the step */

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerInitialize (int *argc, char ***argv)
{
    (void) argc, (void) argv;
    /* slurmstepd's own environment names the node (slurmd's name): the
     * topology cache's files are named after it */
    setenv ("SLURMD_NODENAME", "fuzznode", 1);
    return 0;
}

/* \n, \r, \t, \e and \\ in place. */
static void unescape (char *s)
{
    char *out = s;

    for (; *s != '\0'; s++) {
        if (*s != '\\' || s[1] == '\0') {
            *out++ = *s;
            continue;
        }
        switch (*++s) {
        case 'n':
            *out++ = '\n';
            break;
        case 'r':
            *out++ = '\r';
            break;
        case 't':
            *out++ = '\t';
            break;
        case 'e':
            *out++ = '\033';
            break;
        default:
            *out++ = *s;
            break;
        }
    }
    *out = '\0';
}

static uint32_t number (const char *s)
{
    return (uint32_t) strtoul (s, NULL, 0);
}

/* The step's numbers that a directive "NAME=N" sets, by name. */
static const struct {
    const char *name;
    size_t offset;
} number_items[] = {
    {"job", offsetof (struct standin_items, job_id)},
    {"step", offsetof (struct standin_items, step_id)},
    {"nnodes", offsetof (struct standin_items, nnodes)},
    {"nodeid", offsetof (struct standin_items, nodeid)},
    {"ntasks", offsetof (struct standin_items, ntasks)},
    {"local", offsetof (struct standin_items, local)},
    {"base", offsetof (struct standin_items, base)},
    {"cpus", offsetof (struct standin_items, cpus_per_task)},
    {"restart", offsetof (struct standin_items, restart)},
};

/* Set the step's number NAME to v; false when NAME is none of them. */
static bool set_number_item (const char *name, const char *v)
{
    for (size_t i = 0; i < sizeof (number_items) / sizeof (number_items[0]); i++)
        if (strcmp (name, number_items[i].name) == 0) {
            *(uint32_t *) ((char *) &standin_items + number_items[i].offset) = number (v);
            return true;
        }
    return false;
}

static void parse_items (char *words, int *exittask)
{
    struct standin_items *it = &standin_items;
    char *w, *save = NULL;

    for (w = strtok_r (words, " ", &save); w != NULL; w = strtok_r (NULL, " ", &save)) {
        char *v = strchr (w, '=');
        if (v == NULL)
            continue;
        *v++ = '\0';
        if (set_number_item (w, v))
            continue;
        if (strcmp (w, "exit") == 0)
            it->exit_status = (int) number (v);
        else if (strcmp (w, "exittask") == 0)
            *exittask = (int) number (v);
        else if (strcmp (w, "cores") == 0) {
            free (it->cores);
            it->cores = fuzz_dup (v);
        }
    }
}

/* What Slurm guarantees of its items, whatever the input said. */
static void keep_consistent (void)
{
    struct standin_items *it = &standin_items;

    if (it->nnodes == 0 || it->nnodes > STEP_MAX)
        it->nnodes = 1 + it->nnodes % 8;
    it->nodeid %= it->nnodes;
    if (it->ntasks > STEP_MAX)
        it->ntasks %= STEP_MAX;
    if (it->ntasks < it->nnodes)
        it->ntasks = it->nnodes; /* every node of a step runs a task */
    it->local = it->local == 0 ? 1 : it->local > LOCAL_MAX ? 1 + it->local % LOCAL_MAX : it->local;
    if (it->local > it->ntasks)
        it->local = it->ntasks;
    if (it->base > it->ntasks - it->local)
        it->base = it->ntasks - it->local;
    if (it->cpus_per_task == 0)
        it->cpus_per_task = 1;
    if (it->cores == NULL)
        it->cores = fuzz_dup ("0-3");
}

/* One input's directives: what slurmstepd is given before slurm_spank_init. */
struct step_input {
    char *av[ARGS_MAX]; /* the plugstack arguments, each its own copy */
    int ac;
    bool option; /* --dist-train given */
    char *spec; /* its =SPEC, NULL without; in the input's text */
    char topology[512];
    char *expect[8], *taskenv[8]; /* NAME=VALUE, in the input's text */
    int nexpect, ntaskenv;
    int exittask; /* the local task that ends with the items' exit status */
};

/* A site's topology= names a file of the tree: nothing else is read. */
static void add_arg (struct step_input *in, const char *value)
{
    if (in->ac >= ARGS_MAX)
        return;
    if (strncmp (value, "topology=", 9) == 0 && strchr (value + 9, '/') == NULL
        && value[9] != '\0') {
        char *arg = malloc (strlen (FUZZ_TOPOLOGY_DIR) + strlen (value) + 2);
        sprintf (arg, "topology=%s/%s", FUZZ_TOPOLOGY_DIR, value + 9);
        in->av[in->ac++] = arg;
    } else if (strncmp (value, "topology=/", 10) != 0) {
        in->av[in->ac++] = fuzz_dup (value);
    }
}

/* NAME=VALUE into the stand-in's environment (env) or its names (host). */
static void set_pair (char *value, void (*set) (const char *, const char *))
{
    char *eq = strchr (value, '=');

    if (eq == NULL)
        return;
    *eq = '\0';
    set (value, eq + 1);
}

/* NAME=VALUE kept for every task, at most 8 of them. */
static void keep_pair (char **pairs, int *n, char *value)
{
    if (strchr (value, '=') != NULL && *n < 8)
        pairs[(*n)++] = value;
}

static void parse_directive (struct step_input *in, const char *line, char *value)
{
    if (strcmp (line, "arg") == 0) {
        add_arg (in, value);
    } else if (strcmp (line, "option") == 0) {
        in->option = true;
        in->spec = *value != '\0' ? value : NULL;
    } else if (strcmp (line, "item") == 0) {
        parse_items (value, &in->exittask);
    } else if (strcmp (line, "env") == 0) {
        set_pair (value, standin_setenv);
    } else if (strcmp (line, "taskenv") == 0) {
        keep_pair (in->taskenv, &in->ntaskenv, value);
    } else if (strcmp (line, "host") == 0) {
        set_pair (value, standin_add_host);
#ifdef FUZZ_SPANK_EXPECT
    } else if (strcmp (line, "expect") == 0) {
        keep_pair (in->expect, &in->nexpect, value);
#endif
    } else if (strcmp (line, "topology") == 0 && strchr (value, '/') == NULL && *value != '\0') {
        snprintf (in->topology, sizeof (in->topology), "%s/%s", FUZZ_TOPOLOGY_DIR, value);
    }
}

static void parse_input (struct step_input *in, char *text)
{
    char *p = text, *line;

    snprintf (in->topology, sizeof (in->topology), "%s/minicluster-4gpu.xml", FUZZ_TOPOLOGY_DIR);
    while ((line = fuzz_line (&p)) != NULL) {
        char *value = strchr (line, ' ');
        if (value != NULL)
            *value++ = '\0';
        else
            value = line + strlen (line);
        unescape (value);
        parse_directive (in, line, value);
    }
}

/* What a plugin whose task_init ran first left in the task's environment. */
static void set_taskenv (const struct step_input *in)
{
    for (int e = 0; e < in->ntaskenv; e++) {
        char *eq = strchr (in->taskenv[e], '=');
        *eq = '\0';
        standin_setenv (in->taskenv[e], eq + 1);
        *eq = '=';
    }
}

static void check_expect (const struct step_input *in, int t)
{
    for (int e = 0; e < in->nexpect; e++) {
        char *eq = strchr (in->expect[e], '=');
        const char *got;
        *eq = '\0';
        got = standin_getenv (in->expect[e]);
        if (got == NULL || strcmp (got, eq + 1) != 0)
            fprintf (stderr, "fuzz_spank: task %d: %s=%s, expected %s\n", t, in->expect[e],
                     got != NULL ? got : "(unset)", eq + 1);
        FUZZ_CHECK (got != NULL && strcmp (got, eq + 1) == 0);
        *eq = '=';
    }
}

/* slurmstepd: init, the options srun passed, post_opt, user_init, each task's
 * task_init and task_exit, and the step's exit. */
static void run_step (spank_t sp, struct step_input *in)
{
    int t;

    if (slurm_spank_init (sp, in->ac, in->av) != 0)
        return;
    FUZZ_CHECK (standin_option != NULL);
    if (in->option)
        (void) standin_option->cb (standin_option->val, in->spec, 1);
    (void) slurm_spank_init_post_opt (sp, in->ac, in->av);
    FUZZ_CHECK (slurm_spank_user_init (sp, in->ac, in->av) == 0);
    /* each task in its own process: its own copy of the environment (the
     * plugin's state is the node's, which task_init only reads) */
    standin_env_save ();
    for (t = 0; t < (int) standin_items.local; t++) {
        standin_items.task = t;
        (void) slurm_spank_task_init_privileged (sp, in->ac, in->av);
        set_taskenv (in);
        (void) slurm_spank_task_init (sp, in->ac, in->av);
        standin_trace_env ("of a task");
        check_expect (in, t);
        standin_env_restore ();
    }
    /* back in slurmstepd, each task ends */
    for (t = 0; t < (int) standin_items.local; t++) {
        int status = standin_items.exit_status;
        standin_items.task = t;
        standin_items.exit_status = t == in->exittask ? status : 0;
        (void) slurm_spank_task_exit (sp, in->ac, in->av);
        standin_items.exit_status = status;
    }
    standin_items.task = -1;
    /* the step ends: slurmstepd lets go of the node's state (leaks show) */
    (void) slurm_spank_exit (sp, in->ac, in->av);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    static struct spank_handle *const sp = (struct spank_handle *) &standin_items;
    char *text = fuzz_string (data, size);
    struct step_input in = {.ac = 0};

    standin_reset ();
    parse_input (&in, text);
    keep_consistent ();
    setenv ("HWLOC_XMLFILE", in.topology, 1);
    run_step (sp, &in);
    standin_reset ();
    unsetenv ("HWLOC_XMLFILE");
    while (in.ac > 0)
        free (in.av[--in.ac]);
    free (text);
    return 0;
}
