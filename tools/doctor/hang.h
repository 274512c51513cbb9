/* hang.h - who holds a step that makes no progress: what each node's probe
 * saw of the step's ranks in /proc and the socket tables, and the verdict
 * over all of them.
 *
 * A probe runs on every node of the step (srun --overlap), samples each
 * rank's processes twice, a window apart, and prints one "rank" line per
 * rank and one "sock" line per TCP socket the rank holds.  The front end
 * parses those lines into the structs below; the verdict is a pure function
 * of them, so it is unit-tested from plain structs.
 */
#ifndef DOCTOR_HANG_H
#define DOCTOR_HANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "doctor.h"

#define HANG_WAIT_MAX 40 /* a syscall or kernel function name */
#define HANG_ENDPOINT_MAX 128 /* "node/[IPv6]:port" */
#define HANG_SOCKETS_MAX 4096 /* sockets one rank may report */
#define HANG_WINDOW_MS_DEFAULT 2000
#define HANG_REACH_MAX 256 /* peer hosts one probe tries to reach */
/* What counts as work in a window, for the verdict and the watcher alike:
 * this share of one CPU, or this many bytes read and written. */
#define HANG_ACTIVE_PERCENT 5
#define HANG_ACTIVE_IO (64 * 1024)

/* One rank as its node's probe saw it.  state is /proc's letter of the
 * task's main thread (R, S, D, T, t, Z), '?' when no process was found. */
struct hang_rank {
    long rank;
    char node[DOCTOR_NAME_MAX];
    char state;
    char syscall[HANG_WAIT_MAX]; /* the main thread's syscall, "-" when not in one */
    char wchan[HANG_WAIT_MAX]; /* the kernel function it sleeps in, "-" when running */
    long cpu_ms; /* CPU time of all its processes in the window */
    long long io_bytes; /* bytes read and written (rchar + wchar) in the window */
    long window_ms;
    int nproc; /* its processes: the task and its children */
    /* the collectives its threads' stacks show (hangstack.c), '+' between two; "-" none
     * found, "?" when its memory could not be read */
    char coll[HANG_WAIT_MAX];
};

/* One TCP socket of a rank, from the socket table of its node. */
struct hang_socket {
    long rank;
    char local[HANG_ENDPOINT_MAX]; /* "addr:port", or "node/addr:port" for loopback */
    char remote[HANG_ENDPOINT_MAX];
    unsigned long txq; /* bytes sent and not acknowledged */
    unsigned long rxq; /* bytes received and not read */
    unsigned long retransmits;
};

/* Whether a node reached a host its ranks talk to (hangreach.c). */
struct hang_reach {
    char node[DOCTOR_NAME_MAX];
    char addr[HANG_ENDPOINT_MAX];
    bool ok;
};

/* What the probes said about the step. */
struct hang_sample {
    long world_size; /* from the tasks' environment, -1 when none was found */
    long probe_cpu_ms; /* the most CPU one node's probe used */
    size_t nranks, nsockets, nnodes, nreach;
    struct hang_rank *rank; /* sorted by rank after hang_sample_finish */
    struct hang_socket *socket;
    struct hang_reach *reach;
    char (*node)[DOCTOR_NAME_MAX]; /* nodes whose probe answered */
    char silent[DOCTOR_LINE_MAX]; /* the step's nodes whose probe did not, "" none */
    size_t rank_cap, socket_cap, node_cap, reach_cap; /* the parser's */
};
#define HANG_SAMPLE_INIT                                                                           \
    {                                                                                              \
        .world_size = -1                                                                           \
    }

/* Parse one line of a probe's output into s (it grows as needed).  0 for a
 * line it took or ignored (blank), -1 for one that is not a probe's. */
int hang_sample_parse_line (struct hang_sample *s, const char *line);

/* Sort the ranks and drop a repeated one; call after the last line. */
void hang_sample_finish (struct hang_sample *s);
void hang_sample_free (struct hang_sample *s);

/* The rank at the other end of each socket (peer[nsockets]), -1 where it
 * is not one of the step's; -1 when out of memory. */
int hang_peers (const struct hang_sample *s, long *peer);

/* Print the table of ranks and the verdict for step (text such as
 * "123.0"); the return is the number of ranks the verdict names. */
size_t hang_report (FILE *f, const char *step, const struct hang_sample *s);

/* When the connections that drop data all run between one pair of nodes,
 * and what the probes tried does not tell which end is cut off: the pair's
 * addresses (as the ranks' sockets show them) into pair, and 0; else -1. */
int hang_suspect_pair (const struct hang_sample *s, char pair[2][HANG_ENDPOINT_MAX]);

/* The verdict alone, one line into out (size bytes); the number of ranks
 * (or nodes) it names, 0 when none stands out. */
size_t hang_verdict (const struct hang_sample *s, char *out, size_t size);

/* The probe's side, run on a node: sample the ranks of step job.step found
 * in /proc (root is "/proc" but for tests) for window_ms, and print their
 * lines to f.  0, or -1 when /proc could not be read. */
int hang_probe (FILE *f, const char *proc_root, unsigned long job, unsigned long step,
                long window_ms);

/* The collective a rank's threads are in, from their stacks (hangstack.c): the bytes read
 * above each thread's stack pointer. */
#define HANG_STACK_SCAN (64 * 1024)
/* Whether a symbol (its name as the ELF file has it, mangled) is a collective's entry
 * point; its name as the report shows it into out if so. */
typedef bool (*hang_symbol_match) (const char *name, char *out, size_t size);
/* gloo's collectives (gloo::broadcast, ...) and MPI's (MPI_Bcast, ...). */
bool hang_collective_symbol (const char *name, char *out, size_t size);
/* Add to out ('+'-separated, each once) the collective that each thread of pid is in:
 * the innermost word above its stack pointer in a function that match takes.  Reads
 * /proc/PID/task/TID/syscall and /proc/PID/mem, which stop nothing.  0, or -1 when the
 * process's memory cannot be read (another user's, or it is gone). */
int hang_stack_collectives (const char *proc_root, long pid, hang_symbol_match match, char *out,
                            size_t size);

/* Try to reach each host (endpoints[n], "addr:port") from this node, and
 * print a "reach" line for each. */
void hang_reach (FILE *f, const char *node, char (*endpoints)[HANG_ENDPOINT_MAX], size_t n);

/* Sample the running step ("JOBID.STEPID") on every node, as
 * dist-train-doctor hang does, into s (then finished), waiting for the
 * probes at most wait_ms beyond the window; 0, or -1 with a message on
 * stderr. */
int hang_sample_running (const char *step, long window_ms, long wait_ms, struct hang_sample *s);

/* hang=SECONDS: the watcher on each node (hangwatch.c, hangsample.c). */
#define HANG_RESCAN_MS 10000 /* how often the tree of the step's processes is walked */

/* CLOCK_MONOTONIC in milliseconds. */
long hang_now_ms (void);

/* A node's ranks, watched: the tasks are parent's children (slurmstepd's),
 * expected of them; the step's processes are those and their descendants. */
struct hang_sampler;
struct hang_sampler *hang_sampler_new (pid_t parent, long expected);
void hang_sampler_free (struct hang_sampler *sm);
/* Whether any task made progress since the last call (or since new). */
bool hang_sampler_tick (struct hang_sampler *sm);
/* A descriptor that turns readable when a task ends; then
 * hang_sampler_ended gives the tasks still running. */
int hang_sampler_fd (const struct hang_sampler *sm);
size_t hang_sampler_ended (struct hang_sampler *sm);
/* The tasks seen so far, ended or not. */
size_t hang_sampler_tasks (const struct hang_sampler *sm);

/* What the decider knows of a node: since when its ranks made no progress
 * (its own clock: what the node said, less the time the word took). */
struct hang_watch_node {
    bool heard;
    long idle_since_ms;
};

/* Since when no rank of the step has made progress: the latest of the
 * nodes' idle_since, a node not heard from counting from start_ms. */
long hang_watch_quiet_since (const struct hang_watch_node *node, size_t n, long start_ms);

/* How often a busy node says so: a quarter of SECONDS, 1 to 15 s. */
long hang_watch_heartbeat_ms (long seconds);

/* dist-train-doctor hang-watch ...: started by the plugin. */
int hang_watch_main (int argc, char **argv);

/* dist-train-doctor hang JOBID.STEPID [--window S]: the front end; and the
 * probe it runs on each node, dist-train-doctor hang-probe JOBID.STEPID MS. */
int hang_main (int argc, char **argv);
int hang_probe_main (int argc, char **argv);

#endif /* DOCTOR_HANG_H */
