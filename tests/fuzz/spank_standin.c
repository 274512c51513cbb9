/* spank_standin.c - the SPANK calls, Slurm's hostlist and name resolution
 * for fuzz_spank (see spank_standin.h): the plugin's files are linked as they
 * are, with the link's --wrap sending their name look-ups and CPU affinity
 * here, and spank/forward.c replaced by the step's stderr below.  Every message the plugin logs is
 * formatted, so a bad format or argument is caught; messages for slurmd's
 * log must be one printable line. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/spank.h>

#include "libdist/hostlist.h"
#include "spank/compat.h"
#include "spank/dist_train.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/spank_standin.h"

struct standin_items standin_items;
struct spank_option *standin_option;
spank_context_t standin_context = S_CTX_REMOTE;
size_t standin_hosts_max = STANDIN_HOSTS_MAX;
const struct standin_srun *standin_srun;

/* ---- the job's environment ---------------------------------------------- */

struct env {
    char *name[STANDIN_ENV_MAX];
    char *value[STANDIN_ENV_MAX];
    int n;
};

static struct env env, saved;

static void env_clear (struct env *e)
{
    for (int i = 0; i < e->n; i++) {
        free (e->name[i]);
        free (e->value[i]);
    }
    e->n = 0;
}

static int env_find (const char *name)
{
    for (int i = 0; i < env.n; i++)
        if (strcmp (env.name[i], name) == 0)
            return i;
    return -1;
}

const char *standin_getenv (const char *name)
{
    int i = env_find (name);

    return i >= 0 ? env.value[i] : NULL;
}

void standin_setenv (const char *name, const char *value)
{
    int i = env_find (name);

    if (i >= 0) {
        free (env.value[i]);
        env.value[i] = fuzz_dup (value);
    } else if (env.n < STANDIN_ENV_MAX) {
        env.name[env.n] = fuzz_dup (name);
        env.value[env.n++] = fuzz_dup (value);
    }
}

static void env_copy (struct env *to, const struct env *from)
{
    env_clear (to);
    for (int i = 0; i < from->n; i++) {
        to->name[i] = fuzz_dup (from->name[i]);
        to->value[i] = fuzz_dup (from->value[i]);
    }
    to->n = from->n;
}

void standin_env_save (void)
{
    env_copy (&saved, &env);
}

void standin_env_restore (void)
{
    env_copy (&env, &saved);
}

/* S_JOB_ENV: the environment as slurmstepd's array of NAME=VALUE, made
 * again at each call (the plugin copies what it keeps). */
static char *env_array[STANDIN_ENV_MAX + 1];

static void env_array_clear (void)
{
    for (int i = 0; env_array[i] != NULL; i++) {
        free (env_array[i]);
        env_array[i] = NULL;
    }
}

static char **env_array_make (void)
{
    env_array_clear ();
    for (int i = 0; i < env.n; i++) {
        size_t len = strlen (env.name[i]) + strlen (env.value[i]) + 2;
        if ((env_array[i] = malloc (len)) == NULL)
            abort ();
        snprintf (env_array[i], len, "%s=%s", env.name[i], env.value[i]);
    }
    return env_array;
}

/* As slurmstepd's: a value that does not fit is cut, and says so. */
spank_err_t spank_getenv (spank_t sp, const char *var, char *buf, int len)
{
    int i;

    if (sp == NULL || var == NULL || buf == NULL || len <= 0)
        return ESPANK_BAD_ARG;
    if ((i = env_find (var)) < 0)
        return ESPANK_ENV_NOEXIST;
    if (strlen (env.value[i]) >= (size_t) len) {
        memcpy (buf, env.value[i], (size_t) len - 1);
        buf[len - 1] = '\0';
        return ESPANK_NOSPACE;
    }
    strcpy (buf, env.value[i]);
    return ESPANK_SUCCESS;
}

spank_err_t spank_setenv (spank_t sp, const char *var, const char *val, int overwrite)
{
    if (sp == NULL || var == NULL || val == NULL)
        return ESPANK_BAD_ARG;
    if (env_find (var) >= 0 && !overwrite)
        return ESPANK_ENV_EXISTS;
    standin_setenv (var, val);
    return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv (spank_t sp, const char *var)
{
    int i;

    if (sp == NULL || var == NULL)
        return ESPANK_BAD_ARG;
    if ((i = env_find (var)) >= 0) {
        free (env.name[i]);
        free (env.value[i]);
        env.name[i] = env.name[env.n - 1];
        env.value[i] = env.value[env.n - 1];
        env.n--;
    }
    return ESPANK_SUCCESS;
}

/* ---- items, context, options ---------------------------------------------- */

spank_context_t spank_context (void)
{
    return standin_context;
}

spank_err_t spank_option_register (spank_t sp, struct spank_option *opt)
{
    if (sp == NULL || opt == NULL || opt->name == NULL || opt->cb == NULL)
        return ESPANK_BAD_ARG;
    standin_option = opt;
    return ESPANK_SUCCESS;
}

/* No other plugin's option is ever given: the stand-in has no pyxis. */
spank_err_t spank_option_getopt (spank_t sp, struct spank_option *opt, char **argp)
{
    if (sp == NULL || opt == NULL || opt->name == NULL)
        return ESPANK_BAD_ARG;
    if (argp != NULL)
        *argp = NULL;
    return ESPANK_ERROR;
}

/* The step's counts and ids, each a uint32_t; NULL for any other item. */
static const uint32_t *step_count (const struct standin_items *it, spank_item_t item)
{
    switch (item) {
    case S_JOB_ID:
        return &it->job_id;
    case S_JOB_STEPID:
        return &it->step_id;
    case S_JOB_NNODES:
        return &it->nnodes;
    case S_JOB_NODEID:
        return &it->nodeid;
    case S_JOB_TOTAL_TASK_COUNT:
        return &it->ntasks;
    case S_JOB_LOCAL_TASK_COUNT:
        return &it->local;
    case S_STEP_CPUS_PER_TASK:
        return &it->cpus_per_task;
    case S_SLURM_RESTART_COUNT:
        return &it->restart;
    default:
        return NULL;
    }
}

/* A task's global id to its local one, or back: the node's tasks are
 * base .. base + local - 1. */
static spank_err_t task_id_map (const struct standin_items *it, spank_item_t item, va_list *ap)
{
    uint32_t id = va_arg (*ap, uint32_t), *out = va_arg (*ap, uint32_t *);

    if (item == S_JOB_LOCAL_TO_GLOBAL_ID && id < it->local) {
        *out = it->gtids != NULL ? it->gtids[id] : it->base + id;
        return ESPANK_SUCCESS;
    }
    if (item == S_JOB_GLOBAL_TO_LOCAL_ID && it->gtids == NULL && id >= it->base
        && id - it->base < it->local) {
        *out = id - it->base;
        return ESPANK_SUCCESS;
    }
    for (uint32_t i = 0; item == S_JOB_GLOBAL_TO_LOCAL_ID && it->gtids != NULL && i < it->local;
         i++)
        if (it->gtids[i] == id) {
            *out = i;
            return ESPANK_SUCCESS;
        }
    return ESPANK_NOEXIST;
}

/* What only task_init and task_exit may ask: the task they run for. */
static spank_err_t task_item (const struct standin_items *it, spank_item_t item, va_list *ap)
{
    if (it->task < 0)
        return ESPANK_NOT_TASK;
    if (item == S_TASK_ID)
        *va_arg (*ap, int *) = it->task;
    else if (item == S_TASK_GLOBAL_ID)
        *va_arg (*ap, uint32_t *) =
            it->gtids != NULL ? it->gtids[it->task] : it->base + (uint32_t) it->task;
    else
        *va_arg (*ap, int *) = it->exit_status;
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item (spank_t sp, spank_item_t item, ...)
{
    const struct standin_items *it = &standin_items;
    spank_err_t rc = ESPANK_SUCCESS;
    const uint32_t *count = step_count (it, item);
    va_list ap;

    if (sp == NULL)
        return ESPANK_BAD_ARG;
    va_start (ap, item);
    if (count != NULL) {
        *va_arg (ap, uint32_t *) = *count;
    } else if (item == S_JOB_ENV) {
        *va_arg (ap, char ***) = env_array_make ();
    } else if (item == S_JOB_ALLOC_CORES) {
        *va_arg (ap, char **) = it->cores;
    } else if (item == S_JOB_GLOBAL_TO_LOCAL_ID || item == S_JOB_LOCAL_TO_GLOBAL_ID) {
        rc = task_id_map (it, item, &ap);
    } else if (item == S_TASK_ID || item == S_TASK_GLOBAL_ID || item == S_TASK_EXIT_STATUS) {
        rc = task_item (it, item, &ap);
    } else {
        rc = ESPANK_BAD_ARG;
    }
    va_end (ap);
    return rc;
}

/* ---- logging -------------------------------------------------------------- */

/* FUZZ_SPANK_TRACE=1: what the plugin says and sets, on stderr (to write
 * seeds). */
static int tracing (void)
{
    static int on = -1;

    if (on < 0)
        on = getenv ("FUZZ_SPANK_TRACE") != NULL;
    return on;
}

void standin_trace_env (const char *when)
{
    if (!tracing ())
        return;
    fprintf (stderr, "-- environment %s:\n", when);
    for (int i = 0; i < env.n; i++)
        fprintf (stderr, "   %s=%s\n", env.name[i], env.value[i]);
}

bool standin_said;

/* slurmd's log: one line, nothing a terminal would act on.  In srun, a line the user
 * sees (shown: info and error) is noted in standin_said. */
static void log_line (bool shown, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 2, 0)));
static void log_line (bool shown, const char *fmt, va_list ap)
{
    char line[4096];

    vsnprintf (line, sizeof (line), fmt, ap);
    if (shown && standin_context == S_CTX_LOCAL)
        standin_said = true;
    if (tracing ())
        fprintf (stderr, "log: %s\n", line);
    for (const char *c = line; *c != '\0'; c++)
        FUZZ_CHECK ((unsigned char) *c >= 0x20 && (unsigned char) *c != 0x7f);
}

#define LOG_FUNCTION(name, shown)                                                                  \
    void name (const char *fmt, ...)                                                               \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start (ap, fmt);                                                                        \
        log_line (shown, fmt, ap);                                                                 \
        va_end (ap);                                                                               \
    }

LOG_FUNCTION (slurm_error, true)
LOG_FUNCTION (slurm_info, true)
LOG_FUNCTION (slurm_verbose, false)
LOG_FUNCTION (slurm_debug, false)

/* The user's stderr: any text (the help has several lines). */
void slurm_spank_log (const char *fmt, ...)
{
    char text[8192];
    va_list ap;

    va_start (ap, fmt);
    vsnprintf (text, sizeof (text), fmt, ap);
    va_end (ap);
    if (tracing ())
        fprintf (stderr, "user: %s\n", text);
}

char *slurm_strerror (int errnum)
{
    return strerror (errnum);
}

/* ---- srun's side (spank/local.c): bench_sim's answers, else never called ------ */

slurm_conf_t slurm_conf;

slurm_step_layout_t *slurm_job_step_layout_get (slurm_step_id_t *step_id)
{
    (void) step_id;
    if (standin_srun == NULL)
        abort ();
    return standin_srun->layout;
}

void slurm_job_step_layout_free (slurm_step_layout_t *layout)
{
    (void) layout;
    if (standin_srun == NULL)
        abort ();
}

int slurm_load_node_single (node_info_msg_t **resp, char *node_name, uint16_t show_flags)
{
    node_info_msg_t *msg;

    (void) show_flags;
    if (standin_srun == NULL)
        abort ();
    if ((msg = calloc (1, sizeof (*msg))) == NULL
        || (msg->node_array = calloc (1, sizeof (*msg->node_array))) == NULL) {
        free (msg);
        return SLURM_ERROR;
    }
    msg->record_count = 1;
    msg->node_array[0].name = fuzz_dup (node_name);
    msg->node_array[0].node_addr = fuzz_dup (standin_srun->node_addr);
    *resp = msg;
    return SLURM_SUCCESS;
}

void slurm_free_node_info_msg (node_info_msg_t *msg)
{
    if (standin_srun == NULL)
        abort ();
    if (msg == NULL)
        return;
    for (uint32_t i = 0; i < msg->record_count; i++) {
        free (msg->node_array[i].name);
        free (msg->node_array[i].node_addr);
    }
    free (msg->node_array);
    free (msg);
}

/* The answer's records are never read: only printed, from standin_srun. */
static int load_topo (topo_info_response_msg_t **resp)
{
    if (standin_srun == NULL)
        abort ();
    if (standin_srun->topology == NULL)
        return SLURM_ERROR;
    if ((*resp = calloc (1, sizeof (**resp))) == NULL)
        return SLURM_ERROR;
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 11, 0)
    (*resp)->record_count = 1; /* (compat.c prints none of an empty answer there) */
#endif
    return SLURM_SUCCESS;
}

static void print_topo (FILE *out)
{
    if (standin_srun == NULL)
        abort ();
    fputs (standin_srun->topology, out);
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
int slurm_load_topo (topo_info_response_msg_t **resp, char *name)
{
    (void) name;
    return load_topo (resp);
}

void slurm_print_topo_info_msg (FILE *out, topo_info_response_msg_t *msg, char *node_list,
                                char *unit, int one_liner)
{
    (void) msg, (void) node_list, (void) unit, (void) one_liner;
    print_topo (out);
}
#else
int slurm_load_topo (topo_info_response_msg_t **resp)
{
    return load_topo (resp);
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
void slurm_print_topo_info_msg (FILE *out, topo_info_response_msg_t *msg, char *node_list,
                                int one_liner)
{
    (void) msg, (void) node_list, (void) one_liner;
    print_topo (out);
}
#else
void slurm_print_topo_info_msg (FILE *out, topo_info_response_msg_t *msg, int one_liner)
{
    (void) msg, (void) one_liner;
    print_topo (out);
}
#endif
#endif

void slurm_free_topo_info_msg (topo_info_response_msg_t *msg)
{
    if (standin_srun == NULL)
        abort ();
    free (msg);
}

/* ---- Slurm's hostlist, minimally ------------------------------------------ */

/* Read as Slurm's is (libdist/hostlist.c, DIST_HOSTLIST_LOOSE): commas, spaces
 * or tabs outside brackets separate names, a newline or an escape is part of
 * one; one bracket per host expression (Slurm allows several). */
struct hostlist {
    char **host;
    size_t n, next;
    /* "PREFIX[LO-HI]" (bench_sim's lists) is kept as its range, as Slurm keeps one:
     * names are made as they are shifted */
    char prefix[64];
    unsigned long lo, hi;
    bool range;
};

static int push (const char *name, void *arg)
{
    struct hostlist *hl = arg;
    char **more;

    if (hl->n == standin_hosts_max)
        return -1;
    /* (at 0, 1, 2, 4, ... names: doubled) */
    if ((hl->n & (hl->n - 1)) == 0) {
        if ((more = realloc (hl->host, (hl->n > 0 ? 2 * hl->n : 1) * sizeof (*more))) == NULL)
            return -1;
        hl->host = more;
    }
    hl->host[hl->n++] = fuzz_dup (name);
    return 0;
}

/* One range of plain numbers, "PREFIX[LO-HI]" with LO <= HI, no leading zeros. */
static bool take_range (struct hostlist *hl, const char *text)
{
    const char *open = strchr (text, '[');
    char *end;

    if (open == NULL || (size_t) (open - text) >= sizeof (hl->prefix) || open[1] < '1'
        || open[1] > '9')
        return false;
    hl->lo = strtoul (open + 1, &end, 10);
    if (*end != '-' || end[1] < '1' || end[1] > '9')
        return false;
    hl->hi = strtoul (end + 1, &end, 10);
    if (strcmp (end, "]") != 0 || hl->hi < hl->lo || hl->hi - hl->lo >= standin_hosts_max)
        return false;
    memcpy (hl->prefix, text, (size_t) (open - text));
    hl->prefix[open - text] = '\0';
    for (const char *c = hl->prefix; *c != '\0'; c++)
        if (strchr ("[],- \t\n\\", *c) != NULL)
            return false;
    hl->n = hl->hi - hl->lo + 1;
    return hl->range = true;
}

dt_hostlist_t slurm_hostlist_create (const char *text)
{
    struct hostlist *hl = calloc (1, sizeof (*hl));

    if (hl == NULL)
        return NULL;
    if (text != NULL && standin_srun != NULL && take_range (hl, text))
        return hl;
    if (dist_hostlist_each (text != NULL ? text : "", DIST_HOSTLIST_LOOSE, push, hl) != 0) {
        slurm_hostlist_destroy (hl);
        return NULL;
    }
    return hl;
}

char *slurm_hostlist_shift (dt_hostlist_t hl)
{
    char *name;

    if (hl == NULL || hl->next == hl->n)
        return NULL;
    if (hl->range) {
        if ((name = malloc (strlen (hl->prefix) + 24)) != NULL)
            sprintf (name, "%s%lu", hl->prefix, hl->lo + hl->next++);
        return name;
    }
    name = hl->host[hl->next];
    hl->host[hl->next++] = NULL;
    return name;
}

int slurm_hostlist_find (dt_hostlist_t hl, const char *hostname)
{
    size_t len;
    unsigned long v;
    char *end;

    if (hl == NULL || hostname == NULL)
        return -1;
    if (hl->range) {
        len = strlen (hl->prefix);
        if (strncmp (hostname, hl->prefix, len) != 0 || hostname[len] < '1' || hostname[len] > '9')
            return -1;
        v = strtoul (hostname + len, &end, 10);
        return *end == '\0' && v >= hl->lo + hl->next && v <= hl->hi ? (int) (v - hl->lo - hl->next)
                                                                     : -1;
    }
    for (size_t i = hl->next; i < hl->n; i++)
        if (strcmp (hl->host[i], hostname) == 0)
            return (int) (i - hl->next);
    return -1;
}

void slurm_hostlist_destroy (dt_hostlist_t hl)
{
    if (hl == NULL)
        return;
    for (size_t i = 0; !hl->range && i < hl->n; i++)
        free (hl->host[i]);
    free (hl->host);
    free (hl);
}

/* ---- name resolution (network.c's getaddrinfo, by the link's --wrap) ---- */

struct host {
    char *name;
    char *addrs;
};

static struct host hosts[16];
static int nhosts;

void standin_add_host (const char *name, const char *addrs)
{
    if (nhosts < (int) (sizeof (hosts) / sizeof (hosts[0]))) {
        hosts[nhosts].name = fuzz_dup (name);
        hosts[nhosts++].addrs = fuzz_dup (addrs);
    }
}

static struct addrinfo *entry (const char *addr)
{
    struct addrinfo *ai = calloc (1, sizeof (*ai));
    struct sockaddr_in in = {.sin_family = AF_INET};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};

    if (inet_pton (AF_INET, addr, &in.sin_addr) == 1) {
        ai->ai_family = AF_INET;
        ai->ai_addrlen = sizeof (in);
        ai->ai_addr = malloc (sizeof (in));
        memcpy (ai->ai_addr, &in, sizeof (in));
    } else if (inet_pton (AF_INET6, addr, &in6.sin6_addr) == 1) {
        ai->ai_family = AF_INET6;
        ai->ai_addrlen = sizeof (in6);
        ai->ai_addr = malloc (sizeof (in6));
        memcpy (ai->ai_addr, &in6, sizeof (in6));
    } else {
        free (ai);
        return NULL;
    }
    ai->ai_socktype = SOCK_STREAM;
    return ai;
}

/* (the link's --wrap=getaddrinfo,--wrap=freeaddrinfo: the plugin's look-ups come here,
 * never to DNS) */
int __wrap_getaddrinfo (const char *node, const char *service, const struct addrinfo *hints,
                        struct addrinfo **res);
void __wrap_freeaddrinfo (struct addrinfo *res);

/* A numeric address is itself; a name is what the input said, else unknown. */
int __wrap_getaddrinfo (const char *node, const char *service, const struct addrinfo *hints,
                        struct addrinfo **res)
{
    struct addrinfo *list = NULL, **tail = &list;
    char *copy, *addr, *save = NULL;
    const char *addrs = node;

    (void) service, (void) hints;
    *res = NULL;
    if (node == NULL)
        return EAI_NONAME;
    for (int i = 0; i < nhosts; i++)
        if (strcmp (hosts[i].name, node) == 0)
            addrs = hosts[i].addrs;
    copy = fuzz_dup (addrs);
    for (addr = strtok_r (copy, ",", &save); addr != NULL; addr = strtok_r (NULL, ",", &save))
        if ((*tail = entry (addr)) != NULL)
            tail = &(*tail)->ai_next;
    free (copy);
    if (list == NULL)
        return EAI_NONAME;
    *res = list;
    return 0;
}

void __wrap_freeaddrinfo (struct addrinfo *res)
{
    while (res != NULL) {
        struct addrinfo *next = res->ai_next;
        free (res->ai_addr);
        free (res);
        res = next;
    }
}

/* (the link's --wrap=sched_setaffinity) binding is planned and exported, never applied to
 * the fuzzer itself. */
int __wrap_sched_setaffinity (pid_t pid, size_t size, const cpu_set_t *mask);
int __wrap_sched_setaffinity (pid_t pid, size_t size, const cpu_set_t *mask)
{
    (void) pid, (void) size, (void) mask;
    return 0;
}

/* spank/forward.c's place: the step's stderr takes every line at once, and nothing
 * sleeps. */
bool dist_train_stderr_line (const char *msg, size_t len)
{
    FUZZ_CHECK (len > 0 && msg[len - 1] == '\n');
    if (tracing ())
        fprintf (stderr, "stderr: %.*s", (int) len, msg);
    return true;
}

void dist_train_wait_forwarded (int fd)
{
    FUZZ_CHECK (fd == STDERR_FILENO);
}

/* spank/hangwatch.c's place: a fuzzed step must not fork a watcher per input.  What
 * the plugin hands it must be whole: names that end, a port where there are peers. */
int dist_train_hang_watch_start (spank_t sp, const struct dist_hang_watch *h)
{
    (void) sp;
    FUZZ_CHECK (h->seconds >= DIST_HANG_MIN_S && h->seconds <= DIST_HANG_MAX_S);
    FUZZ_CHECK (strlen (h->doctor) < DIST_PATH_MAX && strlen (h->node_name) < 64);
    FUZZ_CHECK (strlen (h->addr) < DIST_ADDR_MAX && strlen (h->key) <= DIST_STEP_KEY_HEX);
    FUZZ_CHECK (h->node_id < h->node_count && h->local_tasks > 0);
    if (tracing ())
        fprintf (stderr, "hang watch: %s node %u of %u, %s port %u%s\n", h->node_name,
                 (unsigned) h->node_id, (unsigned) h->node_count, h->addr, (unsigned) h->port,
                 h->lead ? ", decides" : "");
    return 0;
}

void standin_reset (void)
{
    env_array_clear ();
    env_clear (&env);
    env_clear (&saved);
    for (int i = 0; i < nhosts; i++) {
        free (hosts[i].name);
        free (hosts[i].addrs);
    }
    nhosts = 0;
    free (standin_items.cores);
    memset (&standin_items, 0, sizeof (standin_items));
    standin_items.task = -1;
    standin_option = NULL;
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
/* preflight's prepend: the stand-in has no command line to change. */
spank_err_t spank_prepend_task_argv (spank_t sp, int argc, const char *argv[])
{
    if (sp == NULL || argv == NULL || argc <= 0)
        return ESPANK_BAD_ARG;
    return standin_items.task >= 0 ? ESPANK_SUCCESS : ESPANK_NOT_TASK;
}
#endif
