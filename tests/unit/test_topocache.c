/* test_topocache.c - the node's topology cache (spank/topocache.c): it holds
 * the whole machine, whatever cpuset the step that saves it runs in; root
 * writes only slurmd's own name for the node, into a directory of a set mode
 * and a bounded size; and a site's file is never touched by the caller, so
 * that a hung mount or a FIFO cannot hold slurmstepd past the deadline.
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
 * never touched.  A hung mount is a FUSE file system that never answers
 * (/dev/fuse opened, mounted, never read), in the same namespace.  Needs
 * root: skipped (77) without; the cpuset case also needs two CPUs. */
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
#include <dirent.h>
#include <sys/mount.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <hwloc.h>

#include "spank/dist_train.h"
#include "libdist/io.h"
#include "libdist/topo.h"

/* The settings: topology= is the site's file. */
static struct dist_config cfg;

/* A step's load of its node's topology. */
struct load {
    struct node_topology *nt;
    const struct dist_topo *t; /* NULL when it failed */
};

/* Load as a step does: where the topology came from, TOPO_NONE when it failed. */
static enum topo_source load (struct load *l, bool need_io, char *err, size_t errsz)
{
    if ((l->nt = dist_train_topology_new (&cfg)) == NULL)
        return TOPO_NONE;
    l->t = dist_train_topology_load (l->nt, need_io, err, errsz);
    return l->t != NULL ? dist_train_topology_source (l->nt) : TOPO_NONE;
}

static void unload (struct load *l)
{
    dist_train_topology_free (l->nt);
    l->nt = NULL;
    l->t = NULL;
}

void slurm_verbose (const char *format, ...)
{
    (void) format;
}

/* What the plugin last told the node's log at info level. */
static char logged[1024];

void slurm_info (const char *format, ...)
{
    va_list ap;

    va_start (ap, format);
    vsnprintf (logged, sizeof (logged), format, ap);
    va_end (ap);
}

#define CACHE "/run/slurm-dist-train"
#define OURS CACHE "/topology-testnode.xml"
/* a boot id the user could bind over the kernel's in a container */
#define FAKE_BOOT "0123abcd-0123-4567-89ab-0123456789ab"

#define CPUSET_V1 "/sys/fs/cgroup/cpuset"
#define CGROUP_V2 "/sys/fs/cgroup"

static struct {
    bool usable; /* a cpuset can be made, and there are two CPUs */
    char why[256]; /* else why not */
    char parent[PATH_MAX]; /* the cpuset the test runs in */
    char dir[PATH_MAX + 64]; /* the one-CPU cpuset the test makes */
    const char *procs; /* "tasks" (v1) or "cgroup.procs" (v2) */
    int cpu; /* the one CPU */
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
    if (!cg.usable)
        return 0;
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
    struct load t;
    cpu_set_t mask;

    alarm (30);
    snprintf (pid, sizeof (pid), "%ld", (long) getpid ());
    if (write_file (cg.dir, cg.procs, pid) < 0)
        return CHILD_JOIN;
    /* the kernel narrowed this process to the cpuset's one CPU */
    if (sched_getaffinity (0, sizeof (mask), &mask) < 0 || CPU_COUNT (&mask) != 1
        || !CPU_ISSET (cg.cpu, &mask))
        return CHILD_AFFINITY;
    if (load (&t, false, err, sizeof (err)) != TOPO_LIVE)
        return CHILD_LOAD;
    dist_train_topology_planned (t.nt);
    dist_train_topology_save (t.nt);
    unload (&t);
    if (access (OURS, F_OK) < 0)
        return CHILD_SAVE;
    return CHILD_OK;
}

static void test_cache_saved_in_a_cpuset_holds_every_cpu (void **state)
{
    const char *what[] = {"ok", "cannot join the cpuset", "the cpuset did not narrow the affinity",
                          "the live load failed", "the cache was not written"};
    struct dist_topo live;
    struct load cached;
    char err[DIST_ERR_MAX], a[256], b[256];
    bool same, all_allowed;
    int status;
    pid_t pid;

    (void) state;
    if (!cg.usable)
        skip ();
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
    assert_int_equal (load (&cached, false, err, sizeof (err)), TOPO_CACHE);
    assert_int_equal (dist_topo_load (&live, NULL, DIST_TOPO_WHOLE_MACHINE, err, sizeof (err)), 0);
    same = hwloc_bitmap_isequal (hwloc_topology_get_topology_cpuset (cached.t->topo),
                                 hwloc_topology_get_topology_cpuset (live.topo));
    all_allowed = hwloc_bitmap_isequal (hwloc_topology_get_allowed_cpuset (cached.t->topo),
                                        hwloc_topology_get_topology_cpuset (cached.t->topo));
    hwloc_bitmap_list_snprintf (a, sizeof (a), hwloc_topology_get_topology_cpuset (cached.t->topo));
    hwloc_bitmap_list_snprintf (b, sizeof (b), hwloc_topology_get_topology_cpuset (live.topo));
    unload (&cached);
    dist_topo_destroy (&live);
    if (!same)
        fail_msg ("the cache saved in cpuset %d holds CPUs %s, the machine has %s", cg.cpu, a, b);
    /* and it says every one of them may be used */
    if (!all_allowed)
        fail_msg ("the cache saved in cpuset %d does not allow every CPU", cg.cpu);
}

/* Every file under the cache directory but name, printed; how many. */
static int others_in_cache (const char *name)
{
    struct dirent *de;
    int n = 0;
    DIR *d = opendir (CACHE);

    if (d == NULL)
        return 0;
    while ((de = readdir (d)) != NULL)
        if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0
            && strcmp (de->d_name, name) != 0) {
            print_message ("  in the cache directory: %s\n", de->d_name);
            n++;
        }
    closedir (d);
    return n;
}

static void empty_cache (void)
{
    struct dirent *de;
    char path[PATH_MAX];
    DIR *d = opendir (CACHE);

    if (d == NULL)
        return;
    while ((de = readdir (d)) != NULL)
        if (de->d_name[0] != '.' || (strcmp (de->d_name, ".") && strcmp (de->d_name, ".."))) {
            snprintf (path, sizeof (path), "%s/%s", CACHE, de->d_name);
            unlink (path);
        }
    closedir (d);
    rmdir (CACHE);
}

/* As local rank 0's task does: load the live machine, save it. */
static void load_and_save (void)
{
    char err[DIST_ERR_MAX];
    struct load t;

    assert_int_not_equal (load (&t, false, err, sizeof (err)), TOPO_NONE);
    dist_train_topology_planned (t.nt);
    dist_train_topology_save (t.nt);
    unload (&t);
}

static int fresh_cache (void **state)
{
    (void) state;
    empty_cache ();
    logged[0] = '\0';
    dist_config_init (&cfg);
    unsetenv ("HWLOC_XMLFILE");
    return 0;
}

/* slurmstepd's environment is shared by its threads: a load never rewrites or frees the
 * array (setenv/unsetenv do), yet hwloc's GPU plugins stay out.  First of all cases, so
 * that it sees this process's first topology. */
static void test_environment_never_written (void **state)
{
    char **before = environ, **copy, line[512], err[DIST_ERR_MAX];
    struct load t;
    bool opencl = false;
    size_t n = 0, i;
    FILE *maps;

    (void) state;
    while (before[n] != NULL)
        n++;
    copy = calloc (n + 1, sizeof (*copy));
    assert_non_null (copy);
    memcpy (copy, before, n * sizeof (*copy));
    assert_int_not_equal (load (&t, false, err, sizeof (err)), TOPO_NONE);
    /* (the plugins are loaded while t lives) */
    assert_non_null (maps = fopen ("/proc/self/maps", "re"));
    while (fgets (line, sizeof (line), maps) != NULL)
        opencl = opencl || strstr (line, "hwloc_opencl") != NULL;
    fclose (maps);
    unload (&t);
    if (environ != before)
        fail_msg ("the load replaced the environment's array (setenv in slurmstepd)");
    for (i = 0; i <= n; i++)
        if (before[i] != copy[i])
            fail_msg ("the load changed entry %zu of the environment's array in place", i);
    free (copy);
    assert_null (getenv (DIST_TOPO_PLUGINS_ENV));
    assert_false (opencl);
}

/* The file is named after slurmd's name for the node, never the step's (the user's). */
static void test_cache_named_by_slurmd (void **state)
{
    (void) state;
    load_and_save ();
    assert_int_equal (access (OURS, F_OK), 0);
    assert_int_equal (others_in_cache ("topology-testnode.xml"), 0);
    /* and without slurmd's name nothing is written */
    empty_cache ();
    unsetenv ("SLURMD_NODENAME");
    load_and_save ();
    setenv ("SLURMD_NODENAME", "testnode", 1);
    assert_int_equal (others_in_cache (""), 0);
}

/* The task that makes the directory has the job user's umask: the mode is set anyway. */
static void test_cache_dir_mode_is_not_the_umask (void **state)
{
    struct stat st;
    mode_t old = umask (077);

    (void) state;
    load_and_save ();
    umask (old);
    assert_int_equal (stat (CACHE, &st), 0);
    assert_int_equal (st.st_mode & 07777, 0755);
    assert_int_equal (stat (OURS, &st), 0);
    assert_int_equal (st.st_mode & 07777, 0644);
}

/* A directory others cannot search is no cache for their steps: nothing is written, and
 * the node's log says why. */
static void test_cache_dir_others_cannot_search (void **state)
{
    (void) state;
    assert_int_equal (mkdir (CACHE, 0700), 0);
    assert_int_equal (chmod (CACHE, 0700), 0);
    load_and_save ();
    assert_int_equal (access (OURS, F_OK), -1);
    assert_non_null (strstr (logged, "mode 0700, which other users cannot search"));
}

static void make_file (const char *name, time_t age)
{
    char path[PATH_MAX];
    struct timeval tv[2];
    int fd;

    snprintf (path, sizeof (path), "%s/%s", CACHE, name);
    assert_true ((fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) >= 0);
    close (fd);
    gettimeofday (&tv[0], NULL);
    tv[0].tv_sec -= age;
    tv[1] = tv[0];
    assert_int_equal (utimes (path, tv), 0);
}

/* A writer killed between making its temporary file and renaming it left the file: the
 * next writer removes it, and leaves alone one that is being written now. */
static void test_stale_temporaries_removed (void **state)
{
    (void) state;
    assert_int_equal (mkdir (CACHE, 0755), 0);
    make_file (".topology-Old123", 3600);
    make_file (".topology-New456", 0);
    load_and_save ();
    assert_int_equal (access (OURS, F_OK), 0);
    assert_int_equal (access (CACHE "/.topology-Old123", F_OK), -1);
    assert_int_equal (access (CACHE "/.topology-New456", F_OK), 0);
}

/* The directory is held in memory until reboot: past its bound nothing more is added. */
static void test_cache_dir_bounded (void **state)
{
    char name[64];

    (void) state;
    assert_int_equal (mkdir (CACHE, 0755), 0);
    for (int i = 0; i < 512; i++) {
        snprintf (name, sizeof (name), "topology-other%d.xml", i);
        make_file (name, 0);
    }
    load_and_save ();
    assert_int_equal (access (OURS, F_OK), -1);
    assert_non_null (strstr (logged, "more than the 512 files"));
    /* one fewer, and it is written */
    assert_int_equal (unlink (CACHE "/topology-other0.xml"), 0);
    load_and_save ();
    assert_int_equal (access (OURS, F_OK), 0);
}

/* After a load that wanted no plugins (the cache's), a live load with I/O devices gets
 * hwloc's PCI plugin: the machine's PCI devices are there. */
static void test_live_io_after_cache (void **state)
{
    char err[DIST_ERR_MAX];
    struct load t;
    DIR *d = opendir ("/sys/bus/pci/devices");
    struct dirent *de;
    int devices = 0;

    (void) state;
    while (d != NULL && (de = readdir (d)) != NULL)
        devices += de->d_name[0] != '.';
    if (d != NULL)
        closedir (d);
    if (devices == 0)
        skip ();
    load_and_save ();
    assert_int_equal (load (&t, false, err, sizeof (err)), TOPO_CACHE);
    unload (&t);
    /* (a cache without I/O devices does not serve a load that needs them) */
    assert_int_equal (load (&t, true, err, sizeof (err)), TOPO_LIVE_IO);
    assert_non_null (hwloc_get_next_pcidev (t.t->topo, NULL));
    unload (&t);
    /* and the cache again, without them */
    assert_int_equal (load (&t, false, err, sizeof (err)), TOPO_CACHE);
    assert_null (hwloc_get_next_pcidev (t.t->topo, NULL));
    unload (&t);
}

/* A FUSE file system that never answers, mounted on dir: every look-up under it waits. */
static int hung_fd = -1;

static bool mount_hung (const char *dir)
{
    char opts[128];

    (void) mkdir (dir, 0755);
    if ((hung_fd = open ("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0)
        return false;
    snprintf (opts, sizeof (opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", hung_fd);
    if (mount ("dist-train-hung", dir, "fuse", MS_NOSUID | MS_NODEV, opts) < 0) {
        close (hung_fd);
        hung_fd = -1;
        return false;
    }
    return true;
}

/* Closing the device aborts the connection: waiters get ENOTCONN, and it unmounts. */
static void unmount_hung (const char *dir)
{
    if (hung_fd >= 0)
        close (hung_fd);
    hung_fd = -1;
    (void) umount2 (dir, MNT_DETACH);
    (void) rmdir (dir);
}

static double now_s (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A load that must end by the deadline (deadline_ms): a load that blocks is ended by
 * alarm, which fails the test.  The source and the message. */
static enum topo_source bounded_load (int deadline_ms, char *err, size_t errsz, double *took)
{
    struct load t;
    enum topo_source source;
    double t0 = now_s ();

    dist_topo_file_timeout_ms = deadline_ms;
    alarm (20);
    source = load (&t, true, err, errsz);
    alarm (0);
    *took = now_s () - t0;
    unload (&t);
    dist_topo_file_timeout_ms = 30000;
    return source;
}

/* A load of the file the case set up: refused within the deadline, with message.  A file
 * that hangs is given 0.5 s, the deadline its message names; a file refused for what it
 * is gets 10 s, so that a loaded machine's slow fork cannot pass for a hang, while a
 * reader that waited on it would still hit the deadline and fail the message check. */
static void expect_stopped (int deadline_ms, const char *message)
{
    char err[DIST_ERR_MAX];
    double took;

    assert_int_equal (bounded_load (deadline_ms, err, sizeof (err), &took), TOPO_NONE);
    print_message ("  %.2f s: %s\n", took, err);
    assert_true (took < deadline_ms / 1000.0 + 4.5);
    assert_non_null (strstr (err, message));
}

/* After each case with a file that never answers, also when it failed. */
static int unhang (void **state)
{
    (void) state;
    unmount_hung ("/run/hung");
    unlink ("/run/dist-train-test.fifo");
    return 0;
}

/* plugstack topology= on a hung mount: even the stat that checks the cached copy is the
 * child's, and the child is stopped at the deadline. */
static void test_site_file_on_a_hung_mount (void **state)
{
    (void) state;
    if (!mount_hung ("/run/hung"))
        skip ();
    snprintf (cfg.topology, sizeof (cfg.topology), "/run/hung/node.xml");
    expect_stopped (500, "topology=/run/hung/node.xml: reading it took longer than 0.5 s");
}

/* hwloc's HWLOC_XMLFILE in slurmd's environment goes through the same child. */
static void test_hwloc_xmlfile_on_a_hung_mount (void **state)
{
    (void) state;
    if (!mount_hung ("/run/hung"))
        skip ();
    setenv ("HWLOC_XMLFILE", "/run/hung/node.xml", 1);
    expect_stopped (500, "HWLOC_XMLFILE=/run/hung/node.xml: reading it took longer");
}

/* A FIFO that nobody writes: refused at once, not waited on. */
static void test_site_file_fifo (void **state)
{
    (void) state;
    assert_int_equal (mkfifo ("/run/dist-train-test.fifo", 0600), 0);
    snprintf (cfg.topology, sizeof (cfg.topology), "/run/dist-train-test.fifo");
    expect_stopped (10000, "topology=/run/dist-train-test.fifo: it is not a regular file");
}

/* HWLOC_XMLFILE read once in the child, then from the checked copy root saved. */
static void test_hwloc_xmlfile_checked_copy (void **state)
{
    const char *dir = getenv ("TOPOLOGY_DIR");
    char err[DIST_ERR_MAX], xml[PATH_MAX];
    struct load t;

    (void) state;
    snprintf (xml, sizeof (xml), "%s/minicluster-4gpu.xml", dir != NULL ? dir : "tests/topologies");
    setenv ("HWLOC_XMLFILE", xml, 1);
    if (load (&t, true, err, sizeof (err)) != TOPO_SITE_FILE)
        fail_msg ("HWLOC_XMLFILE=%s: %s", xml, err);
    assert_int_equal (t.t->ngpus, 4);
    dist_train_topology_planned (t.nt);
    dist_train_topology_save (t.nt);
    unload (&t);
    assert_int_equal (access (CACHE "/site-topology-testnode.xml", F_OK), 0);
    assert_int_equal (load (&t, true, err, sizeof (err)), TOPO_SITE_COPY);
    assert_int_equal (t.t->ngpus, 4);
    unload (&t);
    unsetenv ("HWLOC_XMLFILE");
}

/* The site's file as an admin would put it: root's, 0644, in /run/site (this test's
 * own /run). */
static void install_site_file (void)
{
    const char *dir = getenv ("TOPOLOGY_DIR");
    char src[PATH_MAX], *text;
    size_t len;
    int fd;

    snprintf (src, sizeof (src), "%s/minicluster-4gpu.xml", dir != NULL ? dir : "tests/topologies");
    text = dist_read_file (src, 16 << 20, DIST_FILE_ANYONE, &len);
    assert_non_null (text);
    (void) mkdir ("/run/site", 0755);
    assert_int_equal (chmod ("/run/site", 0755), 0);
    fd = open ("/run/site/node.xml", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true (fd >= 0);
    assert_int_equal (write (fd, text, len), (ssize_t) len);
    close (fd);
    free (text);
    snprintf (cfg.topology, sizeof (cfg.topology), "/run/site/node.xml");
}

/* A load of the site's file: TOPO_NONE with err containing message, or, with message
 * NULL, the file's own topology. */
static void expect_site (const char *message)
{
    char err[DIST_ERR_MAX] = "";
    struct load t;
    enum topo_source got = load (&t, true, err, sizeof (err));

    unload (&t);
    if (message == NULL && got != TOPO_SITE_FILE)
        fail_msg ("the site's file was refused: %s", err);
    if (message != NULL && (got != TOPO_NONE || strstr (err, message) == NULL))
        fail_msg ("want a refusal saying \"%s\", got source %d: %s", message, (int) got, err);
    /* and the node's log says it, for the admin whose file it is */
    if (message != NULL && strstr (logged, message) == NULL)
        fail_msg ("the node's log does not say \"%s\": %s", message, logged);
}

/* Whoever can write the site's file, or a directory on its path, decides every user's
 * binding on the node: only a file of root's, in directories only root can write (or
 * sticky ones), is read. */
static void test_site_file_must_be_roots (void **state)
{
    (void) state;
    install_site_file ();
    expect_site (NULL);
    assert_int_equal (chown ("/run/site/node.xml", 65534, 65534), 0);
    expect_site ("topology=/run/site/node.xml: it is owned by uid 65534 with mode 0644");
    assert_int_equal (chown ("/run/site/node.xml", 0, 0), 0);
    assert_int_equal (chmod ("/run/site/node.xml", 0664), 0);
    expect_site ("it is owned by uid 0 with mode 0664");
    assert_int_equal (chmod ("/run/site/node.xml", 0644), 0);
    assert_int_equal (chmod ("/run/site", 0777), 0);
    expect_site ("the directory /run/site on its path is owned by uid 0 with mode 0777");
    assert_int_equal (chown ("/run/site", 65534, 65534), 0);
    assert_int_equal (chmod ("/run/site", 0755), 0);
    expect_site ("the directory /run/site on its path is owned by uid 65534");
    /* a sticky directory of root's, as /var/tmp: nobody else can replace root's file */
    assert_int_equal (chown ("/run/site", 0, 0), 0);
    assert_int_equal (chmod ("/run/site", 01777), 0);
    expect_site (NULL);
    /* through a link, the real path is what is checked */
    assert_int_equal (mkdir ("/run/open", 0777), 0);
    assert_int_equal (chmod ("/run/open", 0777), 0);
    assert_int_equal (rename ("/run/site/node.xml", "/run/open/node.xml"), 0);
    assert_int_equal (symlink ("/run/open/node.xml", "/run/site/node.xml"), 0);
    expect_site ("the directory /run/open on its path");
    unlink ("/run/site/node.xml");
    unlink ("/run/open/node.xml");
    rmdir ("/run/open");
}

/* A task that another plugin moved into a container's mount namespace before it saves
 * (task_init_privileged): the user chose what /run and /proc are there.  The child
 * plans (user_init, the host's namespace), then enters a namespace of its own with a
 * "container's" /run holding an empty slurm-dist-train, and a boot id file of the
 * user's bound over the kernel's, and saves.  What it wrote must be in the host's
 * directory, keyed by the host's boot id, and nothing in the container's. */
enum { SAVE_OK, SAVE_LOAD, SAVE_NAMESPACE, SAVE_CONTAINER_TOUCHED };

static int child_saves_from_a_container (void)
{
    char err[DIST_ERR_MAX];
    struct load t;
    int fd, entries = 0;
    struct dirent *de;
    DIR *d;

    alarm (30);
    if (load (&t, false, err, sizeof (err)) != TOPO_LIVE)
        return SAVE_LOAD;
    dist_train_topology_planned (t.nt);
    /* the container: its own /run, with the directory a --container-mounts would give,
     * and /proc/sys/kernel/random/boot_id bound to a file of its own */
    if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0
        || mount ("dist-train-container", "/run", "tmpfs", 0, "mode=0755,size=1m") < 0
        || mkdir ("/run/slurm-dist-train", 0755) < 0
        || (fd = open ("/run/boot_id", O_WRONLY | O_CREAT | O_CLOEXEC, 0400)) < 0
        || write (fd, FAKE_BOOT "\n", strlen (FAKE_BOOT) + 1) != (ssize_t) strlen (FAKE_BOOT) + 1
        || close (fd) < 0
        || mount ("/run/boot_id", "/proc/sys/kernel/random/boot_id", NULL, MS_BIND, NULL) < 0)
        return SAVE_NAMESPACE;
    dist_train_topology_save (t.nt);
    dist_train_topology_task_done (t.nt);
    unload (&t);
    if ((d = opendir ("/run/slurm-dist-train")) == NULL)
        return SAVE_NAMESPACE;
    while ((de = readdir (d)) != NULL)
        entries += de->d_name[0] != '.' || strncmp (de->d_name, ".topology-", 10) == 0;
    closedir (d);
    return entries == 0 ? SAVE_OK : SAVE_CONTAINER_TOUCHED;
}

static void test_save_stays_in_the_hosts_namespace (void **state)
{
    const char *what[] = {"ok", "the live load failed", "cannot make the container's namespace",
                          "the save wrote into the container's /run/slurm-dist-train"};
    char boot[64], *text;
    size_t len;
    int status;
    pid_t pid;

    (void) state;
    assert_int_equal (read_file ("/proc/sys/kernel/random", "boot_id", boot, sizeof (boot)), 0);
    assert_string_not_equal (boot, FAKE_BOOT);
    pid = fork ();
    assert_true (pid >= 0);
    if (pid == 0)
        _exit (child_saves_from_a_container ());
    assert_int_equal (waitpid (pid, &status, 0), pid);
    if (!WIFEXITED (status) || (size_t) WEXITSTATUS (status) >= sizeof (what) / sizeof (what[0]))
        fail_msg ("the child ended with wait status 0x%x", (unsigned) status);
    if (WEXITSTATUS (status) != SAVE_OK)
        fail_msg ("%s", what[WEXITSTATUS (status)]);
    /* the host's cache, sealed with the host's boot id */
    text = dist_read_file (OURS, 16 << 20, DIST_FILE_ROOT_ONLY, &len);
    if (text == NULL)
        fail_msg ("the host's %s was not written", OURS);
    if (strstr (text, boot) == NULL || strstr (text, FAKE_BOOT) != NULL)
        fail_msg ("the cache is not keyed by the host's boot id %s", boot);
    free (text);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup (test_environment_never_written, fresh_cache),
        cmocka_unit_test_setup_teardown (test_cache_saved_in_a_cpuset_holds_every_cpu, setup_cpuset,
                                         teardown_cpuset),
        cmocka_unit_test_setup (test_cache_named_by_slurmd, fresh_cache),
        cmocka_unit_test_setup (test_cache_dir_mode_is_not_the_umask, fresh_cache),
        cmocka_unit_test_setup (test_cache_dir_others_cannot_search, fresh_cache),
        cmocka_unit_test_setup (test_stale_temporaries_removed, fresh_cache),
        cmocka_unit_test_setup (test_cache_dir_bounded, fresh_cache),
        cmocka_unit_test_setup (test_live_io_after_cache, fresh_cache),
        cmocka_unit_test_setup_teardown (test_site_file_on_a_hung_mount, fresh_cache, unhang),
        cmocka_unit_test_setup_teardown (test_hwloc_xmlfile_on_a_hung_mount, fresh_cache, unhang),
        cmocka_unit_test_setup_teardown (test_site_file_fifo, fresh_cache, unhang),
        cmocka_unit_test_setup (test_hwloc_xmlfile_checked_copy, fresh_cache),
        cmocka_unit_test_setup (test_save_stays_in_the_hosts_namespace, fresh_cache),
        cmocka_unit_test_setup (test_site_file_must_be_roots, fresh_cache),
    };
    cpu_set_t mask;

    if (geteuid () != 0) {
        printf ("SKIP: needs root (to make a cpuset cgroup, and its own /run)\n");
        return 77;
    }
    if (sched_getaffinity (0, sizeof (mask), &mask) < 0 || CPU_COUNT (&mask) < 2)
        snprintf (cg.why, sizeof (cg.why), "needs two CPUs (one for the cpuset, one outside)");
    else if (find_cpuset (cg.why, sizeof (cg.why)) == 0)
        cg.usable = true;
    if (!cg.usable)
        printf ("the cpuset case is skipped: %s\n", cg.why);
    /* the cache directory, /run/slurm-dist-train, on a tmpfs of this test's own */
    if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0
        || mount ("dist-train-test", "/run", "tmpfs", 0, "mode=0755,size=16m") < 0) {
        printf ("SKIP: cannot mount a private /run: %s\n", strerror (errno));
        return 77;
    }
    /* slurmd's name for the node, as slurmstepd's own environment carries it */
    setenv ("SLURMD_NODENAME", "testnode", 1);
    unsetenv ("HWLOC_XMLFILE");
    unsetenv (DIST_TOPO_PLUGINS_ENV);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
