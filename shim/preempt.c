/* preempt.c - recording Slurm's preemption signals, and the decision all ranks take together. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

#define DEFAULT_PREEMPT_SIGNAL SIGUSR2

static volatile sig_atomic_t preempt_flag;
static volatile sig_atomic_t term_count;
static int preempt_signo; /* 0: none besides SIGTERM */
static bool term_installed;
static struct sigaction old_term, old_preempt;
static int decided; /* the collective answer, once it is 1 */

static bool is_function (const struct sigaction *sa)
{
    if (sa->sa_flags & SA_SIGINFO)
        return sa->sa_sigaction != NULL;
    return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

static void chain (const struct sigaction *old, int sig, siginfo_t *info, void *ctx)
{
    if (old->sa_flags & SA_SIGINFO)
        old->sa_sigaction (sig, info, ctx);
    else
        old->sa_handler (sig);
}

static void on_signal (int sig, siginfo_t *info, void *ctx)
{
    int saved_errno = errno;
    const struct sigaction *old = sig == SIGTERM ? &old_term : &old_preempt;
    struct sigaction dfl;

    preempt_flag = 1;
    if (is_function (old)) {
        chain (old, sig, info, ctx);
    } else if (sig == SIGTERM && old->sa_handler == SIG_DFL && term_count++ > 0) {
        /* The second SIGTERM: what SIG_DFL would have done. SIGTERM is blocked while
		 * this handler runs, so it is delivered, and ends the process, on return. */
        memset (&dfl, 0, sizeof (dfl));
        dfl.sa_handler = SIG_DFL;
        sigaction (SIGTERM, &dfl, NULL);
        raise (SIGTERM);
    }
    errno = saved_errno;
}

static int install (int sig, struct sigaction *old)
{
    struct sigaction sa;

    memset (&sa, 0, sizeof (sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset (&sa.sa_mask);
    if (sigaction (sig, &sa, old) != 0)
        return shim_fail (DTSHIM_ERR_SIGNAL, "sigaction(%d): %s", sig, strerror (errno));
    return DTSHIM_OK;
}

int shim_preempt_install (void)
{
    const char *text = getenv ("DTSHIM_PREEMPT_SIGNAL");
    int signo = DEFAULT_PREEMPT_SIGNAL, rv;

    if (text != NULL && shim_parse_signal (text, &signo) != 0)
        return shim_fail (DTSHIM_ERR_SIGNAL,
                          "DTSHIM_PREEMPT_SIGNAL=%s: want a signal name "
                          "like USR2, a number, or none (SIGTERM is always recorded)",
                          text);
    preempt_flag = 0;
    term_count = 0;
    decided = 0;
    if ((rv = install (SIGTERM, &old_term)) != DTSHIM_OK)
        return rv;
    term_installed = true;
    if (signo != 0 && (rv = install (signo, &old_preempt)) != DTSHIM_OK) {
        shim_preempt_restore ();
        return rv;
    }
    preempt_signo = signo;
    return DTSHIM_OK;
}

void shim_preempt_restore (void)
{
    if (preempt_signo != 0)
        sigaction (preempt_signo, &old_preempt, NULL);
    preempt_signo = 0;
    if (term_installed)
        sigaction (SIGTERM, &old_term, NULL);
    term_installed = false;
}

int dtshim_set_preempt_signal (int signo)
{
    int rv;

    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if (signo != 0 && !shim_signal_allowed (signo))
        return DTSHIM_ERR_INVALID;
    if (signo == preempt_signo)
        return DTSHIM_OK;
    if (preempt_signo != 0)
        sigaction (preempt_signo, &old_preempt, NULL);
    preempt_signo = 0;
    if (signo != 0) {
        if ((rv = install (signo, &old_preempt)) != DTSHIM_OK)
            return rv;
        preempt_signo = signo;
    }
    return DTSHIM_OK;
}

int dtshim_preempt_requested (void)
{
    return preempt_flag != 0;
}

void dtshim_request_preempt (void)
{
    preempt_flag = 1;
}

/* The key a rank puts, once, when it has recorded a preemption request. */
#define PREEMPT_KEY "dtshim.preempt"

static bool published; /* this rank has put PREEMPT_KEY */

/* Only a rank that was asked puts anything, and only once: every value put stays in
 * Slurm's PMIx for the whole step and travels again with each collecting fence, so a vote
 * at every call would make each call slower than the one before (doc/decisions.md;
 * scripts/bench-shim runs 2,000 calls in a row). This way every call costs one collecting fence of
 * constant size, then a get of each other rank's PREEMPT_KEY from the node's PMIx server
 * (over PMI-2, where a key is the step's, one get of the one PREEMPT_KEY).
 *
 * The answer is the same on every rank: a rank asked before call seq puts PREEMPT_KEY = seq
 * and commits it before it joins seq's fence, so once that fence is done every node's server
 * holds it (its own node's from the commit, the others' from the fence), and every rank finds
 * it. A rank already past the fence may put its key for a later call while another still
 * reads, and the server may hold that one too: its value, greater than seq, leaves it out. */
int dtshim_should_preempt (void)
{
    uint64_t seq;
    int rv, any;

    if ((rv = shim_begin (&seq)) != DTSHIM_OK)
        return rv;
    /* Every rank decided 1 at the same call: no need to ask again. */
    if (decided)
        goto out;
    if (shim_world.transport == NULL) {
        decided = preempt_flag != 0;
        goto out;
    }
    if (preempt_flag && !published) {
        if ((rv = shim_world.transport->publish (PREEMPT_KEY, seq)) != DTSHIM_OK)
            goto out;
        published = true;
    }
    if ((rv = shim_world.transport->exchange (SHIM_OP_PREEMPT, NULL, 0, false, seq)) != DTSHIM_OK)
        goto out;
    if ((rv = shim_world.transport->probe (PREEMPT_KEY, seq, &any)) != DTSHIM_OK)
        goto out;
    decided = any || published;
out:
    shim_end ();
    return rv != DTSHIM_OK ? rv : decided;
}
