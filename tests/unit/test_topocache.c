/* test_topocache.c - the node's topology cache (spank/topocache.c) holds the
 * whole machine, whatever cpuset the step that saves it runs in.
 *
 * In slurmstepd, the first step after a boot loads the live machine inside
 * its own cpuset and saves it for every later step.  Here a child is put in
 * a cpuset cgroup of one CPU that the test makes, loads the live topology
 * and saves the cache, as local rank 0's task does; then the test, outside
 * that cpuset, loads the cache as a later step would: it must see every CPU.
 *
 * The cgroup is a child of the test's own cpuset (cgroup v1), or of the root
 * where the host has cgroup v2 with the cpuset controller enabled there; it
 * is removed after each case, also when the case fails.  The cache directory
 * is a tmpfs over /run in a private mount namespace: the host's caches are
 * never touched.  Needs root and two CPUs: skipped (77) without. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <hwloc.h>

#include "spank/dist_train.h"
#include "libdist/topo.h"

struct dist_train dist_train;

void slurm_verbose (const char *format, ...)
{
    (void) format;
}

#define CPUSET_V1 "/sys/fs/cgroup/cpuset"
#define CGROUP_V2 "/sys/fs/cgroup"

static struct {
    char parent[PATH_MAX]; /* the cpuset the test runs in */
    char dir[PATH_MAX + 64]; /* the one-CPU cpuset the test makes */
    const char *procs;     /* "tasks" (v1) or "cgroup.procs" (v2) */
    int cpu;               /* the one CPU */
} cg;

static int write_file (const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 128];
    size_t len = strlen (text);
    int fd, rc;

    snprintf (path, sizeof (path), "%s/%s", dir, name);
    if ((fd = open (path, O_WRONLY | O_CLOEXEC)) < 0)
        return -1;
    rc = write (fd, text, len) == (ssize_t) len ? 0 : -1;
    if (close (fd) < 0)
        rc = -1;
    return rc;
}

static int read_file (const char *dir, const char *name, char *buf, size_t size)
{
    char path[PATH_MAX + 128];
    ssize_t n;
    int fd;

    snprintf (path, sizeof (path), "%s/%s", dir, name);
    if ((fd = open (path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = read (fd, buf, size - 1);
    close (fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    buf[strcspn (buf, "\n")] = '\0';
    return 0;
}

/* The test's own cpuset: v1's cpuset hierarchy, else v2's root when cpuset
 * is enabled for its children.  A reason to skip in why, else 0. */
static int find_cpuset (char *why, size_t size)
{
    char line[PATH_MAX + 64], ctl[256];
    FILE *f;

    if (access (CPUSET_V1 "/cpuset.cpus", F_OK) == 0) {
        snprintf (cg.parent, sizeof (cg.parent), "%s", CPUSET_V1);
        if ((f = fopen ("/proc/self/cgroup", "re")) != NULL) {
            while (fgets (line, sizeof (line), f) != NULL) {
                char *p = strstr (line, ":cpuset:");
                if (p != NULL) {
                    p[strcspn (p, "\n")] = '\0';
                    if (strcmp (p + 8, "/") != 0)
                        snprintf (cg.parent, sizeof (cg.parent), "%s%s", CPUSET_V1, p + 8);
                }
            }
            fclose (f);
        }
        cg.procs = "tasks";
        return 0;
    }
    if (read_file (CGROUP_V2, "cgroup.subtree_control", ctl, sizeof (ctl)) == 0) {
        char *tok, *save = NULL;
        for (tok = strtok_r (ctl, " ", &save); tok != NULL; tok = strtok_r (NULL, " ", &save))
            if (strcmp (tok, "cpuset") == 0) {
                snprintf (cg.parent, sizeof (cg.parent), "%s", CGROUP_V2);
                cg.procs = "cgroup.procs";
                return 0;
            }
        snprintf (why, size, "cgroup v2 without the cpuset controller enabled at its root");
        return -1;
    }
    snprintf (why, size, "no cpuset cgroup hierarchy");
    return -1;
}

/* Make the one-CPU cpuset: the first CPU of the test's affinity. */
static int setup_cpuset (void **state)
{
    char mems[256], cpu[32];
    cpu_set_t mask;

    (void) state;
    if (sched_getaffinity (0, sizeof (mask), &mask) < 0)
        return -1;
    for (cg.cpu = 0; cg.cpu < CPU_SETSIZE && !CPU_ISSET (cg.cpu, &mask); cg.cpu++)
        ;
    snprintf (cg.dir, sizeof (cg.dir), "%s/dist-train-test-%ld", cg.parent, (long) getpid ());
    if (mkdir (cg.dir, 0755) < 0) {
        print_error ("cannot make the cpuset %s: %s\n", cg.dir, strerror (errno));
        cg.dir[0] = '\0';
        return -1;
    }
    snprintf (cpu, sizeof (cpu), "%d", cg.cpu);
    /* v1 needs both set before a task may join; v2 takes them from its parent */
    if (strcmp (cg.procs, "tasks") == 0
        && (read_file (cg.parent, "cpuset.mems", mems, sizeof (mems)) < 0
            || write_file (cg.dir, "cpuset.mems", mems) < 0)) {
        print_error ("cannot set %s/cpuset.mems: %s\n", cg.dir, strerror (errno));
        return -1;
    }
    if (write_file (cg.dir, "cpuset.cpus", cpu) < 0) {
        print_error ("cannot set %s/cpuset.cpus: %s\n", cg.dir, strerror (errno));
        return -1;
    }
    return 0;
}

/* Remove the cpuset (its only task, the child, has been reaped). */
static int teardown_cpuset (void **state)
{
    int i;

    (void) state;
    if (cg.dir[0] == '\0')
        return 0;
    for (i = 0; i < 50 && rmdir (cg.dir) < 0 && errno == EBUSY; i++)
        usleep (100 * 1000);
    if (access (cg.dir, F_OK) == 0) {
        print_error ("cannot remove the cpuset %s: %s\n", cg.dir, strerror (errno));
        return -1;
    }
    cg.dir[0] = '\0';
    return 0;
}

/* The child: join the cpuset, load the live machine and save the cache.
 * Its exit status says what went wrong. */
enum { CHILD_OK, CHILD_JOIN, CHILD_AFFINITY, CHILD_LOAD, CHILD_SAVE };

static int child_saves_cache (void)
{
    char pid[32], err[DIST_ERR_MAX];
    struct dist_topo t;
    cpu_set_t mask;

    alarm (30);
    snprintf (pid, sizeof (pid), "%ld", (long) getpid ());
    if (write_file (cg.dir, cg.procs, pid) < 0)
        return CHILD_JOIN;
    /* the kernel narrowed this process to the cpuset's one CPU */
    if (sched_getaffinity (0, sizeof (mask), &mask) < 0 || CPU_COUNT (&mask) != 1
        || !CPU_ISSET (cg.cpu, &mask))
        return CHILD_AFFINITY;
    if (dist_train_topology_load (&t, false, err, sizeof (err)) != TOPO_LIVE)
        return CHILD_LOAD;
    dist_train_topology_save (&t, false);
    dist_topo_destroy (&t);
    if (access ("/run/slurm-dist-train/topology-testnode.xml", F_OK) < 0)
        return CHILD_SAVE;
    return CHILD_OK;
}

static void test_cache_saved_in_a_cpuset_holds_every_cpu (void **state)
{
    const char *what[] = {"ok", "cannot join the cpuset", "the cpuset did not narrow the affinity",
                          "the live load failed", "the cache was not written"};
    struct dist_topo live, cached;
    char err[DIST_ERR_MAX], a[256], b[256];
    bool same, all_allowed;
    int status;
    pid_t pid;

    (void) state;
    pid = fork ();
    assert_true (pid >= 0);
    if (pid == 0)
        _exit (child_saves_cache ());
    assert_int_equal (waitpid (pid, &status, 0), pid);
    if (!WIFEXITED (status))
        fail_msg ("the child died of signal %d", WTERMSIG (status));
    if (WEXITSTATUS (status) != CHILD_OK)
        fail_msg ("child: %s",
                  WEXITSTATUS (status) < 5 ? what[WEXITSTATUS (status)] : "unknown status");

    /* a later step, outside that cpuset: reads the cache, sees the machine */
    assert_int_equal (dist_train_topology_load (&cached, false, err, sizeof (err)), TOPO_CACHE);
    assert_int_equal (dist_topo_load (&live, NULL, DIST_TOPO_WHOLE_MACHINE, err, sizeof (err)), 0);
    same = hwloc_bitmap_isequal (hwloc_topology_get_topology_cpuset (cached.topo),
                                 hwloc_topology_get_topology_cpuset (live.topo));
    all_allowed = hwloc_bitmap_isequal (hwloc_topology_get_allowed_cpuset (cached.topo),
                                        hwloc_topology_get_topology_cpuset (cached.topo));
    hwloc_bitmap_list_snprintf (a, sizeof (a), hwloc_topology_get_topology_cpuset (cached.topo));
    hwloc_bitmap_list_snprintf (b, sizeof (b), hwloc_topology_get_topology_cpuset (live.topo));
    dist_topo_destroy (&cached);
    dist_topo_destroy (&live);
    if (!same)
        fail_msg ("the cache saved in cpuset %d holds CPUs %s, the machine has %s", cg.cpu, a, b);
    /* and it says every one of them may be used */
    if (!all_allowed)
        fail_msg ("the cache saved in cpuset %d does not allow every CPU", cg.cpu);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_cache_saved_in_a_cpuset_holds_every_cpu,
                                         setup_cpuset, teardown_cpuset),
    };
    char why[256];
    cpu_set_t mask;

    if (geteuid () != 0) {
        printf ("SKIP: needs root (to make a cpuset cgroup)\n");
        return 77;
    }
    if (sched_getaffinity (0, sizeof (mask), &mask) < 0 || CPU_COUNT (&mask) < 2) {
        printf ("SKIP: needs two CPUs (one for the cpuset, one outside)\n");
        return 77;
    }
    if (find_cpuset (why, sizeof (why)) < 0) {
        printf ("SKIP: %s\n", why);
        return 77;
    }
    /* the cache directory, /run/slurm-dist-train, on a tmpfs of this test's own */
    if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0
        || mount ("dist-train-test", "/run", "tmpfs", 0, "mode=0755,size=16m") < 0) {
        printf ("SKIP: cannot mount a private /run: %s\n", strerror (errno));
        return 77;
    }
    snprintf (dist_train.node_name, sizeof (dist_train.node_name), "testnode");
    return cmocka_run_group_tests (tests, NULL, NULL);
}
