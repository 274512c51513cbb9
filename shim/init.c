/* init.c - starting and ending libdtshim: its settings, the step's server, the handlers;
 * and what the program asks of it outside the collectives (rank 0's address, the deadline,
 * abort). */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libdist/address.h"
#include "shim/dtshim.h"
#include "shim/shim.h"
#include "shim/wire.h"

static void world_of_one (void)
{
    shim_world.transport = NULL;
    shim_world.transport_rank = shim_world.local_rank = shim_world.node_rank = 0;
    shim_world.size = shim_world.local_size = shim_world.node_count = 1;
    if (gethostname (shim_world.chief_host, sizeof (shim_world.chief_host) - 1) != 0)
        snprintf (shim_world.chief_host, sizeof (shim_world.chief_host), "localhost");
}

static int read_settings (void)
{
    const char *text;

    text = getenv ("DTSHIM_TIMEOUT");
    if (text != NULL && shim_parse_timeout (text, &shim_world.timeout_s) != 0)
        return shim_fail (DTSHIM_ERR_INVALID, "DTSHIM_TIMEOUT=%s: want seconds (0 = forever)",
                          text);
    text = getenv ("DTSHIM_ABORT_ON_TIMEOUT");
    shim_world.abort_on_timeout = text != NULL && strcmp (text, "1") == 0;
    return DTSHIM_OK;
}

/* The step's server: PMIx where srun started one (--mpi=pmix), else Slurm's PMI-2
 * (--mpi=pmi2, which every Slurm has), else none. */
static int connect_server (void)
{
    const struct shim_transport *t = NULL;
    const char *tasks;
    int rv;

    if (getenv ("PMIX_NAMESPACE") != NULL)
        t = &shim_pmix_transport;
    else if (getenv ("PMI_FD") != NULL)
        t = &shim_pmi2_transport;
    if (t != NULL) {
        if ((rv = t->connect ()) == DTSHIM_OK)
            shim_world.transport = t;
        return rv;
    }
    /* Several tasks and no server: a world of one each would silently train N separate
     * models. */
    tasks = getenv ("SLURM_STEP_NUM_TASKS");
    if (tasks != NULL && atoi (tasks) > 1)
        return shim_fail (DTSHIM_ERR_NO_PMIX,
                          "step of %s tasks without PMIX_NAMESPACE or PMI_FD in the environment",
                          tasks);
    world_of_one ();
    return DTSHIM_OK;
}

static int disconnect (void)
{
    const struct shim_transport *t = shim_world.transport;

    shim_world.transport = NULL;
    return t != NULL ? t->disconnect () : DTSHIM_OK;
}

int dtshim_init (void)
{
    int rv;

    if (shim_world.initialized)
        return DTSHIM_OK;
    shim_clear_error ();
    shim_world.broken = false;
    if ((rv = read_settings ()) != DTSHIM_OK || (rv = connect_server ()) != DTSHIM_OK)
        return rv;
    shim_world.seq = 0;
    if ((rv = shim_rank_order_init ()) != DTSHIM_OK || (rv = shim_preempt_install ()) != DTSHIM_OK)
        goto fail;
    if ((rv = shim_watchdog_start ()) != DTSHIM_OK) {
        shim_preempt_restore ();
        goto fail;
    }
    shim_world.initialized = true;
    return DTSHIM_OK;
fail:
    shim_rank_order_clear ();
    disconnect ();
    return rv;
}

int dtshim_finalize (void)
{
    int rv;

    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    shim_watchdog_stop ();
    shim_preempt_restore ();
    shim_world.initialized = false;
    rv = disconnect ();
    shim_rank_order_clear ();
    shim_world.rank = shim_world.size = shim_world.local_rank = shim_world.local_size = -1;
    shim_world.node_rank = shim_world.node_count = -1;
    return rv;
}

int dtshim_has_pmix (void)
{
    return shim_world.initialized ? shim_world.transport == &shim_pmix_transport : -1;
}

const char *dtshim_backend (void)
{
    if (!shim_world.initialized)
        return NULL;
    return shim_world.transport != NULL ? shim_world.transport->name : "none";
}

int dtshim_chief_addr (char *buf, size_t len)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *list = NULL;
    char resolved[DIST_ADDR_MAX];
    const char *master, *addr = NULL;
    int rc;

    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if (buf == NULL || len == 0)
        return DTSHIM_ERR_INVALID;
    /* The SPANK plugin's policy (libdist/address.c), so both name the same address: never
     * loopback or link-local, which the other nodes cannot reach. */
    rc = getaddrinfo (shim_world.chief_host, NULL, &hints, &list);
    if (rc == 0 && dist_address_pick (list, resolved, sizeof (resolved)) == 0)
        addr = resolved;
    else if ((master = getenv ("MASTER_ADDR")) != NULL && *master != '\0')
        addr = master; /* the SPANK plugin's choice, from Slurm's NodeAddr for that node */
    else if (shim_world.transport == NULL)
        addr = "127.0.0.1"; /* a world of one: every peer is this process, loopback reaches it */
    if (list != NULL)
        freeaddrinfo (list);
    if (addr == NULL)
        return shim_fail (DTSHIM_ERR_NO_ADDRESS, "%s: %s", shim_world.chief_host,
                          rc != 0 ? gai_strerror (rc) : "only loopback or link-local addresses");
    if ((size_t) snprintf (buf, len, "%s", addr) >= len)
        return DTSHIM_ERR_INVALID;
    return DTSHIM_OK;
}

int dtshim_set_timeout (double seconds)
{
    if (!(seconds >= 0 && seconds <= SHIM_TIMEOUT_MAX))
        return DTSHIM_ERR_INVALID;
    shim_world.timeout_s = seconds;
    return DTSHIM_OK;
}

double dtshim_get_timeout (void)
{
    return shim_world.timeout_s;
}

int dtshim_set_abort_on_timeout (int on)
{
    shim_world.abort_on_timeout = on != 0;
    return DTSHIM_OK;
}

/* How long dtshim_abort waits, once the server has its request, for Slurm to end the step
 * (PMIx_Abort returns when its server has the request, PMI-2's abort has no answer). */
#define ABORT_WAIT_S 10

int dtshim_abort (int status, const char *msg)
{
    struct timespec left = {ABORT_WAIT_S, 0};
    int rv;

    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if (shim_world.transport == NULL)
        return DTSHIM_ERR_NO_PMIX;
    /* Slurm ends the step with SIGTERM: let the first one end this task too. */
    shim_preempt_restore ();
    if ((rv = shim_world.transport->abort (status, msg != NULL ? msg : "dtshim_abort"))
        != DTSHIM_OK)
        return rv;
    while (nanosleep (&left, &left) != 0 && errno == EINTR)
        ;
    return shim_fail (DTSHIM_ERR_PMIX, "%s abort: Slurm did not end the step within %d s",
                      shim_world.transport->name, ABORT_WAIT_S);
}
