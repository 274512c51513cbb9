/* topocache.c - where a node's topology comes from: the site's file, hwloc's
 * HWLOC_XMLFILE, our per-boot cache, or the live machine; and the cache.
 *
 * A live load that walks the PCI bus for GPUs and NICs takes 10 ms on a
 * small VM and far longer on a GPU server with hundreds of PCI devices, in
 * every step.  So the first step after a boot saves what it loaded as XML
 * in a root-owned directory, and every later step reads that (1-3 ms).  The
 * cache is keyed by the kernel's boot id, hwloc's version and our format,
 * kept in the XML itself; a stale or corrupt one is ignored and rewritten.
 * It is written atomically (a temporary file renamed into place) by root,
 * from the forked task of local rank 0 before it drops its privileges: the
 * step's own loading runs as the user, who cannot write there.  A step with
 * no GPUs and no NICs to place never starts hwloc's I/O discovery.
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

#define CACHE_DIR "/run/slurm-dist-train"
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
 * slurmd on one host) keep theirs apart. */
static int cache_path (char *path, size_t size)
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
    n = snprintf (path, size, "%s/topology-%s.xml", CACHE_DIR, name);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

/* The cache's text (malloc'ed, NUL-terminated; *len counts the NUL), only
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
    *len = got + 1;
    return xml;
fail:
    free (xml);
    close (fd);
    return NULL;
}

static bool load_cache (struct dist_topo *t, bool need_io)
{
    char path[256], boot[64], err[DIST_ERR_MAX];
    const char *stored;
    size_t len;
    char *xml;
    bool ok;

    if (read_boot_id (boot, sizeof (boot)) < 0 || cache_path (path, sizeof (path)) < 0
        || (xml = read_cache (path, &len)) == NULL)
        return false;
    ok = dist_topo_load_xml (t, xml, len, DIST_TOPO_IO | DIST_TOPO_THIS_SYSTEM, err, sizeof (err))
         == 0;
    free (xml);
    if (!ok)
        return false; /* corrupt: ignored, and rewritten by this step */
    stored = hwloc_obj_get_info_by_name (hwloc_get_root_obj (t->topo), DIST_TOPO_CACHE_INFO);
    if (!dist_topo_cache_usable (stored, boot, hwloc_get_api_version (), need_io)) {
        dist_topo_destroy (t);
        return false;
    }
    return true;
}

/* hwloc loads every plugin it finds at its first topology of the process,
 * and the OpenCL and GL ones pull in large libraries: 2.5 ms of a 2.9 ms
 * cached load here (0.2 ms without them).  Only PCI discovery needs one of
 * hwloc's plugins; its own XML parser reads what it writes.  slurmstepd's
 * own environment (not the tasks') carries hwloc's switch for that during
 * our load, and gets back what it had. */
#define PLUGINS_ENV "HWLOC_PLUGINS_BLACKLIST"
#define PLUGINS_BUT_PCI                                                                            \
    "hwloc_gl,hwloc_opencl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero,hwloc_xml_libxml"

static char *plugins_off (bool pci)
{
    const char *old = getenv (PLUGINS_ENV);
    char *saved = old != NULL ? strdup (old) : NULL;

    if (old == NULL)
        setenv (PLUGINS_ENV, pci ? PLUGINS_BUT_PCI : PLUGINS_BUT_PCI ",hwloc_pci", 1);
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

enum topo_source dist_train_topology_load (struct dist_topo *t, bool need_io, char *err,
                                           size_t errsz)
{
    enum topo_source source = TOPO_NONE;
    bool site = dist_train.cfg.topology[0] != '\0', site_env = getenv ("HWLOC_XMLFILE") != NULL;
    char *saved = plugins_off (false);

    if (site)
        source = dist_topo_load (t, dist_train.cfg.topology, DIST_TOPO_IO, err, errsz) == 0
                     ? TOPO_SITE_FILE
                     : TOPO_NONE;
    else if (site_env) /* (hwloc reads HWLOC_XMLFILE, from slurmd's environment, itself) */
        source =
            dist_topo_load (t, NULL, DIST_TOPO_IO, err, errsz) == 0 ? TOPO_SITE_FILE : TOPO_NONE;
    else if (load_cache (t, need_io))
        source = TOPO_CACHE;
    plugins_back (saved);
    if (source != TOPO_NONE || site || site_env)
        return source;

    /* the machine itself; PCI discovery only for GPUs or NICs to place */
    saved = plugins_off (need_io);
    if (dist_topo_load (t, NULL, DIST_TOPO_WHOLE_MACHINE | (need_io ? DIST_TOPO_IO : 0), err, errsz)
        == 0)
        source = need_io ? TOPO_LIVE_IO : TOPO_LIVE;
    plugins_back (saved);
    return source;
}

/* Write buf into path through a temporary file in the same directory. */
static int write_atomically (const char *path, const char *buf, size_t len)
{
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

void dist_train_topology_save (struct dist_topo *t, bool io)
{
    char path[256], boot[64], key[DIST_TOPO_CACHE_KEY_MAX];
    struct stat st;
    char *xml = NULL;
    int len = 0;

    if (geteuid () != 0 || read_boot_id (boot, sizeof (boot)) < 0
        || cache_path (path, sizeof (path)) < 0
        || dist_topo_cache_key (key, sizeof (key), boot, hwloc_get_api_version (), io) < 0)
        return;
    if (mkdir (CACHE_DIR, 0755) < 0 && errno != EEXIST)
        return;
    /* root's own directory, or nothing is written there */
    if (lstat (CACHE_DIR, &st) < 0 || !S_ISDIR (st.st_mode) || st.st_uid != 0
        || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return;
    if (hwloc_obj_add_info (hwloc_get_root_obj (t->topo), DIST_TOPO_CACHE_INFO, key) < 0
        || hwloc_topology_export_xmlbuffer (t->topo, &xml, &len, 0) < 0)
        return;
    /* (len counts the NUL, which the file does without) */
    if (len > 1 && write_atomically (path, xml, (size_t) len - 1) < 0)
        slurm_verbose ("%s: cannot write the topology cache %s: %m", PLUGIN_NAME, path);
    hwloc_free_xmlbuffer (t->topo, xml);
}
