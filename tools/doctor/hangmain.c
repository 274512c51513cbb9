/* hangmain.c - dist-train-doctor hang JOBID.STEPID: run a probe on every
 * node of a running step, beside it (srun --overlap, as the job's user),
 * and print who holds the step.
 *
 *   dist-train-doctor hang 1234.0 [--window S]
 *
 * Exit: 0 when no rank stands out, 1 when the verdict names ranks or a
 * node, 2 when the step could not be sampled.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hang.h"
#include "text.h"

#define P DOCTOR_PROGRAM " hang: "
#define EXIT_SETUP 2
#define OUTPUT_MAX (64 * 1024 * 1024) /* what the probes may print, all nodes */
#define SLURM_WAIT_MS 60000 /* for squeue, and for srun beyond the window */
#define STOP_GRACE_MS 5000 /* for srun to go after SIGTERM */

struct step_id {
    unsigned long job, step;
    char text[48];
};

static long now_ms (void)
{
    struct timespec t;
    clock_gettime (CLOCK_MONOTONIC, &t);
    return (long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int parse_step (const char *text, struct step_id *id)
{
    char *end;

    errno = 0;
    id->job = strtoul (text, &end, 10);
    if (end == text || *end != '.' || text[0] == '-' || errno != 0)
        return -1;
    text = end + 1;
    id->step = strtoul (text, &end, 10);
    if (end == text || *end != '\0' || text[0] == '-' || errno != 0 || id->job == 0
        || id->job > 0xffffffffUL || id->step >= 0xfffffff0UL)
        return -1;
    snprintf (id->text, sizeof (id->text), "%lu.%lu", id->job, id->step);
    return 0;
}

/* What a run of srun brings back: its output, and when to stop reading. */
struct capture {
    char *out;
    size_t len, cap;
    const char *done; /* the prefix of each probe's last line */
    size_t ndone; /* how many such lines end the run; 0: srun's end */
    bool with_stderr; /* take its standard error too */
    long grace_ms; /* from SIGTERM to SIGKILL when it is stopped */
};

/* A line of srun --label's output without its "TASK: " (whole lines, so that
 * two nodes' output never mixes within one). */
static const char *unlabel (const char *line)
{
    const char *p = line + strspn (line, " ");
    size_t digits = strspn (p, "0123456789");

    return digits > 0 && p[digits] == ':' && p[digits + 1] == ' ' ? p + digits + 2 : line;
}

/* Whether every probe has printed its last line: then srun need not be
 * waited for (a node cut off from the others delays the step's end). */
static bool all_done (const struct capture *c)
{
    size_t n = 0, plen = c->done != NULL ? strlen (c->done) : 0;

    if (c->ndone == 0)
        return false;

    for (const char *line = c->out; line != NULL && *line != '\0';) {
        const char *nl = strchr (line, '\n');
        if (nl == NULL)
            break;
        n += strncmp (unlabel (line), c->done, plen) == 0;
        line = nl + 1;
    }
    return c->ndone > 0 && n >= c->ndone;
}

/* Read the pipe into c until EOF, the probes are all done, or deadline;
 * 1 when srun is to be stopped. */
static int read_output (int fd, struct capture *c, long deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        long left = deadline - now_ms ();
        ssize_t n;
        if (left <= 0 || poll (&p, 1, (int) left) <= 0)
            return 1;
        if (c->len + 1 >= c->cap) {
            char *more = c->cap < OUTPUT_MAX ? realloc (c->out, c->cap * 2) : NULL;
            if (more == NULL)
                return 1;
            c->out = more;
            c->cap *= 2;
        }
        n = read (fd, c->out + c->len, c->cap - 1 - c->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        c->len += (size_t) n;
        c->out[c->len] = '\0';
        if (all_done (c))
            return 1;
    }
}

/* End srun: TERM, then KILL if it has not gone within grace_ms; its status. */
static int reap (pid_t pid, bool stop, long grace_ms)
{
    int status = -1;

    if (stop) {
        kill (pid, SIGTERM);
        for (long i = 0; i < grace_ms / 100; i++) {
            if (waitpid (pid, &status, WNOHANG) == pid)
                return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
            poll (NULL, 0, 100);
        }
        kill (pid, SIGKILL);
    }
    while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
        ;
    return !stop && WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

/* Run argv (DIST_TRAIN=off in its environment, so a site default does not
 * turn the plugin on for the probes) and take its output, standard and
 * error, at most OUTPUT_MAX bytes, within timeout_ms or until c->ndone
 * probes are done; srun's exit status, 0 when it was stopped because every
 * probe was done, -1 when it could not run or ran out of time. */
static int run_capture (char *const argv[], long timeout_ms, struct capture *c)
{
    long deadline = now_ms () + timeout_ms;
    int fds[2], stop;
    pid_t pid;

    c->len = 0;
    c->cap = 65536;
    if ((c->out = malloc (c->cap)) == NULL || pipe2 (fds, O_CLOEXEC) < 0)
        return -1;
    c->out[0] = '\0';
    if ((pid = fork ()) < 0) {
        close (fds[0]);
        close (fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2 (fds[1], STDOUT_FILENO);
        if (c->with_stderr)
            dup2 (fds[1], STDERR_FILENO);
        setenv ("DIST_TRAIN", "off", 1);
        execvp (argv[0], argv);
        fprintf (stderr, P "cannot run %s: %s\n", argv[0], strerror (errno));
        _exit (127);
    }
    close (fds[1]);
    stop = read_output (fds[0], c, deadline);
    close (fds[0]);
    if (stop && all_done (c)) {
        (void) reap (pid, true, c->grace_ms);
        return 0;
    }
    if (stop)
        fprintf (stderr, P "%s took longer than %ld s; stopped it\n", argv[0], timeout_ms / 1000);
    return stop ? (reap (pid, true, c->grace_ms), -1) : reap (pid, false, 0);
}

/* The nodes of a running step, as Slurm lists them ("node[1-8]"). */
static int step_nodes (const struct step_id *id, char *nodes, size_t size)
{
    char steps[64];
    char *argv[] = {"squeue", "--noheader", steps, "--format=%N", NULL};
    struct capture c = {.grace_ms = STOP_GRACE_MS};
    int rc;

    snprintf (steps, sizeof (steps), "--steps=%s", id->text);
    rc = run_capture (argv, SLURM_WAIT_MS, &c);
    if (rc == 0 && c.out != NULL) {
        c.out[strcspn (c.out, " \n")] = '\0';
        doctor_printable (nodes, size, c.out);
    }
    free (c.out);
    if (rc != 0 || nodes[0] == '\0') {
        fprintf (stderr,
                 P "step %s is not running (squeue --steps=%s lists no nodes); give a "
                   "running step as JOBID.STEPID: squeue --steps --me lists them\n",
                 id->text, id->text);
        return -1;
    }
    return 0;
}

/* Name the nodes of the step whose probe printed nothing, and keep them in s. */
static void report_silent (char (*names)[DOCTOR_NAME_MAX], size_t n, struct hang_sample *s)
{
    char *silent = s->silent;
    const size_t size = sizeof (s->silent);

    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < s->nnodes && !seen; j++)
            seen = strcmp (names[i], s->node[j]) == 0;
        if (!seen)
            doctor_list_add (silent, size, names[i]);
    }
    if (silent[0] != '\0')
        fprintf (stderr, P "no answer from %s: their ranks are missing from the report\n", silent);
}

/* Run what (a probe's argv, after the doctor's own path) on every node of
 * the step, beside it, and parse what they print into s; the nodes that
 * printed nothing are named when silent is set. */
static int run_probes (const struct step_id *id, const char *nodes, char *const what[3],
                       long timeout_ms, bool silent, struct hang_sample *s)
{
    char self[4096], jobid[32], nodelist[DOCTOR_LINE_MAX + 16], count[48], ntasks[48];
    char *argv[] = {"srun",
                    jobid,
                    "--overlap",
                    nodelist,
                    count,
                    ntasks,
                    "--ntasks-per-node=1",
                    "--quiet",
                    "--label",
                    "--input=none",
                    "--kill-on-bad-exit=0",
                    self,
                    what[0],
                    what[1],
                    what[2],
                    NULL};
    char (*names)[DOCTOR_NAME_MAX] = calloc (DOCTOR_NODES_MAX, sizeof (*names));
    ssize_t n = readlink ("/proc/self/exe", self, sizeof (self) - 1);
    struct capture c = {.done = strcmp (what[0], "hang-reach") == 0 ? "done " : "node ",
                        .with_stderr = true,
                        .grace_ms = timeout_ms < STOP_GRACE_MS ? timeout_ms : STOP_GRACE_MS};
    char *line, *save = NULL;
    int nnodes, rc;

    if (names == NULL || n <= 0
        || (nnodes = doctor_hostlist_expand (nodes, names, DOCTOR_NODES_MAX)) <= 0) {
        fprintf (stderr, P "cannot read the step's node list '%s'\n", nodes);
        free (names);
        return -1;
    }
    self[n] = '\0';
    snprintf (jobid, sizeof (jobid), "--jobid=%lu", id->job);
    snprintf (nodelist, sizeof (nodelist), "--nodelist=%s", nodes);
    snprintf (count, sizeof (count), "--nodes=%d", nnodes);
    snprintf (ntasks, sizeof (ntasks), "--ntasks=%d", nnodes);
    c.ndone = (size_t) nnodes;
    rc = run_capture (argv, timeout_ms, &c);
    for (line = c.out != NULL ? strtok_r (c.out, "\n", &save) : NULL; line != NULL;
         line = strtok_r (NULL, "\n", &save))
        /* what is not a probe's is srun's: shown when something failed */
        if (hang_sample_parse_line (s, unlabel (line)) < 0
            && strncmp (unlabel (line), "done ", 5) != 0 && rc != 0)
            fprintf (stderr, "%.300s\n", line);
    free (c.out);
    if (silent)
        report_silent (names, (size_t) nnodes, s);
    free (names);
    if (rc != 0)
        fprintf (stderr,
                 P "the probes' srun ended with status %d: the report lacks what the "
                   "nodes that failed saw\n",
                 rc);
    return s->nnodes > 0 ? 0 : -1;
}

/* Sample every rank of the step; when a connection that drops data leaves
 * two nodes to blame, ask every node whether it reaches each of them. */
static int sample_step (const struct step_id *id, const char *nodes, long window_ms, long wait_ms,
                        struct hang_sample *s)
{
    char ms[24], pair[2][HANG_ENDPOINT_MAX];
    char *probe[3] = {"hang-probe", (char *) id->text, ms};
    char *reach[3] = {"hang-reach", pair[0], pair[1]};

    snprintf (ms, sizeof (ms), "%ld", window_ms);
    if (run_probes (id, nodes, probe, window_ms + wait_ms, true, s) < 0)
        return -1;
    hang_sample_finish (s);
    if (hang_suspect_pair (s, pair) == 0)
        (void) run_probes (id, nodes, reach, wait_ms, false, s);
    return 0;
}

int hang_sample_running (const char *step, long window_ms, long wait_ms, struct hang_sample *s)
{
    struct step_id id;
    char nodes[DOCTOR_LINE_MAX];

    if (parse_step (step, &id) < 0 || step_nodes (&id, nodes, sizeof (nodes)) < 0)
        return -1;
    return sample_step (&id, nodes, window_ms, wait_ms, s);
}

static void usage (FILE *f)
{
    fprintf (f, "usage: " DOCTOR_PROGRAM " hang JOBID.STEPID [--window S]\n"
                "  samples every rank of a running step on every node for S seconds (default "
                "2)\n  and names the rank or node the others wait on\n");
}

int hang_main (int argc, char **argv)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    struct step_id id = {0};
    long window_ms = HANG_WINDOW_MS_DEFAULT;
    char nodes[DOCTOR_LINE_MAX], *end;
    bool have_step = false;
    size_t named;

    for (int i = 1; i < argc; i++) {
        if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0) {
            usage (stdout);
            return 0;
        } else if (strcmp (argv[i], "--window") == 0 && i + 1 < argc) {
            double w = strtod (argv[++i], &end);
            if (*end != '\0' || !(w >= 0.2 && w <= 60)) {
                fprintf (stderr, P "--window takes seconds, 0.2 to 60, not '%.32s'\n", argv[i]);
                return EXIT_SETUP;
            }
            window_ms = (long) (w * 1000);
        } else if (!have_step && parse_step (argv[i], &id) == 0) {
            have_step = true;
        } else {
            fprintf (stderr,
                     P "'%.64s' is not a step: give it as JOBID.STEPID, such as 1234.0 "
                       "(squeue --steps --me lists them)\n",
                     argv[i]);
            return EXIT_SETUP;
        }
    }
    if (!have_step) {
        usage (stderr);
        return EXIT_SETUP;
    }
    if (step_nodes (&id, nodes, sizeof (nodes)) < 0
        || sample_step (&id, nodes, window_ms, SLURM_WAIT_MS, &s) < 0) {
        hang_sample_free (&s);
        return EXIT_SETUP;
    }
    named = hang_report (stdout, id.text, &s);
    hang_sample_free (&s);
    return named > 0 ? 1 : 0;
}

/* dist-train-doctor hang-reach ADDR ADDR: whether this node reaches each. */
static int reach_main (int argc, char **argv)
{
    char hosts[2][HANG_ENDPOINT_MAX], node[DOCTOR_NAME_MAX];
    const char *name = getenv ("SLURMD_NODENAME");

    if (argc != 3) {
        fprintf (stderr, DOCTOR_PROGRAM " hang-reach: run by " DOCTOR_PROGRAM " hang\n");
        return EXIT_SETUP;
    }
    for (int i = 0; i < 2; i++)
        snprintf (hosts[i], sizeof (hosts[i]), "%.100s:0", argv[i + 1]);
    doctor_printable (node, sizeof (node), name != NULL ? name : "?");
    hang_reach (stdout, node, hosts, 2);
    /* the last line: the front end stops waiting for srun once every node said it */
    printf ("done node=%s\n", node);
    return fflush (stdout) == 0 ? 0 : EXIT_SETUP;
}

int hang_probe_main (int argc, char **argv)
{
    struct step_id id;
    char *end;
    long ms;

    if (strcmp (argv[0], "hang-reach") == 0)
        return reach_main (argc, argv);
    if (argc != 3 || parse_step (argv[1], &id) < 0 || (ms = strtol (argv[2], &end, 10)) < 1
        || *end != '\0' || ms > 60000) {
        fprintf (stderr, DOCTOR_PROGRAM " hang-probe: run by " DOCTOR_PROGRAM " hang\n");
        return EXIT_SETUP;
    }
    if (hang_probe (stdout, "/proc", id.job, id.step, ms) < 0) {
        fprintf (stderr, DOCTOR_PROGRAM " hang-probe: cannot read /proc: %s\n", strerror (errno));
        return EXIT_SETUP;
    }
    return fflush (stdout) == 0 ? 0 : EXIT_SETUP;
}
