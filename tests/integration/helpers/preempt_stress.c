/* preempt_stress - the preemption decision as a training loop takes it, for
 * scripts/stress-preempt and shim.bats.
 *   preempt_stress STEPS SIGRANK SIGSTEP early|late|async
 * early, late: each step an allgather, a gather and a broadcast (their roots go
 * round), then dtshim_should_preempt().  Rank SIGRANK raises SIGUSR2 at step
 * SIGSTEP, before its collectives (early) or just before the decision (late);
 * every rank must answer 0 before SIGSTEP and 1 at it, and then stops.
 * async: the decisions back to back, each rank working a random 0-400 us
 * between them (as with a training step whose collectives are not PMIx's, so the
 * ranks drift apart up to a fence), and SIGUSR2 comes to rank SIGRANK from a
 * timer SIGSTEP * 300 us after init, at any point of a call.  Where they stop
 * is not known ahead; every rank must stop at the same step.
 * In every mode each rank prints "rank R: decided at S" (S = STEPS: never),
 * then one allgather more compares where each rank stopped, and it prints "rank
 * R: stopped at S after D decisions", or a line that starts with "FAIL" and
 * exits non-zero on any wrong answer or failed call. */
#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dtshim.h>

static int rank, size;

static void check (int rv, const char *call, int step)
{
    if (rv < 0) {
        printf ("FAIL rank %d: step %d: %s: %s (%s)\n", rank, step, call, dtshim_strerror (rv),
                dtshim_last_error ());
        fflush (stdout);
        exit (1);
    }
}

static void one_step (int step, int32_t *all)
{
    int32_t mine = step * 1000 + rank, got;
    int root = step % size, r;

    check (dtshim_allgather (&mine, sizeof (mine), all), "dtshim_allgather", step);
    for (r = 0; r < size; r++)
        if (all[r] != step * 1000 + r) {
            printf ("FAIL rank %d: step %d: allgather has %d from rank %d\n", rank, step,
                    (int) all[r], r);
            exit (1);
        }
    check (dtshim_gather (&mine, sizeof (mine), all, root), "dtshim_gather", step);
    if (rank == root)
        for (r = 0; r < size; r++)
            if (all[r] != step * 1000 + r) {
                printf ("FAIL rank %d: step %d: gather has %d from rank %d\n", rank, step,
                        (int) all[r], r);
                exit (1);
            }
    got = rank == root ? step * 7 + 1 : -1;
    check (dtshim_broadcast (&got, sizeof (got), root), "dtshim_broadcast", step);
    if (got != step * 7 + 1) {
        printf ("FAIL rank %d: step %d: broadcast from rank %d has %d\n", rank, step, root,
                (int) got);
        exit (1);
    }
}

/* The decisions back to back, a signal from a timer; returns the step this rank stopped at
 * (steps: never). */
static int run_async (int steps, int sigrank, int sigstep)
{
    unsigned seed = (unsigned) (sigstep * 1000 + rank * 7 + 1);
    struct sigevent ev;
    struct itimerspec when;
    timer_t timer;
    int step, decided;

    if (rank == sigrank) {
        memset (&ev, 0, sizeof (ev));
        ev.sigev_notify = SIGEV_SIGNAL;
        ev.sigev_signo = SIGUSR2;
        memset (&when, 0, sizeof (when));
        when.it_value.tv_sec = sigstep * 300000L / 1000000000L;
        when.it_value.tv_nsec = sigstep * 300000L % 1000000000L + 1;
        if (timer_create (CLOCK_MONOTONIC, &ev, &timer) != 0
            || timer_settime (timer, 0, &when, NULL) != 0) {
            printf ("FAIL rank %d: cannot arm the signal's timer\n", rank);
            exit (1);
        }
    }
    for (step = 0; step < steps; step++) {
        usleep ((useconds_t) (rand_r (&seed) % 400));
        decided = dtshim_should_preempt ();
        check (decided, "dtshim_should_preempt", step);
        if (decided)
            return step;
    }
    return steps;
}

/* early, late: a step's collectives, then the decision, which must be 1 from sigstep on;
 * returns the step this rank stopped at (steps: never). */
static int run_steps (int steps, int sigrank, int sigstep, bool late, int32_t *all)
{
    int step, decided;

    for (step = 0; step < steps; step++) {
        if (rank == sigrank && step == sigstep && !late)
            raise (SIGUSR2);
        one_step (step, all);
        if (rank == sigrank && step == sigstep && late)
            raise (SIGUSR2);
        decided = dtshim_should_preempt ();
        check (decided, "dtshim_should_preempt", step);
        if (decided != (step >= sigstep)) {
            printf ("FAIL rank %d: step %d: should_preempt answered %d (rank %d signalled at "
                    "step %d)\n",
                    rank, step, decided, sigrank, sigstep);
            fflush (stdout);
            exit (1);
        }
        if (decided)
            break;
    }
    return step;
}

/* Where every rank stopped, compared in one more collective. */
static void compare (int step, int steps, int32_t *all)
{
    int32_t stop = step;

    /* said first: a collective after a disagreement may fail */
    printf ("rank %d: decided at %d\n", rank, step);
    fflush (stdout);
    check (dtshim_allgather (&stop, sizeof (stop), all), "dtshim_allgather (stop)", step);
    for (int r = 0; r < size; r++)
        if (all[r] != stop) {
            printf ("FAIL rank %d: stopped at %d, rank %d at %d\n", rank, (int) stop, r,
                    (int) all[r]);
            exit (1);
        }
    printf ("rank %d: stopped at %d after %d decisions\n", rank, (int) stop,
            step < steps ? step + 1 : steps);
    fflush (stdout);
}

int main (int argc, char **argv)
{
    int steps, sigrank, sigstep, step;
    int32_t *all;

    if (argc != 5
        || (strcmp (argv[4], "early") != 0 && strcmp (argv[4], "late") != 0
            && strcmp (argv[4], "async") != 0)) {
        fprintf (stderr, "usage: preempt_stress STEPS SIGRANK SIGSTEP early|late|async\n");
        return 2;
    }
    steps = atoi (argv[1]);
    sigrank = atoi (argv[2]);
    sigstep = atoi (argv[3]);
    check (dtshim_init (), "dtshim_init", -1);
    rank = dtshim_rank ();
    size = dtshim_size ();
    if ((all = calloc ((size_t) size, sizeof (*all))) == NULL)
        return 1;
    if (strcmp (argv[4], "async") == 0)
        step = run_async (steps, sigrank, sigstep);
    else
        step = run_steps (steps, sigrank, sigstep, strcmp (argv[4], "late") == 0, all);
    compare (step, steps, all);
    free (all);
    check (dtshim_finalize (), "dtshim_finalize", step);
    return 0;
}
