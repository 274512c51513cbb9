/* topocache.c - where a node's topology comes from: the site's file, hwloc's
 * HWLOC_XMLFILE, our per-boot cache, or the live machine; and the cache.
 *
 * A live load walks the PCI bus for GPUs and NICs, which on a GPU server
 * with hundreds of PCI devices costs every step far more than reading XML
 * (doc/decisions.md; scripts/bench-bind measures both).  So the first step
 * after a boot saves what it loaded as XML in a root-owned directory, and
 * every later step reads that.  The cache is keyed by the kernel's boot id,
 * hwloc's version and our format, and sealed with its length and hash: a
 * stale or corrupt one is ignored (never parsed: hwloc's XML import crashes
 * on some corrupt files) and rewritten.
 * It holds the whole machine: the step that saves it runs in its own cpuset,
 * which must not become every later step's.
 * It is written atomically (a temporary file renamed into place) by root,
 * from the forked task of local rank 0 before it drops its privileges: the
 * step's own loading runs as the user, who cannot write there.  By then
 * another plugin may have moved the task into a container's mount namespace,
 * where the user chose what /run and /proc are: so the directory above the
 * cache is opened, and the boot id read, in user_init (slurmstepd, the
 * host's namespace), and the task names nothing by path, only relative to
 * that descriptor.  A step with
 * no GPUs and no NICs to place never starts hwloc's I/O discovery.
 * A site's file (plugstack topology=) is read by hwloc in a child process
 * the first time (libdist/topofile.c), and what hwloc made of it is kept
 * the same way, keyed by the file's identity: a corrupt file costs a child
 * once per change, not slurmstepd at every step.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

#include "dist_train.h"
#include "libdist/io.h"
#include "libdist/topo.h"

#ifndef DIST_TRAIN_CACHE_DIR
#define DIST_TRAIN_CACHE_DIR "/run/slurm-dist-train"
#endif
#define CACHE_DIR DIST_TRAIN_CACHE_DIR
#define CACHE_PARENT_MAX 256
#define CACHE_FILE_MAX (16 << 20) /* hundreds of PCI devices take ~1 MB */
/* Two files for each slurmd of the host: a host with many (a test cluster) stays well
 * below; more than this is not ours to add to. */
#define CACHE_ENTRIES_MAX 512
#define CACHE_BYTES_MAX (256 << 20)
#define STALE_TEMP_S 60 /* a write takes milliseconds: an older temporary lost its writer */

/* The kernel's boot id: the cache is valid until the next boot. */
static int read_boot_id (char *id, size_t size)
{
    size_t len;
    char *text = dist_read_file ("/proc/sys/kernel/random/boot_id", 64, DIST_FILE_ANYONE, &len);

    if (text == NULL || len == 0) {
        free (text);
        return -1;
    }
    text[strcspn (text, "\n")] = '\0';
    snprintf (id, size, "%s", text);
    free (text);
    return 0;
}

/* One file per slurmd: nodes that share /run (several slurmd on one host) keep theirs
 * apart.  The name is slurmd's (SLURMD_NODENAME in slurmstepd's own environment, set by
 * slurmstepd from slurmd's configuration before any plugin runs), so only slurmd's names
 * for its nodes are ever written.  kind: "topology" (the live machine's) or
 * "site-topology" (the checked copy of plugstack topology= or HWLOC_XMLFILE). */
static int cache_name (char *name, size_t size, const char *kind)
{
    const char *node = getenv ("SLURMD_NODENAME");
    const char *c;
    int n;

    if (node == NULL || node[0] == '\0' || node[0] == '.' || strlen (node) > 64)
        return -1;
    for (c = node; *c != '\0'; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
              || *c == '-' || *c == '_' || *c == '.'))
            return -1;
    n = snprintf (name, size, "%s-%s.xml", kind, node);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

static int cache_path (char *path, size_t size, const char *kind)
{
    char name[128];
    int n;

    if (cache_name (name, sizeof (name), kind) < 0)
        return -1;
    n = snprintf (path, size, "%s/%s", CACHE_DIR, name);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

/* CACHE_DIR as the directory above it and its own name ("/run", "slurm-dist-train"). */
static int cache_dir_split (char parent[CACHE_PARENT_MAX], const char **base)
{
    const char *dir = CACHE_DIR, *slash = strrchr (dir, '/');
    size_t at;

    if (slash == NULL || slash[1] == '\0' || (at = (size_t) (slash - dir)) >= CACHE_PARENT_MAX)
        return -1;
    /* ("/cache": the root is the parent) */
    snprintf (parent, CACHE_PARENT_MAX, "%.*s", at > 0 ? (int) at : 1, dir);
    *base = slash + 1;
    return 0;
}

/* The cache's text (malloc'ed, NUL-terminated; *len without the NUL), only
 * from a regular file of root's that nobody else may write. */
static char *read_cache (const char *path, size_t *len)
{
    char *xml = dist_read_file (path, CACHE_FILE_MAX, DIST_FILE_ROOT_ONLY, len);

    if (xml != NULL && *len == 0) {
        free (xml);
        return NULL;
    }
    return xml;
}

static bool load_cache (struct dist_topo *t, const char *boot, bool need_io)
{
    char path[256], err[DIST_ERR_MAX], key[DIST_TOPO_CACHE_KEY_MAX];
    size_t len;
    long xmllen;
    char *text;
    bool ok;

    if (boot[0] == '\0' || cache_path (path, sizeof (path), "topology") < 0
        || (text = read_cache (path, &len)) == NULL)
        return false;
    /* stale, foreign or corrupt: never handed to hwloc's parser */
    xmllen = dist_topo_cache_unseal (text, len, key, sizeof (key));
    if (xmllen <= 0 || !dist_topo_cache_usable (key, boot, hwloc_get_api_version (), need_io)) {
        free (text);
        return false;
    }
    text[xmllen] = '\0';
    /* every CPU the cache holds, whatever cpuset this step (or the one that
     * saved it) runs in: binding narrows to the step's CPUs itself */
    ok = dist_topo_load_xml (t, text, (size_t) xmllen + 1,
                             DIST_TOPO_IO | DIST_TOPO_THIS_SYSTEM | DIST_TOPO_WHOLE_MACHINE, err,
                             sizeof (err))
         == 0;
    free (text);
    return ok;
}

/* hwloc loads its plugins at the first topology of a process and unloads them with the
 * last, reading DIST_TOPO_PLUGINS_ENV only then (libdist/topo.h).  slurmstepd parses only
 * what hwloc wrote (our cache, the child's export), which wants none of them (the OpenCL
 * and GL ones pull in large libraries), or the live machine, whose I/O devices want the
 * PCI plugin (once per boot: later steps read the cache).  Its threads already run when
 * a plugin does, and setenv/unsetenv there can free or rewrite the array another
 * thread's getenv is walking: so slurmstepd's environment is never changed.  Instead a
 * copy of the array with the switch added is put in its place with one pointer store,
 * hwloc's plugins are loaded by a topology that is kept (they stay loaded, and the switch
 * is not read again), and the array is put back.  A site's own setting is left alone. */
enum plugins { PLUGINS_NONE, PLUGINS_EXPORTS, PLUGINS_LIVE_IO };

static const char *const plugins_switch[] = {
    [PLUGINS_EXPORTS] = DIST_TOPO_PLUGINS_ENV "=" DIST_TOPO_PLUGINS_FOR_EXPORTS,
    [PLUGINS_LIVE_IO] = DIST_TOPO_PLUGINS_ENV "=" DIST_TOPO_PLUGINS_FOR_LIVE_IO,
};
static hwloc_topology_t plugins_holder;
static enum plugins plugins_loaded;

/* Let go of hwloc's plugins (they are unloaded with the last topology): before loading
 * others, and in the child that reads a site's file (libdist/topofile.c), which loads its
 * own, libxml2's among them. */
static void plugins_release (void)
{
    if (plugins_holder != NULL)
        hwloc_topology_destroy (plugins_holder);
    plugins_holder = NULL;
    plugins_loaded = PLUGINS_NONE;
}

/* slurmstepd's environment with the switch for these plugins added.  Every copy is kept
 * (a thread may still be reading one); a process makes one for each change of plugins,
 * slurmstepd one or two. */
static char **environ_for (enum plugins which, char **orig)
{
    static char ***copies;
    static size_t ncopies;
    char ***more, **copy;
    size_t n = 0;

    while (orig[n] != NULL)
        n++;
    if ((copy = calloc (n + 2, sizeof (*copy))) == NULL)
        return NULL;
    if ((more = realloc (copies, (ncopies + 1) * sizeof (*copies))) == NULL) {
        free (copy);
        return NULL;
    }
    copies = more;
    copies[ncopies++] = copy;
    memcpy (copy, orig, n * sizeof (*copy));
    copy[n] = (char *) plugins_switch[which];
    return copy;
}

/* hwloc's plugins for the loads that follow, none of ours alive. */
static void plugins_load (enum plugins which)
{
    char **orig = environ, **copy;

    /* (the PCI plugin, once loaded, stays: unloading it costs more than keeping it) */
    if (plugins_loaded == which || (plugins_loaded == PLUGINS_LIVE_IO && which == PLUGINS_EXPORTS))
        return;
    plugins_release ();
    dist_topo_file_child_prepare = plugins_release;
    plugins_loaded = which;
    if (getenv (DIST_TOPO_PLUGINS_ENV) != NULL || orig == NULL
        || (copy = environ_for (which, orig)) == NULL) {
        (void) hwloc_topology_init (&plugins_holder);
        return;
    }
    __atomic_store_n (&environ, copy, __ATOMIC_SEQ_CST);
    (void) hwloc_topology_init (&plugins_holder);
    /* (unless another thread replaced the array meanwhile: then it is theirs) */
    (void) __atomic_compare_exchange_n (&environ, &copy, orig, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
}

static const char *const source_said[] = {
    [TOPO_NONE] = "not loaded",
    [TOPO_SITE_FILE] = "from the site's file",
    [TOPO_SITE_COPY] = "from this node's checked copy of the site's file",
    [TOPO_CACHE] = "from this node's cache",
    [TOPO_LIVE] = "live, without I/O devices",
    [TOPO_LIVE_IO] = "live, with I/O devices",
};

/* A slurmstepd node's topology: loaded as the user in user_init, kept so that local rank
 * 0's task can save it as root (task_init_privileged) for later steps. */
struct node_topology {
    const char *site_file; /* plugstack topology=, "" none */
    enum topo_source source;
    struct dist_topo topo; /* loaded when source is not TOPO_NONE */
    bool loaded;
    char boot[64]; /* the kernel's boot id, read once in user_init; "" unknown */
    int parent_fd; /* the directory above CACHE_DIR, opened in user_init for the save; -1 */
    char live_key[DIST_TOPO_CACHE_KEY_MAX]; /* a live load's cache key, "" none */
    struct { /* the checked copy of the site's file this step made */
        char *xml;
        size_t len;
        char key[DIST_TOPO_CACHE_KEY_MAX];
    } site_copy;
};

static bool load_site_copy (struct dist_topo *t, const char *want)
{
    char path[256], err[DIST_ERR_MAX], key[DIST_TOPO_CACHE_KEY_MAX];
    size_t len;
    long xmllen;
    char *text;
    bool ok;

    if (cache_path (path, sizeof (path), "site-topology") < 0
        || (text = read_cache (path, &len)) == NULL)
        return false;
    xmllen = dist_topo_cache_unseal (text, len, key, sizeof (key));
    if (xmllen <= 0 || strcmp (key, want) != 0) {
        free (text);
        return false;
    }
    text[xmllen] = '\0';
    ok = dist_topo_load_xml (t, text, (size_t) xmllen + 1, DIST_TOPO_IO, err, sizeof (err)) == 0;
    free (text);
    return ok;
}

/* What the reading child's stat of the site's file decides: the checked copy, when it is
 * this very file's, loaded into t (and the child stops); else the key a new copy gets. */
struct site_read {
    struct dist_topo *t;
    const char *boot;
    bool have_key;
    char key[DIST_TOPO_CACHE_KEY_MAX];
};

static bool site_export_wanted (const struct dist_topo_file_id *id, void *arg)
{
    struct site_read *r = arg;

    r->have_key = r->boot[0] != '\0'
                  && dist_topo_site_key (r->key, sizeof (r->key), r->boot, hwloc_get_api_version (),
                                         id->dev, id->ino, id->size, id->mtime_s, id->mtime_ns)
                         == 0;
    return !(r->have_key && load_site_copy (r->t, r->key));
}

/* A site's file: the checked copy when it is this file's, else hwloc's export of the file
 * from a child (libdist/topofile.c: a corrupt file crashes hwloc's XML import, a hung
 * mount never answers; neither must hold slurmstepd), parsed here and kept for the
 * copy. */
static enum topo_source load_site_file (struct node_topology *nt, const char *label,
                                        const char *file, char *err, size_t errsz)
{
    struct site_read r = {.t = &nt->topo, .boot = nt->boot};
    char why[DIST_ERR_MAX];
    size_t len = 0;
    char *xml = NULL;
    int got;

    got = dist_topo_read_file (label, file, DIST_TOPO_IO | DIST_TOPO_ROOT_FILE, site_export_wanted,
                               &r, &xml, &len, why, sizeof (why));
    if (got == 0)
        return TOPO_SITE_COPY;
    if (got < 0) {
        snprintf (err, errsz, "%s (check it with dist-train-plan --topology)", why);
        /* (a file name may hold any byte but '/' and NUL: a newline in it would forge a
         * line of slurmd's log) */
        dist_printable (err);
        /* (the site's file is the admin's: the node's log names what is wrong with it, not
         * only the step's warning to its user) */
        slurm_info ("%s: %s", PLUGIN_NAME, err);
        return TOPO_NONE;
    }
    if (dist_topo_load_xml (&nt->topo, xml, len + 1, DIST_TOPO_IO, err, errsz) < 0) {
        free (xml);
        return TOPO_NONE;
    }
    if (r.have_key) {
        free (nt->site_copy.xml);
        nt->site_copy.xml = xml;
        nt->site_copy.len = len;
        snprintf (nt->site_copy.key, sizeof (nt->site_copy.key), "%s", r.key);
    } else {
        free (xml);
    }
    return TOPO_SITE_FILE;
}

/* The sources, in the order they are asked.  Each loads nt->topo and says from where, or
 * returns TOPO_NONE: with err empty when it is not this node's source, else why it
 * failed (and no later source is asked: a site's file that is wrong is not silently
 * replaced by the machine). */
static enum topo_source from_plugstack (struct node_topology *nt, bool need_io, char *err,
                                        size_t errsz)
{
    if (nt->site_file[0] == '\0')
        return TOPO_NONE;
    return load_site_file (nt, "topology", nt->site_file, err, errsz);
}

/* hwloc's own HWLOC_XMLFILE, from slurmd's environment */
static enum topo_source from_hwloc_xmlfile (struct node_topology *nt, bool need_io, char *err,
                                            size_t errsz)
{
    const char *xmlfile = getenv ("HWLOC_XMLFILE");

    if (xmlfile == NULL || xmlfile[0] == '\0')
        return TOPO_NONE;
    return load_site_file (nt, "HWLOC_XMLFILE", xmlfile, err, errsz);
}

static enum topo_source from_cache (struct node_topology *nt, bool need_io, char *err, size_t errsz)
{
    return load_cache (&nt->topo, nt->boot, need_io) ? TOPO_CACHE : TOPO_NONE;
}

/* the machine itself; PCI discovery only for GPUs or NICs to place */
static enum topo_source from_machine (struct node_topology *nt, bool need_io, char *err,
                                      size_t errsz)
{
    if (need_io)
        plugins_load (PLUGINS_LIVE_IO);
    if (dist_topo_load (&nt->topo, NULL, DIST_TOPO_WHOLE_MACHINE | (need_io ? DIST_TOPO_IO : 0),
                        err, errsz)
        < 0)
        return TOPO_NONE;
    return need_io ? TOPO_LIVE_IO : TOPO_LIVE;
}

static enum topo_source (*const sources[]) (struct node_topology *, bool, char *, size_t) = {
    from_plugstack,
    from_hwloc_xmlfile,
    from_cache,
    from_machine,
};

struct node_topology *dist_train_topology_new (const struct dist_config *cfg)
{
    struct node_topology *nt = calloc (1, sizeof (*nt));

    if (nt != NULL) {
        nt->site_file = cfg->topology;
        nt->parent_fd = -1;
    }
    return nt;
}

const struct dist_topo *dist_train_topology_load (struct node_topology *nt, bool need_io, char *err,
                                                  size_t errsz)
{
    size_t i;

    if (nt->loaded)
        return &nt->topo;
    err[0] = '\0';
    /* (every source's key and the save's have it: read once, here in slurmstepd) */
    if (read_boot_id (nt->boot, sizeof (nt->boot)) < 0)
        nt->boot[0] = '\0';
    /* hwloc parses what hwloc wrote (our cache, the child's export) with no plugins */
    plugins_load (PLUGINS_EXPORTS);
    for (i = 0; i < sizeof (sources) / sizeof (sources[0]) && err[0] == '\0'; i++) {
        nt->source = sources[i](nt, need_io, err, errsz);
        if (nt->source != TOPO_NONE) {
            nt->loaded = true;
            return &nt->topo;
        }
    }
    if (err[0] == '\0')
        snprintf (err, errsz, "no topology");
    return NULL;
}

enum topo_source dist_train_topology_source (const struct node_topology *nt)
{
    return nt->source;
}

const char *dist_train_topology_said (const struct node_topology *nt)
{
    return source_said[nt->source];
}

static bool is_live (const struct node_topology *nt)
{
    return nt->loaded && (nt->source == TOPO_LIVE || nt->source == TOPO_LIVE_IO);
}

void dist_train_topology_planned (struct node_topology *nt)
{
    char parent[CACHE_PARENT_MAX];
    const char *base;

    /* a live load is kept for local rank 0's task to save, as root */
    if (nt->loaded && !is_live (nt)) {
        dist_topo_destroy (&nt->topo);
        nt->loaded = false;
    }
    if (nt->site_copy.xml == NULL && !is_live (nt))
        return;
    /* what the save needs from the host, taken here, in slurmstepd: the task that saves
     * may be in a container's mount namespace by then (see the top of this file).  (O_PATH:
     * this runs as the user, who may not read the directory; the task, as root, opens what
     * is below it.) */
    if (is_live (nt)
        && (nt->boot[0] == '\0'
            || dist_topo_cache_key (nt->live_key, sizeof (nt->live_key), nt->boot,
                                    hwloc_get_api_version (), nt->source == TOPO_LIVE_IO)
                   < 0))
        nt->live_key[0] = '\0';
    if (cache_dir_split (parent, &base) == 0)
        nt->parent_fd = open (parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

void dist_train_topology_task_done (struct node_topology *nt)
{
    /* (every task has it from slurmstepd: none keeps a way into the host's /run) */
    if (nt != NULL && nt->parent_fd >= 0) {
        close (nt->parent_fd);
        nt->parent_fd = -1;
    }
}

void dist_train_topology_free (struct node_topology *nt)
{
    if (nt == NULL)
        return;
    if (nt->loaded)
        dist_topo_destroy (&nt->topo);
    dist_train_topology_task_done (nt);
    free (nt->site_copy.xml);
    free (nt);
}

/* Write buf and then seal into the directory dfd as name, through a temporary file
 * there. */
static int write_atomically (int dfd, const char *name, const char *buf, size_t len,
                             const char *seal)
{
    unsigned char rnd[6];
    char tmp[32];
    int fd = -1, tries;

    for (tries = 0; tries < 8 && fd < 0; tries++) {
        if (getrandom (rnd, sizeof (rnd), 0) != (ssize_t) sizeof (rnd))
            return -1;
        snprintf (tmp, sizeof (tmp), ".topology-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
                  rnd[3], rnd[4], rnd[5]);
        fd = openat (dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            return -1;
    }
    if (fd < 0)
        return -1;
    if (fchmod (fd, 0644) < 0 || dist_write_all (fd, buf, len) < 0
        || dist_write_all (fd, seal, strlen (seal)) < 0)
        goto fail;
    if (fsync (fd) < 0 || close (fd) < 0) {
        fd = -1;
        goto fail;
    }
    if (renameat (dfd, tmp, dfd, name) == 0)
        return 0;
    fd = -1;
fail:
    if (fd >= 0)
        close (fd);
    unlinkat (dfd, tmp, 0);
    return -1;
}

/* The cache directory, root's and searchable by everyone (every user's steps read it),
 * as an open descriptor; -1 when nothing may be written there.  Made below parent_fd
 * (the directory above it, opened in user_init) by local rank 0's task, with the job
 * user's umask: its mode is set, not left to that. */
static int cache_dir (int parent_fd)
{
    char parent[CACHE_PARENT_MAX];
    const char *base;
    struct stat st;
    bool made;
    int fd;

    if (parent_fd < 0 || cache_dir_split (parent, &base) < 0)
        return -1;
    made = mkdirat (parent_fd, base, 0755) == 0;
    if (!made && errno != EEXIST)
        return -1;
    if ((fd = openat (parent_fd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return -1;
    if (made)
        (void) fchmod (fd, 0755);
    if (fstat (fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        close (fd);
        return -1;
    }
    if (!(st.st_mode & S_IXOTH)) {
        slurm_info ("%s: %s has mode %04o, which other users cannot search: their steps would "
                    "never read the topology cache, so nothing is written there; chmod 755 it "
                    "(the package's tmpfiles.d makes it so at boot)",
                    PLUGIN_NAME, CACHE_DIR, (unsigned) (st.st_mode & 07777));
        close (fd);
        return -1;
    }
    return fd;
}

/* Remove the temporaries of writers that died between creating and renaming them, and
 * say whether the directory may take name's file of len bytes (it replaces a file of that
 * name): at most CACHE_ENTRIES_MAX files and CACHE_BYTES_MAX bytes in all. */
static bool cache_has_room (int dfd, const char *name, size_t len)
{
    unsigned long long bytes = len;
    time_t now = time (NULL);
    size_t entries = 1;
    struct dirent *de;
    struct stat st;
    int fd;
    DIR *d;

    if (len > CACHE_FILE_MAX || (fd = dup (dfd)) < 0)
        return false;
    if ((d = fdopendir (fd)) == NULL) {
        close (fd);
        return false;
    }
    while ((de = readdir (d)) != NULL) {
        if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0
            || strcmp (de->d_name, name) == 0
            || fstatat (dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (strncmp (de->d_name, ".topology-", 10) == 0 && S_ISREG (st.st_mode) && st.st_uid == 0
            && now - st.st_mtime > STALE_TEMP_S && unlinkat (dfd, de->d_name, 0) == 0)
            continue;
        entries++;
        if (S_ISREG (st.st_mode))
            bytes += (unsigned long long) st.st_size;
    }
    closedir (d);
    if (entries <= CACHE_ENTRIES_MAX && bytes <= CACHE_BYTES_MAX)
        return true;
    slurm_info ("%s: %s holds %zu files of %llu MiB with %s, more than the %d files of %d MiB "
                "it may: not written (its files are remade after a reboot; remove what "
                "nodes of this host no longer need)",
                PLUGIN_NAME, CACHE_DIR, entries, bytes >> 20, name, CACHE_ENTRIES_MAX,
                CACHE_BYTES_MAX >> 20);
    return false;
}

/* As root: len bytes of xml sealed with key into the cache file of kind. */
static void save_sealed (int parent_fd, const char *kind, const char *xml, size_t len,
                         const char *key)
{
    char name[128], seal[DIST_TOPO_CACHE_KEY_MAX + 128];
    int dfd;

    if (geteuid () != 0 || len == 0 || key[0] == '\0' || cache_name (name, sizeof (name), kind) < 0
        || (dfd = cache_dir (parent_fd)) < 0)
        return;
    if (cache_has_room (dfd, name, len)
        && dist_topo_cache_seal (xml, len, key, seal, sizeof (seal)) == 0
        && write_atomically (dfd, name, xml, len, seal) < 0)
        slurm_verbose ("%s: cannot write the topology cache %s/%s: %m", PLUGIN_NAME, CACHE_DIR,
                       name);
    close (dfd);
}

/* As root: the live load, for later steps. */
static void save_live (int parent_fd, struct dist_topo *t, const char *key)
{
    char *xml = NULL;
    int len = 0;

    if (key[0] == '\0')
        return;
    /* The live load ran in the saving step's cpuset, and hwloc exports that
     * as the machine's allowed CPUs: a later load would keep only those, and
     * every later step on the node would be planned on the first one's CPUs.
     * The cache is the whole machine, or nothing is saved. */
    if (hwloc_topology_allow (t->topo, NULL, NULL, HWLOC_ALLOW_FLAG_ALL) < 0) {
        slurm_verbose ("%s: topology not cached: hwloc cannot mark every CPU allowed: %m",
                       PLUGIN_NAME);
        return;
    }
    if (hwloc_topology_export_xmlbuffer (t->topo, &xml, &len, 0) < 0)
        return;
    /* (len counts the NUL, which the file does without) */
    if (len > 1)
        save_sealed (parent_fd, "topology", xml, (size_t) len - 1, key);
    hwloc_free_xmlbuffer (t->topo, xml);
}

void dist_train_topology_save (struct node_topology *nt)
{
    if (nt == NULL || geteuid () != 0 || nt->parent_fd < 0)
        return;
    if (nt->site_copy.xml != NULL) {
        save_sealed (nt->parent_fd, "site-topology", nt->site_copy.xml, nt->site_copy.len,
                     nt->site_copy.key);
        free (nt->site_copy.xml);
        nt->site_copy.xml = NULL;
    }
    if (is_live (nt))
        save_live (nt->parent_fd, &nt->topo, nt->live_key);
}
