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

#include "doctor.h"

#define HANG_WAIT_MAX 40 /* a syscall or kernel function name */
#define HANG_ENDPOINT_MAX 128 /* "node/[IPv6]:port" */
#define HANG_SOCKETS_MAX 4096 /* sockets one rank may report */
#define HANG_WINDOW_MS_DEFAULT 2000
#define HANG_REACH_MAX 256 /* peer hosts one probe tries to reach */

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

/* Try to reach each host (endpoints[n], "addr:port") from this node, and
 * print a "reach" line for each. */
void hang_reach (FILE *f, const char *node, char (*endpoints)[HANG_ENDPOINT_MAX], size_t n);

/* dist-train-doctor hang JOBID.STEPID [--window S]: the front end; and the
 * probe it runs on each node, dist-train-doctor hang-probe JOBID.STEPID MS. */
int hang_main (int argc, char **argv);
int hang_probe_main (int argc, char **argv);

#endif /* DOCTOR_HANG_H */
