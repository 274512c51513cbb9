/* main.c - dist-train-doctor: run in place of the training program, it
 * checks that every rank of the step can reach rank 0 the way PyTorch will
 * (MASTER_ADDR:MASTER_PORT, from NCCL_SOCKET_IFNAME's interface) and that
 * the ranks' environments agree; rank 0 prints one report.
 *
 *   srun --dist-train -N64 --ntasks-per-node=8 dist-train-doctor [--timeout S] [--json]
 *        [--fabric fail|warn|off] [--then CMD ARGS...]
 *   srun --dist-train -N16 --ntasks-per-node=1 dist-train-doctor fabric [--fabric warn] ...
 *
 * With more than one node it also checks the paths between them that the
 * collectives will use (fabric.h), unless --fabric off.
 *
 * Only the environment contract and plain TCP, no PMIx, no Slurm library;
 * the node's PMIx is opened as Slurm's mpi/pmix opens it, to check it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <openssl/crypto.h>
#include <unistd.h>

#include "doctor.h"
#include "auth.h"
#include "fabricstar.h"
#include "facts.h"
#include "hang.h"
#include "net.h"
#include "probe.h"
#include "serve.h"
#include "libdist/netif.h"

#define P DOCTOR_PROGRAM ": "
#define EXIT_SETUP 2 /* the doctor could not run at all */

struct options {
    double timeout_s;
    bool json;
    enum fabric_mode fabric;
    char **then; /* argv of the command to exec after a healthy check */
};

static void usage (FILE *f)
{
    fprintf (
        f, "usage: " DOCTOR_PROGRAM " [fabric] [--timeout S] [--json] [--fabric fail|warn|off]\n"
           "       [--then CMD ARGS...]\n"
           "  run it in place of the training program: srun --dist-train ... " DOCTOR_PROGRAM "\n"
           "  'fabric': only to say so; the paths between nodes are checked unless --fabric off\n");
}

static int parse_options (int argc, char **argv, struct options *o)
{
    char *end;
    int i;

    o->timeout_s = 20;
    o->json = false;
    o->fabric = FABRIC_FAIL;
    o->then = NULL;
    for (i = 1; i < argc; i++) {
        if (strcmp (argv[i], "--json") == 0)
            o->json = true;
        else if (strcmp (argv[i], "--fabric") == 0 && i + 1 < argc) {
            if (fabric_mode_parse (argv[++i], &o->fabric) < 0) {
                fprintf (stderr, P "--fabric takes fail, warn or off, not '%.32s'\n", argv[i]);
                return -1;
            }
        } else if (strcmp (argv[i], "--timeout") == 0 && i + 1 < argc) {
            o->timeout_s = strtod (argv[++i], &end);
            if (*end != '\0' || !(o->timeout_s >= 1 && o->timeout_s <= 3600)) {
                fprintf (stderr, P "--timeout takes seconds, 1 to 3600, not '%.32s'\n", argv[i]);
                return -1;
            }
        } else if (strcmp (argv[i], "--then") == 0 && i + 1 < argc) {
            o->then = &argv[i + 1];
            return 0;
        } else if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0) {
            usage (stdout);
            exit (0);
        } else {
            fprintf (stderr, P "unknown argument '%.64s'\n", argv[i]);
            usage (stderr);
            return -1;
        }
    }
    return 0;
}

/* Why a connection to addr failed, in the user's words, with what to check. */
static const char *why (int err, const char *addr, char *buf, size_t size)
{
    switch (err) {
    case 0:
    case ETIMEDOUT:
        return "timed out: no answer (packets dropped by a firewall, or rank 0's node is down)";
    case ECONNREFUSED:
        return "connection refused: nothing listens there (rank 0 did not start, or "
               "MASTER_ADDR/MASTER_PORT are not rank 0's)";
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EINVAL: /* what connect() says through a blackhole route */
        snprintf (buf, size,
                  "no route to rank 0's address (an unreachable or blackhole route?); check "
                  "'ip route get %s' on this node",
                  addr);
        return buf;
    default:
        return strerror (err);
    }
}

/* A rank that failed on its own waits before it exits: under --dist-train's
 * fail_fast, its exit would stop the step, rank 0 too, before rank 0 has
 * printed the report that names it. */
static int fail_late (long start_ms, const struct options *o)
{
    long until = start_ms + (long) (o->timeout_s * 1000) + 5000, left;

    fflush (stderr);
    while ((left = until - doctor_now_ms ()) > 0)
        poll (NULL, 0, (int) left);
    return 1;
}

/* Where a rank connects from: NCCL_SOCKET_IFNAME's interface (its address
 * into src, its name into self->ifname), NULL for the kernel's choice;
 * -1 when the interface has no address of rank 0's family. */
static int source_address (struct doctor_rank *self, const struct sockaddr_storage *dst,
                           struct sockaddr_storage *src, char *src_text, size_t size,
                           const struct sockaddr_storage **out)
{
    const char *ifname = doctor_facts_ifname ();

    *out = NULL;
    snprintf (src_text, size, "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME unset");
    /* NCCL's "^name" excludes interfaces and lets the routes choose: so do we */
    if (ifname != NULL && ifname[0] == '^') {
        snprintf (src_text, size, "NCCL_SOCKET_IFNAME excludes, the routes choose");
        return 0;
    }
    if (ifname == NULL)
        return 0;
    if (doctor_interface_address (ifname, dst->ss_family, src, self->ifname, sizeof (self->ifname))
        < 0) {
        char name[DOCTOR_NAME_MAX];
        doctor_printable (name, sizeof (name), ifname);
        fprintf (stderr,
                 P "rank %ld on %s: the interface %s (NCCL_SOCKET_IFNAME/"
                   "GLOO_SOCKET_IFNAME) has no %s address here; set it to an interface that "
                   "reaches rank 0 (ip -br addr)\n",
                 self->rank, self->node, name, dst->ss_family == AF_INET6 ? "IPv6" : "IPv4");
        return -1;
    }
    doctor_addr_text (src, src_text, size);
    *out = src;
    return 0;
}

/* How far a connection to rank 0 got: our record taken; no proof from rank
 * 0 (it closed the connection or said nothing in time); a proof that is
 * not this step's key; our hello refused (our key is not rank 0's); a
 * proof, but the connection closed before our record was taken; a failure
 * of our own. */
enum exchange { TAKEN, NO_PROOF, BAD_PROOF, REFUSED, NOT_TAKEN, SEND_FAILED };

/* The handshake on a connection to rank 0, then our signed record and rank
 * 0's word that it counts; pn and sn are the nonces, for the verdict. */
static enum exchange exchange (int fd, struct doctor_rank *self, const struct doctor_key *key,
                               char *pn, char *sn, long deadline)
{
    char line[DOCTOR_AUTH_LINE_MAX], msg[DOCTOR_AUTH_LINE_MAX + DOCTOR_MSG_MAX];
    size_t got;
    int n, len;

    if (doctor_nonce (pn) < 0 || (n = doctor_hello_format (key, pn, line, sizeof (line))) < 0)
        return SEND_FAILED;
    if (doctor_send_all (fd, line, (size_t) n, deadline) < 0
        || (got = doctor_read_line (fd, line, sizeof (line), deadline)) == 0)
        return NO_PROOF;
    if (got == strlen (DOCTOR_REFUSED_LINE) && memcmp (line, DOCTOR_REFUSED_LINE, got) == 0)
        return REFUSED;
    /* nothing about us goes to what cannot show it knows the key */
    if (doctor_proof_check (key, pn, line, got, sn) < 0)
        return BAD_PROOF;
    len = doctor_wire_encode (self, msg + DOCTOR_AUTH_LINE_MAX, DOCTOR_MSG_MAX);
    if (len < 0
        || (n = doctor_record_header (key, sn, pn, msg + DOCTOR_AUTH_LINE_MAX, (size_t) len, line,
                                      sizeof (line)))
               < 0)
        return SEND_FAILED;
    /* the header right before the record, sent as one */
    memcpy (msg + DOCTOR_AUTH_LINE_MAX - n, line, (size_t) n);
    if (doctor_send_all (fd, msg + DOCTOR_AUTH_LINE_MAX - n, (size_t) (n + len), deadline) < 0
        || (got = doctor_read_line (fd, line, sizeof (line), deadline)) == 0)
        return NOT_TAKEN;
    return doctor_taken_check (key, pn, sn, line, got) == 0 ? TAKEN : BAD_PROOF;
}

/* A rank's way to rank 0 and what it shares with rank 0 on it, from the
 * first connection to the verdict. */
struct peer {
    struct doctor_rank *self;
    const struct doctor_key *key;
    const struct options *o;
    long start_ms, deadline;
    struct sockaddr_storage dst, src;
    socklen_t dstlen;
    const struct sockaddr_storage *from; /* &src, or NULL for the kernel's choice */
    char src_text[DOCTOR_NAME_MAX];
    char pn[DOCTOR_NONCE_HEX + 1], sn[DOCTOR_NONCE_HEX + 1]; /* the nonces, for the verdict */
    int fd;
    int tfd, ufd; /* the fabric check's listener, on the node's leader */
};

/* Where this end of the connection is, for the report: its address, and
 * its interface when NCCL_SOCKET_IFNAME did not name one. */
static void note_source (struct doctor_rank *self, int fd)
{
    struct sockaddr_storage local;
    socklen_t llen = sizeof (local);

    if (getsockname (fd, (struct sockaddr *) &local, &llen) != 0)
        return;
    doctor_addr_text (&local, self->source, sizeof (self->source));
    if (self->ifname[0] == '\0')
        (void) dist_interface_of ((const struct sockaddr *) &local, self->ifname,
                                  sizeof (self->ifname));
}

/* Connect to rank 0 and send our signed record; *how says how far that
 * got, p->fd is the last connection.  -1, said on stderr, when rank 0
 * cannot be reached before the deadline. */
static int peer_send (struct peer *p, enum exchange *how)
{
    struct doctor_rank *self = p->self;
    char reason[DOCTOR_LINE_MAX];
    int err = 0;

    /* rank 0 closes a connection it has no room for, or that was slow to
     * prove itself or to send its record: such a connection is tried again
     * until the deadline */
    while ((*how == NO_PROOF || *how == NOT_TAKEN) && doctor_now_ms () < p->deadline) {
        if (p->fd >= 0) {
            close (p->fd);
            poll (NULL, 0, 50); /* (not a busy loop against a port that hangs up at once) */
        }
        p->fd = doctor_connect (&p->dst, p->dstlen, p->from, p->deadline, &err);
        if (p->fd < 0) {
            fprintf (stderr,
                     P "rank %ld on %s: cannot reach rank 0 at %s:%s from %s (%s) within "
                       "%.0f s: %s\n",
                     self->rank, self->node, self->master_addr, self->master_port,
                     self->ifname[0] ? self->ifname : "the interface the kernel picks", p->src_text,
                     p->o->timeout_s, why (err, self->master_addr, reason, sizeof (reason)));
            return -1;
        }
        self->connect_ms = doctor_now_ms () - p->start_ms;
        note_source (self, p->fd);
        *how = exchange (p->fd, self, p->key, p->pn, p->sn, p->deadline);
    }
    return 0;
}

/* Why our record did not reach rank 0, when the exchange stopped short. */
static void say_not_sent (const struct doctor_rank *self, enum exchange how, double timeout_s)
{
    if (how == BAD_PROOF || how == NO_PROOF)
        fprintf (stderr,
                 P "rank %ld on %s: what answers at %s:%s %s this step's key "
                   "(" DOCTOR_KEY_VAR "): something else listens on MASTER_PORT, or rank "
                   "0 has another step's key; nothing was sent to it\n",
                 self->rank, self->node, self->master_addr, self->master_port,
                 how == BAD_PROOF ? "did not prove it knows" : "never proved it knows");
    else if (how == REFUSED)
        fprintf (stderr,
                 P "rank %ld on %s: rank 0 at %s:%s refused our hello: this rank's " DOCTOR_KEY_VAR
                   " is not its step's key (a key of another step, or set by "
                   "hand); nothing was sent to it\n",
                 self->rank, self->node, self->master_addr, self->master_port);
    else if (how == NOT_TAKEN)
        fprintf (stderr,
                 P "rank %ld on %s: rank 0 at %s:%s proved it knows this step's key but closed "
                   "each connection before it took our record, for %.0f s (it has no room for "
                   "more ranks, or is too busy to read them)\n",
                 self->rank, self->node, self->master_addr, self->master_port, timeout_s);
    else
        fprintf (stderr, P "rank %ld on %s: cannot send to rank 0 at %s:%s\n", self->rank,
                 self->node, self->master_addr, self->master_port);
}

/* Rank 0's signed verdict on the connection our record went out on: 0 when
 * the step is healthy, 1 when it is not or no verdict came. */
static int peer_verdict (struct peer *p)
{
    const struct doctor_rank *self = p->self;
    char line[DOCTOR_AUTH_LINE_MAX];
    size_t got;
    bool ok;
    int plan = 0;

    /* rank 0 answers at most its timeout after it started, which was
     * before we connected, and the fabric check's time after */
    got = doctor_read_line (p->fd, line, sizeof (line),
                            doctor_now_ms () + (long) (p->o->timeout_s * 1000) + 5000
                                + FABRIC_BUDGET_MAX_MS);
    if (got > 0 && p->tfd >= 0)
        plan = fabric_follow (p->fd, p->key, p->pn, p->sn, line, sizeof (line), &got, self, p->tfd,
                              p->ufd);
    /* (we hang up first: see answer_all in serve.c) */
    close (p->fd);
    if (plan < 0)
        return 1;
    if (got > 0 && doctor_verdict_check (p->key, p->pn, p->sn, line, got, &ok) == 0)
        return ok ? 0 : 1;
    if (got > 0)
        fprintf (stderr,
                 P "rank %ld on %s: the verdict from %s:%s is not signed with this step's key; "
                   "not running the program\n",
                 self->rank, self->node, self->master_addr, self->master_port);
    else
        fprintf (stderr,
                 P "rank %ld on %s: connected to %s:%s but got no verdict from rank 0 "
                   "(rank 0 failed; its report says why)\n",
                 self->rank, self->node, self->master_addr, self->master_port);
    return 1;
}

/* Whether this task takes the node's part in the fabric check: the first
 * of its node, unless rank 0 runs there and takes it. */
static bool fabric_leader (const struct doctor_rank *self, const struct options *o)
{
    return o->fabric != FABRIC_OFF && self->rank != 0 && self->local_rank == 0
           && !fabric_on_master_node (self);
}

/* The part every rank but 0 plays: connect, prove, send, wait for the
 * verdict. */
static int run_peer (struct doctor_rank *self, const struct doctor_key *key,
                     const struct options *o, long start_ms)
{
    struct peer p = {.self = self,
                     .key = key,
                     .o = o,
                     .start_ms = start_ms,
                     .deadline = start_ms + (long) (o->timeout_s * 1000),
                     .fd = -1,
                     .tfd = -1,
                     .ufd = -1};
    enum exchange how = NO_PROOF;
    int rc;

    if (doctor_sockaddr (self->master_addr, self->master_port, &p.dst, &p.dstlen) < 0) {
        fprintf (stderr,
                 P "rank %ld on %s: MASTER_ADDR=%s MASTER_PORT=%s is not an address "
                   "and port; run under srun --dist-train or set both\n",
                 self->rank, self->node, self->master_addr, self->master_port);
        return EXIT_SETUP;
    }
    /* (listening before the record goes: once rank 0 has every record,
     * every node's listener is up) */
    if (fabric_leader (self, o))
        (void) fabric_open (self, &p.tfd, &p.ufd);
    if (source_address (self, &p.dst, &p.src, p.src_text, sizeof (p.src_text), &p.from) < 0
        || peer_send (&p, &how) < 0)
        rc = fail_late (start_ms, o);
    else if (how != TAKEN) {
        close (p.fd);
        say_not_sent (self, how, o->timeout_s);
        rc = 1;
    } else
        rc = peer_verdict (&p);
    if (p.tfd >= 0)
        close (p.tfd);
    if (p.ufd >= 0)
        close (p.ufd);
    return rc;
}

/* Where each RANK should run: the plugin's layout, which srun read from slurmctld and which
 * follows the plugin's rank order; else recomputed from Slurm's variables (block, cyclic,
 * plane, in node order); else none, and nothing is checked against it. */
static void load_layout (struct doctor_layout *layout)
{
    const char *job = getenv ("SLURM_JOB_ID"), *step = getenv ("SLURM_STEP_ID");

    if (job != NULL && step != NULL
        && doctor_layout_from_plugin (getenv ("SLURM_STEP_NODELIST"), getenv ("DIST_TRAIN_LAYOUT"),
                                      strtoul (job, NULL, 10), strtoul (step, NULL, 10), layout)
               == 0)
        return;
    if (doctor_layout_build (getenv ("SLURM_STEP_NODELIST"), getenv ("SLURM_STEP_TASKS_PER_NODE"),
                             getenv ("SLURM_DISTRIBUTION"), getenv ("SLURM_DIST_PLANESIZE"), layout)
        < 0)
        memset (layout, 0, sizeof (*layout));
}

/* Rank 0's part: listen where the others will connect, then serve. */
static int run_rank0 (struct doctor_rank *self, const struct doctor_key *key,
                      const struct options *o, long start_ms)
{
    struct sockaddr_storage ss;
    struct doctor_layout layout;
    const char *ifname = doctor_facts_ifname ();
    socklen_t len;
    int lfd, rc;

    if (doctor_sockaddr (self->master_addr, self->master_port, &ss, &len) < 0) {
        fprintf (stderr,
                 P "rank 0 on %s: MASTER_ADDR=%s MASTER_PORT=%s is not an address and "
                   "port; run under srun --dist-train or set both\n",
                 self->node, self->master_addr, self->master_port);
        return EXIT_SETUP;
    }
    if ((lfd = doctor_listen (&ss, len)) < 0) {
        if (errno == EADDRINUSE)
            fprintf (stderr,
                     P "MASTER_PORT %s is already in use on %s; stop what listens "
                       "there (ss -ltnp 'sport = :%s') or set MASTER_PORT to a free port\n",
                     self->master_port, self->node, self->master_port);
        else if (errno == EADDRNOTAVAIL)
            fprintf (stderr,
                     P "MASTER_ADDR %s is not an address of %s, where rank 0 runs; "
                       "unset MASTER_ADDR or set it to this node's address\n",
                     self->master_addr, self->node);
        else
            fprintf (stderr, P "cannot listen on %s:%s on %s: %s\n", self->master_addr,
                     self->master_port, self->node, strerror (errno));
        return EXIT_SETUP;
    }
    doctor_addr_text (&ss, self->source, sizeof (self->source));
    if (ifname != NULL && ifname[0] != '^')
        doctor_printable (self->ifname, sizeof (self->ifname), ifname);
    else
        (void) dist_interface_of ((const struct sockaddr *) &ss, self->ifname,
                                  sizeof (self->ifname));
    self->connect_ms = 0;
    load_layout (&layout);
    struct serve_options so = {.timeout_s = o->timeout_s, .json = o->json, .fabric = o->fabric};
    rc = doctor_serve (lfd, key, self, &layout, start_ms + (long) (o->timeout_s * 1000), &so);
    doctor_layout_free (&layout);
    return rc;
}

/* The step's key, which srun --dist-train hands to every task; taken out
 * of the environment so that the program --then runs does not inherit it. */
static int load_key (struct doctor_key *key)
{
    const char *hex = getenv (DOCTOR_KEY_VAR);

    if (hex == NULL || hex[0] == '\0') {
        fprintf (stderr, P DOCTOR_KEY_VAR
                 " is not set: the ranks prove to each other that they "
                 "belong to the step with the key srun --dist-train hands to every "
                 "task, and this srun did not (is the dist-train plugin loaded where "
                 "srun runs? srun --help | grep dist-train); outside srun, export "
                 "the same `openssl rand -hex 32` on every rank\n");
        return -1;
    }
    if (doctor_key_parse (hex, key) < 0) {
        fprintf (stderr, P DOCTOR_KEY_VAR " is not 64 hex digits; unset it, and run under srun "
                                          "--dist-train, which sets it\n");
        return -1;
    }
    unsetenv (DOCTOR_KEY_VAR);
    return 0;
}

/* The image's openssl.cnf may name modules to load, which the static build
 * cannot: HMAC-SHA256 needs none.  (The dynamic one reads the node's, as a
 * site's FIPS configuration wants.) */
static void crypto_setup (void)
{
    if (doctor_linked_static)
        (void) OPENSSL_init_crypto (OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
}

int main (int argc, char **argv)
{
    struct options o;
    struct doctor_rank self;
    struct doctor_key key;
    long start_ms = doctor_now_ms ();
    struct rlimit nofile;
    bool have_nofile, fabric_word;
    int rc;

    crypto_setup ();
    if (argc > 1 && strcmp (argv[1], "hang-watch") == 0)
        return hang_watch_main (argc - 1, argv + 1);
    if (argc > 1 && strcmp (argv[1], "hang") == 0)
        return hang_main (argc - 1, argv + 1);
    if (argc > 1 && (strcmp (argv[1], "hang-probe") == 0 || strcmp (argv[1], "hang-reach") == 0))
        return hang_probe_main (argc - 1, argv + 1);
    /* rank 0 raises its descriptor limit for the ranks' connections; the
     * program --then runs must start with the limit the task was given */
    have_nofile = getrlimit (RLIMIT_NOFILE, &nofile) == 0;
    /* "fabric" names what the check does beside the rest; it never skips it */
    fabric_word = argc > 1 && strcmp (argv[1], "fabric") == 0;
    if (parse_options (argc - fabric_word, argv + fabric_word, &o) < 0)
        return EXIT_SETUP;
    if (fabric_word && o.fabric == FABRIC_OFF) {
        fprintf (stderr, P "'fabric' checks the paths between nodes: --fabric takes fail or warn "
                           "there\n");
        return EXIT_SETUP;
    }
    doctor_facts_gather (&self);
    if (self.rank < 0 || self.world_size <= 0 || self.world_size > DOCTOR_RANKS_MAX) {
        fprintf (stderr, P "RANK and WORLD_SIZE are not set (or not numbers); run it as "
                           "srun --dist-train ... " DOCTOR_PROGRAM "\n");
        return EXIT_SETUP;
    }
    if (load_key (&key) < 0)
        return EXIT_SETUP;
    doctor_probe_stack (&self);
    rc = self.rank == 0 ? run_rank0 (&self, &key, &o, start_ms)
                        : run_peer (&self, &key, &o, start_ms);
    if (rc != 0 || o.then == NULL)
        return rc;
    /* every socket is closed by now: the command gets MASTER_PORT free */
    fflush (NULL);
    if (have_nofile)
        (void) setrlimit (RLIMIT_NOFILE, &nofile);
    execvp (o.then[0], o.then);
    fprintf (stderr, P "cannot run '%.200s' (--then): %s\n", o.then[0], strerror (errno));
    return 127;
}
