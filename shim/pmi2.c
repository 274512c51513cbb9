/* pmi2.c - the connection to Slurm's mpi/pmi2 server (srun --mpi=pmi2), for steps without
 * PMIx: its requests and answers, the facts, abort and finalize (pmi2kvs.c puts the
 * collectives' frames into its KVS).
 *
 * The shim speaks the PMI-2 wire protocol on the socket Slurm hands every task (PMI_FD)
 * itself, as MPICH does, rather than through Slurm's libpmi2: that library waits in read(2)
 * without a deadline, so a fence with a dead peer would never return, and it is a package
 * of its own that compute nodes often lack. Here every request and every answer is bounded
 * by the collective's deadline, as the PMIx calls are.
 *
 * The server answers one request at a time, in order. A put is held by the node's server
 * until the next fence, which sends every node's new values through srun to every node; a
 * get is answered at once from what the node holds ("found=FALSE" for a key not put before
 * the last fence). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libdist/hostlist.h"
#include "shim/dtshim.h"
#include "shim/pmi2.h"
#include "shim/pmi2wire.h"
#include "shim/shim.h"

/* The longest answer the shim reads: PMI_process_mapping of a large arbitrary layout is the
 * longest, a KVS value is at most SHIM_PMI2_VALLEN. */
#define MAX_ANSWER (1 << 20)

static struct {
    int fd;
    char jobid[64];
    bool used; /* Slurm's server takes one connection per task: a second init would fail */
    pthread_mutex_t write_lock; /* a request is one write; abort may come from another thread */
    char *answer; /* the last answer's body, NUL-terminated */
    size_t answer_len;
} conn = {.fd = -1, .write_lock = PTHREAD_MUTEX_INITIALIZER};

/* Milliseconds left before the deadline of the collective in progress; -1: forever. */
static int ms_left (void)
{
    struct timespec now;
    double ms;

    if (shim_world.timeout_s <= 0)
        return -1;
    clock_gettime (CLOCK_MONOTONIC, &now);
    ms = (double) (shim_world.deadline.tv_sec - now.tv_sec) * 1e3
         + (double) (shim_world.deadline.tv_nsec - now.tv_nsec) / 1e6;
    return ms <= 0 ? 0 : ms > 1e9 ? 1000000000 : (int) ms + 1;
}

/* Wait for events on the socket before the deadline: 0, or DTSHIM_ERR_TIMEOUT. */
static int wait_for (short events)
{
    struct pollfd p = {.fd = conn.fd, .events = events};
    int n;

    do
        n = poll (&p, 1, ms_left ());
    while (n < 0 && errno == EINTR);
    if (n == 0)
        return DTSHIM_ERR_TIMEOUT;
    if (n < 0)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: poll: %s", strerror (errno));
    return DTSHIM_OK;
}

static int send_all (const char *buf, size_t len)
{
    ssize_t n;
    int rv;

    while (len > 0) {
        if ((rv = wait_for (POLLOUT)) != DTSHIM_OK)
            return rv;
        /* A server gone must not raise SIGPIPE in the program. */
        n = send (conn.fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: write to Slurm's server: %s",
                              n < 0 ? strerror (errno) : "nothing written");
        buf += n;
        len -= (size_t) n;
    }
    return DTSHIM_OK;
}

static int recv_all (char *buf, size_t len)
{
    ssize_t n;
    int rv;

    while (len > 0) {
        if ((rv = wait_for (POLLIN)) != DTSHIM_OK)
            return rv;
        n = read (conn.fd, buf, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: Slurm's server closed the connection%s%s",
                              n < 0 ? ": " : "", n < 0 ? strerror (errno) : "");
        buf += n;
        len -= (size_t) n;
    }
    return DTSHIM_OK;
}

static int send_request (const char *buf, size_t len)
{
    int rv;

    pthread_mutex_lock (&conn.write_lock);
    rv = send_all (buf, len);
    pthread_mutex_unlock (&conn.write_lock);
    return rv;
}

/* Read the next answer into conn.answer. A failure here leaves the socket in an unknown
 * state: the caller returns it at once. A timeout leaves a request or its answer half-way:
 * nothing more can be said on the socket, and the world is broken, as after a PMIx fence
 * that timed out. */
static int recv_answer (const char *cmd, uint64_t seq)
{
    char header[6];
    long n;
    int rv;

    if ((rv = recv_all (header, sizeof (header))) != DTSHIM_OK)
        return rv == DTSHIM_ERR_TIMEOUT ? shim_timed_out (seq, cmd) : rv;
    n = shim_pmi2_msg_len (header);
    if (n <= 0 || n > MAX_ANSWER)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: %s: an answer of %ld bytes from Slurm's server",
                          cmd, n);
    free (conn.answer);
    conn.answer_len = 0;
    if ((conn.answer = malloc ((size_t) n + 1)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    if ((rv = recv_all (conn.answer, (size_t) n)) != DTSHIM_OK)
        return rv == DTSHIM_ERR_TIMEOUT ? shim_timed_out (seq, cmd) : rv;
    conn.answer[n] = '\0';
    conn.answer_len = (size_t) n;
    return DTSHIM_OK;
}

/* The last answer for a message: the server's text, its first 200 bytes, each that is not
 * printable as '?'. */
static const char *answer_shown (void)
{
    static char shown[201];

    shim_pmi2_shown (conn.answer, conn.answer_len, shown, sizeof (shown));
    return shown;
}

/* Whether the last answer is cmd-response with rc=0. */
static int answer_ok (const char *cmd)
{
    char want[64];

    snprintf (want, sizeof (want), "%s-response", cmd);
    if (!shim_pmi2_ok (conn.answer, conn.answer_len, want))
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: %s failed: %s", cmd, answer_shown ());
    return DTSHIM_OK;
}

static int send_cmd (const char *cmd, const char *const *fields, size_t nfields, uint64_t seq)
{
    char req[SHIM_PMI2_VALLEN + 256];
    long len = shim_pmi2_request (req, sizeof (req), cmd, fields, nfields);
    int rv;

    if (len < 0)
        return shim_fail (DTSHIM_ERR_INVALID, "PMI-2: %s: a field does not fit or holds ';'", cmd);
    if ((rv = send_request (req, (size_t) len)) != DTSHIM_OK)
        return rv == DTSHIM_ERR_TIMEOUT ? shim_timed_out (seq, cmd) : rv;
    return DTSHIM_OK;
}

/* Send cmd with its fields and read its answer into conn.answer, checked. */
static int call (const char *cmd, const char *const *fields, size_t nfields, uint64_t seq)
{
    int rv;

    if ((rv = send_cmd (cmd, fields, nfields, seq)) != DTSHIM_OK
        || (rv = recv_answer (cmd, seq)) != DTSHIM_OK)
        return rv;
    return answer_ok (cmd);
}

int shim_pmi2_pipeline (const char *cmd, size_t n, shim_pmi2_request_fn request,
                        shim_pmi2_answer_fn answer, void *arg, uint64_t seq)
{
    const char *get[] = {"jobid", conn.jobid, "srcid", "-1", "key", NULL};
    const char *put[] = {"key", NULL, "value", NULL};
    bool is_put = strcmp (cmd, "kvs-put") == 0;
    size_t sent = 0, done = 0;
    int rv, first = DTSHIM_OK;

    while (done < n) {
        for (; first == DTSHIM_OK && sent < n && sent - done < SHIM_PMI2_WINDOW; sent++) {
            if ((first = request (sent, &put[1], &put[3], arg)) != DTSHIM_OK)
                break;
            get[5] = put[1];
            rv = is_put ? send_cmd (cmd, put, 4, seq) : send_cmd (cmd, get, 6, seq);
            if (rv != DTSHIM_OK)
                return rv;
        }
        if (done == sent)
            break;
        if ((rv = recv_answer (cmd, seq)) != DTSHIM_OK)
            return rv;
        if (first == DTSHIM_OK && (first = answer_ok (cmd)) == DTSHIM_OK)
            first = answer (done, arg);
        done++;
    }
    return first;
}

int shim_pmi2_found_value (const char *cmd, char **value)
{
    const char *v;
    size_t n;

    *value = NULL;
    if (!shim_pmi2_field (conn.answer, conn.answer_len, "found", &v, &n))
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: %s: no found= in %s", cmd, answer_shown ());
    if (n == 5 && memcmp (v, "FALSE", 5) == 0)
        return DTSHIM_OK;
    if (!shim_pmi2_field (conn.answer, conn.answer_len, "value", &v, &n))
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: %s: no value in %s", cmd, answer_shown ());
    *value = (char *) v;
    (*value)[n] = '\0';
    return DTSHIM_OK;
}

int shim_pmi2_get (const char *key, uint64_t seq, char **value)
{
    const char *fields[] = {"jobid", conn.jobid, "srcid", "-1", "key", key};
    int rv = call ("kvs-get", fields, 6, seq);

    return rv != DTSHIM_OK ? rv : shim_pmi2_found_value ("kvs-get", value);
}

int shim_pmi2_put (const char *key, const char *value, uint64_t seq)
{
    const char *fields[] = {"key", key, "value", value};

    return call ("kvs-put", fields, 4, seq);
}

int shim_pmi2_fence (uint64_t seq)
{
    return call ("kvs-fence", NULL, 0, seq);
}

/* No answer comes: Slurm's server cancels the step (SIGTERM, then SIGKILL). */
int shim_pmi2_abort (int status, const char *msg)
{
    char req[600], clean[400];
    const char *fields[] = {"isworld", "TRUE", "msg", clean};
    struct timespec wait = {1, 0};
    ssize_t n;
    long len;
    size_t i;
    bool locked;

    snprintf (clean, sizeof (clean), "exit status %d: %s", status, msg != NULL ? msg : "");
    for (i = 0; clean[i] != '\0'; i++) {
        if (clean[i] == ';' || clean[i] == '\n')
            clean[i] = ' ';
    }
    len = shim_pmi2_request (req, sizeof (req), "abort", fields, 4);
    if (len < 0 || conn.fd < 0)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2 abort: no connection to Slurm's server");
    /* Another thread may hold the lock in a write that never ends: write anyway. */
    clock_gettime (CLOCK_REALTIME, &wait);
    wait.tv_sec += 1;
    locked = pthread_mutex_timedlock (&conn.write_lock, &wait) == 0;
    n = send (conn.fd, req, (size_t) len, MSG_NOSIGNAL);
    if (locked)
        pthread_mutex_unlock (&conn.write_lock);
    if (n != (ssize_t) len)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2 abort: not sent to Slurm's server");
    return DTSHIM_OK;
}

/* The facts of shim_world from PMI_process_mapping, and *chief_node, rank 0's node. */
static int read_mapping (int *chief_node)
{
    const char *fields[] = {"key", "PMI_process_mapping"};
    char *value;
    int *node_of, rv, max_node = 0;

    if ((rv = call ("info-getjobattr", fields, 2, 0)) != DTSHIM_OK
        || (rv = shim_pmi2_found_value ("info-getjobattr", &value)) != DTSHIM_OK)
        return rv;
    if (value == NULL)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: the server has no PMI_process_mapping");
    if ((node_of = calloc ((size_t) shim_world.size, sizeof (*node_of))) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    if (shim_pmi2_mapping (value, strlen (value), shim_world.size, shim_world.size - 1, node_of)
        != 0) {
        char shown[201];
        free (node_of);
        shim_pmi2_shown (value, strlen (value), shown, sizeof (shown));
        return shim_fail (DTSHIM_ERR_PMIX,
                          "PMI-2: PMI_process_mapping=%s: not a mapping of %d ranks", shown,
                          shim_world.size);
    }
    shim_world.node_rank = node_of[shim_world.transport_rank];
    shim_world.local_rank = shim_world.local_size = 0;
    for (int r = 0; r < shim_world.size; r++) {
        if (node_of[r] > max_node)
            max_node = node_of[r];
        if (node_of[r] == shim_world.node_rank) {
            shim_world.local_rank += r < shim_world.transport_rank;
            shim_world.local_size++;
        }
    }
    shim_world.node_count = max_node + 1;
    *chief_node = node_of[0];
    free (node_of);
    return DTSHIM_OK;
}

/* The chief's node by name: node ids are positions in the step's node list, which
 * slurmstepd gives every task as SLURM_STEP_NODELIST (SLURM_NODELIST outside a step of its
 * own). PMI-2 has no host names, and the task's rank adds nothing to its node. */
int shim_pmi2_name_chief (int rank, int chief_node)
{
    const char *list = getenv ("SLURM_STEP_NODELIST");

    (void) rank;

    if (list == NULL)
        list = getenv ("SLURM_NODELIST");
    if (list == NULL
        || dist_hostlist_nth (list, chief_node, shim_world.chief_host,
                              sizeof (shim_world.chief_host))
               != 0)
        return shim_fail (DTSHIM_ERR_PMIX,
                          "PMI-2: cannot name node %d, the chief's, from "
                          "SLURM_STEP_NODELIST=%.200s",
                          chief_node, list != NULL ? list : "(unset)");
    return DTSHIM_OK;
}

static void close_conn (void)
{
    if (conn.fd >= 0)
        close (conn.fd);
    conn.fd = -1;
    free (conn.answer);
    conn.answer = NULL;
    conn.answer_len = 0;
}

static int parse_int (const char *name, const char *text, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = text != NULL ? strtol (text, &end, 10) : -1;
    if (text == NULL || errno != 0 || *end != '\0' || end == text || v < 0 || v > 1 << 30)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: %s=%.32s: not a rank or size", name,
                          text != NULL ? text : "(unset)");
    *out = (int) v;
    return DTSHIM_OK;
}

/* The first exchange is PMI-1's: one line each way, and the server reads the request with
 * one read(2) of 64 bytes, so nothing may follow it before the answer. */
static int handshake (void)
{
    static const char hello[] = "cmd=init pmi_version=2 pmi_subversion=0\n";
    char line[128];
    size_t n = 0;
    int rv;

    if ((rv = send_request (hello, sizeof (hello) - 1)) != DTSHIM_OK)
        return rv;
    while (n < sizeof (line) - 1) {
        if ((rv = recv_all (line + n, 1)) != DTSHIM_OK)
            return rv;
        if (line[n++] == '\n')
            break;
    }
    line[n] = '\0';
    if (strncmp (line, "cmd=response_to_init ", 21) != 0 || strstr (line, " rc=0") == NULL
        || strstr (line, "pmi_version=2 ") == NULL)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: Slurm's server refused PMI-2: %.100s", line);
    return DTSHIM_OK;
}

int shim_pmi2_connect (void)
{
    const char *fd_text = getenv ("PMI_FD"), *jobid = getenv ("PMI_JOBID"), *rank_text;
    const char *fields[6];
    int fd, rv, rank, chief_node = 0;

    if (conn.used)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: this task has used its connection to Slurm's "
                                           "server already, which takes one per task");
    if ((rv = parse_int ("PMI_FD", fd_text, &fd)) != DTSHIM_OK
        || (rv = parse_int ("PMI_RANK", rank_text = getenv ("PMI_RANK"), &rank)) != DTSHIM_OK)
        return rv;
    if (jobid == NULL || strlen (jobid) >= sizeof (conn.jobid) || strpbrk (jobid, ";=\n") != NULL)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: PMI_JOBID=%.32s: not a job id",
                          jobid != NULL ? jobid : "(unset)");
    snprintf (conn.jobid, sizeof (conn.jobid), "%s", jobid);
    conn.fd = fd;
    /* No collective is in progress: the settings' timeout bounds the connection's setup. */
    shim_begin_deadline ();
    fields[0] = "pmijobid", fields[1] = conn.jobid;
    fields[2] = "pmirank", fields[3] = rank_text;
    fields[4] = "threaded", fields[5] = "FALSE";
    if ((rv = handshake ()) != DTSHIM_OK)
        goto fail;
    conn.used = true;
    if ((rv = call ("fullinit", fields, 6, 0)) != DTSHIM_OK)
        goto fail;
    /* (size bounds what the mapping takes: an int per rank) */
    if (!shim_pmi2_int_field (conn.answer, conn.answer_len, "rank", 0, SHIM_PMI2_SIZE_MAX,
                              &shim_world.transport_rank)
        || shim_world.transport_rank != rank
        || !shim_pmi2_int_field (conn.answer, conn.answer_len, "size", 1, SHIM_PMI2_SIZE_MAX,
                                 &shim_world.size)
        || shim_world.size <= rank) {
        rv =
            shim_fail (DTSHIM_ERR_PMIX, "PMI-2: fullinit: %s (not this rank, or a size of 1 to %d)",
                       answer_shown (), SHIM_PMI2_SIZE_MAX);
        goto fail;
    }
    if ((rv = read_mapping (&chief_node)) != DTSHIM_OK
        || (rv = shim_pmi2_name_chief (0, chief_node)) != DTSHIM_OK)
        goto fail;
    return DTSHIM_OK;
fail:
    if (rv == DTSHIM_ERR_TIMEOUT)
        rv = shim_fail (DTSHIM_ERR_PMIX, "PMI-2: Slurm's server did not answer within %g s",
                        shim_world.timeout_s);
    close_conn ();
    return rv;
}

/* Not after a timeout: an answer may still be on its way, and finalize's would be lost in
 * it. The socket is closed either way (it is the task's, and nothing else uses it). */
int shim_pmi2_disconnect (void)
{
    int rv = DTSHIM_OK;

    if (conn.fd >= 0 && !shim_world.broken) {
        shim_begin_deadline ();
        rv = call ("finalize", NULL, 0, 0);
    }
    close_conn ();
    return rv;
}
