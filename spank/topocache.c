/* topocache.c - where a node's topology comes from: the site's file, hwloc's
 * HWLOC_XMLFILE, our per-boot cache, or the live machine; and the cache.
 *
 * A live load that walks the PCI bus for GPUs and NICs takes 10 ms on a
 * small VM and far longer on a GPU server with hundreds of PCI devices, in
 * every step.  So the first step after a boot saves what it loaded as XML
 * in a root-owned directory, and every later step reads that (0.2 ms).  The
 * cache is keyed by the kernel's boot id, hwloc's version and our format,
 * and sealed with its length and hash: a stale or corrupt one is ignored
 * (never parsed: hwloc's XML import crashes on some corrupt files) and
 * rewritten.
 * It holds the whole machine: the step that saves it runs in its own cpuset,
 * which must not become every later step's.
 * It is written atomically (a temporary file renamed into place) by root,
 * from the forked task of local rank 0 before it drops its privileges: the
 * step's own loading runs as the user, who cannot write there.  A step with
 * no GPUs and no NICs to place never starts hwloc's I/O discovery.
 * A site's file (plugstack topology=) is read by hwloc in a child process
 * the first time (libdist/topofile.c), and what hwloc made of it is kept
 * the same way, keyed by the file's identity: a corrupt file costs a child
 * once per change, not slurmstepd at every step.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hwloc.h>

#include "dist_train.h"
#include "libdist/topo.h"

#ifndef DIST_TRAIN_CACHE_DIR
#define DIST_TRAIN_CACHE_DIR "/run/slurm-dist-train"
#endif
#define CACHE_DIR DIST_TRAIN_CACHE_DIR
#define CACHE_FILE_MAX (16 << 20) /* hundreds of PCI devices take ~1 MB */

static int read_boot_id (char *id, size_t size)
{
    ssize_t n;
    int fd = open ("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    n = read (fd, id, size - 1);
    close (fd);
    if (n <= 0)
        return -1;
    id[n] = '\0';
    id[strcspn (id, "\n")] = '\0';
    return 0;
}

/* One file per node name: nodes that share /run (test clusters of several
 * slurmd on one host) keep theirs apart.  kind: "topology" (the live
 * machine's) or "site-topology" (the checked copy of plugstack topology=). */
static int cache_path (char *path, size_t size, const char *kind)
{
    const char *name = dist_train.node_name;
    const char *c;
    int n;

    if (name[0] == '\0' || name[0] == '.')
        return -1;
    for (c = name; *c != '\0'; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
              || *c == '-' || *c == '_' || *c == '.'))
            return -1;
    n = snprintf (path, size, "%s/%s-%s.xml", CACHE_DIR, kind, name);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

/* The cache's text (malloc'ed, NUL-terminated; *len without the NUL), only
 * from a regular file of root's that nobody else may write. */
static char *read_cache (const char *path, size_t *len)
{
    struct stat st;
    char *xml = NULL;
    size_t got = 0;
    ssize_t n;
    int fd;

    fd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || st.st_uid != 0
        || (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size <= 0 || st.st_size > CACHE_FILE_MAX
        || (xml = malloc ((size_t) st.st_size + 1)) == NULL)
        goto fail;
    while (got < (size_t) st.st_size) {
        n = read (fd, xml + got, (size_t) st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        got += (size_t) n;
    }
    close (fd);
    xml[got] = '\0';
    *len = got;
    return xml;
fail:
    free (xml);
    close (fd);
    return NULL;
}

static bool load_cache (struct dist_topo *t, bool need_io)
{
    char path[256], boot[64], err[DIST_ERR_MAX], key[DIST_TOPO_CACHE_KEY_MAX];
    size_t len;
    long xmllen;
    char *text;
    bool ok;

    if (read_boot_id (boot, sizeof (boot)) < 0 || cache_path (path, sizeof (path), "topology") < 0
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

/* hwloc loads every plugin it finds at its first topology of the process,
 * and the OpenCL and GL ones pull in large libraries: 2.5 ms of a 2.9 ms
 * cached load here (0.2 ms without them).  A live load with I/O devices
 * needs the PCI plugin; a site's XML file, which may hold anything XML
 * allows, needs libxml2's; our own cache is read by hwloc's built-in parser,
 * which reads what hwloc writes.  slurmstepd's own environment (not the
 * tasks') carries hwloc's switch for that during our load, and gets back
 * what it had; a site's own setting is left alone. */
#define PLUGINS_ENV "HWLOC_PLUGINS_BLACKLIST"
#define PLUGINS_GPU "hwloc_gl,hwloc_opencl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero"
#define PLUGINS_FOR_SITE_XML PLUGINS_GPU ",hwloc_pci"
#define PLUGINS_FOR_LIVE_IO PLUGINS_GPU ",hwloc_xml_libxml"
#define PLUGINS_FOR_OURS PLUGINS_GPU ",hwloc_pci,hwloc_xml_libxml"

static char *plugins_off (const char *blacklist)
{
    const char *old = getenv (PLUGINS_ENV);
    char *saved = old != NULL ? strdup (old) : NULL;

    if (old == NULL)
        setenv (PLUGINS_ENV, blacklist, 1);
    return saved;
}

static void plugins_back (char *saved)
{
    if (saved != NULL) {
        free (saved);
        return; /* the site's own setting was left alone */
    }
    unsetenv (PLUGINS_ENV);
}

/* The checked copy of the site's file that this step made, for local rank 0's task to
 * save as root (the step's own loading runs as the user). */
static struct {
    char *xml;
    size_t len;
    char key[DIST_TOPO_CACHE_KEY_MAX];
} site_copy;

/* The key the checked copy of plugstack topology= must have now. */
static int site_key (char *key, size_t size)
{
    char boot[64];
    struct stat st;

    if (read_boot_id (boot, sizeof (boot)) < 0 || stat (dist_train.cfg.topology, &st) < 0)
        return -1;
    return dist_topo_site_key (key, size, boot, hwloc_get_api_version (),
                               (unsigned long long) st.st_dev, (unsigned long long) st.st_ino,
                               (long long) st.st_size, (long long) st.st_mtim.tv_sec,
                               st.st_mtim.tv_nsec);
}

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

/* plugstack topology=FILE: the checked copy when it is this file's, else the file read
 * by hwloc in a child process (a corrupt file crashes hwloc's XML import; it must not
 * crash slurmstepd), and hwloc's export of it parsed here. */
static enum topo_source load_site_file (struct dist_topo *t, char *err, size_t errsz)
{
    char key[DIST_TOPO_CACHE_KEY_MAX], why[DIST_ERR_MAX];
    enum topo_source source = TOPO_NONE;
    bool have_key = site_key (key, sizeof (key)) == 0;
    size_t len = 0;
    char *saved, *xml;

    saved = plugins_off (PLUGINS_FOR_OURS);
    if (have_key && load_site_copy (t, key))
        source = TOPO_SITE_COPY;
    plugins_back (saved);
    if (source != TOPO_NONE)
        return source;
    saved = plugins_off (PLUGINS_FOR_SITE_XML);
    xml = dist_topo_validate_file (dist_train.cfg.topology, DIST_TOPO_IO, &len, why, sizeof (why));
    plugins_back (saved);
    if (xml == NULL) {
        snprintf (err, errsz, "%s (check it with dist-train-plan --topology)", why);
        return TOPO_NONE;
    }
    saved = plugins_off (PLUGINS_FOR_OURS);
    if (dist_topo_load_xml (t, xml, len + 1, DIST_TOPO_IO, err, errsz) == 0)
        source = TOPO_SITE_FILE;
    plugins_back (saved);
    if (source != TOPO_NONE && have_key) {
        free (site_copy.xml);
        site_copy.xml = xml;
        site_copy.len = len;
        snprintf (site_copy.key, sizeof (site_copy.key), "%s", key);
    } else {
        free (xml);
    }
    return source;
}

enum topo_source dist_train_topology_load (struct dist_topo *t, bool need_io, char *err,
                                           size_t errsz)
{
    enum topo_source source = TOPO_NONE;
    char *saved;

    if (dist_train.cfg.topology[0] != '\0')
        return load_site_file (t, err, errsz);
    if (getenv ("HWLOC_XMLFILE") != NULL) {
        /* (hwloc reads HWLOC_XMLFILE, from slurmd's environment, itself) */
        saved = plugins_off (PLUGINS_FOR_SITE_XML);
        if (dist_topo_load (t, dist_train.cfg.topology, DIST_TOPO_IO, err, errsz) == 0)
            source = TOPO_SITE_FILE;
        plugins_back (saved);
        return source;
    }
    saved = plugins_off (PLUGINS_FOR_OURS);
    if (load_cache (t, need_io))
        source = TOPO_CACHE;
    plugins_back (saved);
    if (source != TOPO_NONE)
        return source;
    /* the machine itself; PCI discovery only for GPUs or NICs to place
     * (hwloc unloads its plugins with its last topology, and reads the
     * switch again at the next) */
    saved = plugins_off (need_io ? PLUGINS_FOR_LIVE_IO : PLUGINS_FOR_OURS);
    if (dist_topo_load (t, NULL, DIST_TOPO_WHOLE_MACHINE | (need_io ? DIST_TOPO_IO : 0), err, errsz)
        == 0)
        source = need_io ? TOPO_LIVE_IO : TOPO_LIVE;
    plugins_back (saved);
    return source;
}

/* Write buf and then seal into path through a temporary file in the same
 * directory. */
static int write_atomically (const char *path, const char *buf, size_t len, const char *seal)
{
    size_t seal_len = strlen (seal);
    char tmp[256];
    size_t off = 0;
    ssize_t n;
    int fd;

    if (snprintf (tmp, sizeof (tmp), "%s/.topology-XXXXXX", CACHE_DIR) >= (int) sizeof (tmp)
        || (fd = mkostemp (tmp, O_CLOEXEC)) < 0)
        return -1;
    if (fchmod (fd, 0644) < 0)
        goto fail;
    while (off < len) {
        n = write (fd, buf + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        off += (size_t) n;
    }
    for (off = 0; off < seal_len;) {
        n = write (fd, seal + off, seal_len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        off += (size_t) n;
    }
    if (fsync (fd) < 0 || close (fd) < 0) {
        fd = -1;
        goto fail;
    }
    if (rename (tmp, path) == 0)
        return 0;
    fd = -1;
fail:
    if (fd >= 0)
        close (fd);
    unlink (tmp);
    return -1;
}

/* As root: len bytes of xml sealed with key into the cache file of kind. */
static void save_sealed (const char *kind, const char *xml, size_t len, const char *key)
{
    char path[256], seal[DIST_TOPO_CACHE_KEY_MAX + 128];
    struct stat st;

    if (geteuid () != 0 || cache_path (path, sizeof (path), kind) < 0)
        return;
    if (mkdir (CACHE_DIR, 0755) < 0 && errno != EEXIST)
        return;
    /* root's own directory, or nothing is written there */
    if (lstat (CACHE_DIR, &st) < 0 || !S_ISDIR (st.st_mode) || st.st_uid != 0
        || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return;
    if (len > 0 && dist_topo_cache_seal (xml, len, key, seal, sizeof (seal)) == 0
        && write_atomically (path, xml, len, seal) < 0)
        slurm_verbose ("%s: cannot write the topology cache %s: %m", PLUGIN_NAME, path);
}

void dist_train_topology_save (struct dist_topo *t, bool io)
{
    char boot[64], key[DIST_TOPO_CACHE_KEY_MAX];
    char *xml = NULL;
    int len = 0;

    if (geteuid () != 0 || read_boot_id (boot, sizeof (boot)) < 0
        || dist_topo_cache_key (key, sizeof (key), boot, hwloc_get_api_version (), io) < 0)
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
        save_sealed ("topology", xml, (size_t) len - 1, key);
    hwloc_free_xmlbuffer (t->topo, xml);
}

void dist_train_topology_save_site (void)
{
    if (site_copy.xml == NULL)
        return;
    save_sealed ("site-topology", site_copy.xml, site_copy.len, site_copy.key);
    free (site_copy.xml);
    site_copy.xml = NULL;
}
