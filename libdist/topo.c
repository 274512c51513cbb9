/* topo.c - load a node's topology and find its GPUs and RDMA NICs. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ranges.h"
#include "topo.h"

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_CLASS_VGA 0x0300
#define PCI_CLASS_3D 0x0302

static bool is_gpu (hwloc_obj_t pci)
{
    unsigned cls = pci->attr->pcidev.class_id;

    /* NVSwitches (0x0680) and BMC graphics (other vendors) are not GPUs. */
    return pci->attr->pcidev.vendor_id == PCI_VENDOR_NVIDIA
           && (cls == PCI_CLASS_VGA || cls == PCI_CLASS_3D);
}

/* A device's sysfs attribute ("0x10de", "0x030200"), as a number; -1 when it is
 * missing or not a number. */
static long pci_attribute (int dir_fd, const char *device, const char *name)
{
    char path[NAME_MAX + 16], text[32], *end;
    ssize_t got;
    long value;
    int fd;

    if ((size_t) snprintf (path, sizeof (path), "%s/%s", device, name) >= sizeof (path))
        return -1;
    if ((fd = openat (dir_fd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return -1;
    /* (sysfs hands over an attribute whole, in one read) */
    got = read (fd, text, sizeof (text) - 1);
    close (fd);
    if (got <= 0)
        return -1;
    text[got] = '\0';
    value = strtol (text, &end, 16);
    return end != text && (*end == '\n' || *end == '\0') && value >= 0 ? value : -1;
}

bool dist_pci_has_gpu (const char *devices)
{
    DIR *dir = opendir (devices);
    struct dirent *d;
    bool found = false;
    long cls;

    if (dir == NULL)
        return false;
    while (!found && (d = readdir (dir)) != NULL) {
        if (d->d_name[0] == '.'
            || pci_attribute (dirfd (dir), d->d_name, "vendor") != PCI_VENDOR_NVIDIA)
            continue;
        /* sysfs gives class, subclass and interface: hwloc's class_id is the first two */
        cls = pci_attribute (dirfd (dir), d->d_name, "class");
        found = cls >= 0 && ((cls >> 8) == PCI_CLASS_VGA || (cls >> 8) == PCI_CLASS_3D);
    }
    closedir (dir);
    return found;
}

static void format_busid (hwloc_obj_t pci, char *buf, size_t size)
{
    snprintf (buf, size, "%04x:%02x:%02x.%01x", (unsigned) pci->attr->pcidev.domain,
              (unsigned) pci->attr->pcidev.bus, (unsigned) pci->attr->pcidev.dev,
              (unsigned) pci->attr->pcidev.func);
}

static hwloc_obj_t numa_locality (hwloc_topology_t topo, hwloc_obj_t obj)
{
    obj = hwloc_get_non_io_ancestor_obj (topo, obj);
    while (obj->parent != NULL && obj->memory_arity == 0)
        obj = obj->parent;
    return obj;
}

static hwloc_obj_t package_of (hwloc_topology_t topo, hwloc_obj_t obj)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj (topo, obj);
    hwloc_obj_t pkg = anc->type == HWLOC_OBJ_PACKAGE
                          ? anc
                          : hwloc_get_ancestor_obj_by_type (topo, HWLOC_OBJ_PACKAGE, anc);
    return pkg != NULL ? pkg : hwloc_get_root_obj (topo);
}

static int compare_gpus (const void *a, const void *b)
{
    const struct dist_gpu *x = a, *y = b;
    return strcmp (x->busid, y->busid);
}

static void find_devices (struct dist_topo *t)
{
    hwloc_obj_t obj = NULL;

    while ((obj = hwloc_get_next_pcidev (t->topo, obj)) != NULL) {
        if (!is_gpu (obj) || t->ngpus == DIST_GPUS_MAX)
            continue;
        struct dist_gpu *g = &t->gpu[t->ngpus++];
        format_busid (obj, g->busid, sizeof (g->busid));
        g->pci = obj;
        g->numa = numa_locality (t->topo, obj);
        g->package = package_of (t->topo, obj);
    }
    qsort (t->gpu, (size_t) t->ngpus, sizeof (t->gpu[0]), compare_gpus);

    obj = NULL;
    while ((obj = hwloc_get_next_osdev (t->topo, obj)) != NULL) {
        if (obj->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || obj->name == NULL
            || obj->parent == NULL || obj->parent->type != HWLOC_OBJ_PCI_DEVICE
            || t->nnics == DIST_NICS_MAX)
            continue;
        struct dist_nic *n = &t->nic[t->nnics++];
        snprintf (n->name, sizeof (n->name), "%s", obj->name);
        n->pci = obj->parent;
    }
}

/* One loader for a file, a buffer (xml != NULL) or hwloc's own sources. */
static int load (struct dist_topo *t, const char *xmlfile, const char *xml, size_t xmllen,
                 unsigned flags, char *err, size_t errsz)
{
    /* Components that would start a GPU runtime inside slurmstepd. */
    static const char *const excluded[] = {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"};
    size_t i;

    memset (t, 0, sizeof (*t));
    if (hwloc_topology_init (&t->topo) < 0) {
        snprintf (err, errsz, "hwloc: cannot initialize a topology");
        return -1;
    }
    for (i = 0; i < sizeof (excluded) / sizeof (excluded[0]); i++)
        (void) hwloc_topology_set_components (t->topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                              excluded[i]);
    hwloc_topology_set_io_types_filter (t->topo, (flags & DIST_TOPO_IO)
                                                     ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT
                                                     : HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_flags (
        t->topo,
        ((flags & DIST_TOPO_THIS_SYSTEM) ? HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM : 0)
            | ((flags & DIST_TOPO_WHOLE_MACHINE) ? HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED : 0));
    if (xml != NULL && hwloc_topology_set_xmlbuffer (t->topo, xml, (int) xmllen) < 0) {
        snprintf (err, errsz, "hwloc cannot read the topology as XML");
        goto fail;
    }
    if (xml == NULL && xmlfile != NULL && xmlfile[0] != '\0'
        && hwloc_topology_set_xml (t->topo, xmlfile) < 0) {
        snprintf (err, errsz, "topology=%.200s: hwloc cannot read it as XML", xmlfile);
        goto fail;
    }
    if (hwloc_topology_load (t->topo) < 0) {
        snprintf (err, errsz, "hwloc cannot load the topology%s%.200s",
                  xmlfile != NULL ? " from " : "", xmlfile != NULL ? xmlfile : "");
        goto fail;
    }
    t->this_system = hwloc_topology_is_thissystem (t->topo);
    find_devices (t);
    return 0;
fail:
    hwloc_topology_destroy (t->topo);
    t->topo = NULL;
    return -1;
}

int dist_topo_load (struct dist_topo *t, const char *xmlfile, unsigned flags, char *err,
                    size_t errsz)
{
    return load (t, xmlfile, NULL, 0, flags, err, errsz);
}

int dist_topo_load_xml (struct dist_topo *t, const char *xml, size_t len, unsigned flags, char *err,
                        size_t errsz)
{
    if (len == 0 || len > INT_MAX || xml[len - 1] != '\0') {
        snprintf (err, errsz, "hwloc cannot read the topology as XML");
        memset (t, 0, sizeof (*t));
        return -1;
    }
    return load (t, NULL, xml, len, flags, err, errsz);
}

void dist_topo_destroy (struct dist_topo *t)
{
    if (t->topo != NULL)
        hwloc_topology_destroy (t->topo);
    memset (t, 0, sizeof (*t));
}

#define CORE_ID_MAX 65535

static int add_cores (long lo, long hi, void *arg)
{
    hwloc_bitmap_set_range (arg, (unsigned) lo, (int) hi);
    return 0;
}

int dist_topo_core_count (const struct dist_topo *t)
{
    int ncores = hwloc_get_nbobjs_by_type (t->topo, HWLOC_OBJ_CORE);

    return ncores > 0 ? ncores : hwloc_get_nbobjs_by_type (t->topo, HWLOC_OBJ_PU);
}

int dist_topo_cores_cpuset (const struct dist_topo *t, const char *cores, hwloc_bitmap_t out,
                            hwloc_bitmap_t missing, char *err, size_t errsz)
{
    hwloc_bitmap_t ids = hwloc_bitmap_alloc ();
    int ncores = hwloc_get_nbobjs_by_type (t->topo, HWLOC_OBJ_CORE);
    hwloc_obj_type_t unit = ncores > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int id, nmissing = 0;

    hwloc_bitmap_zero (out);
    if (missing != NULL)
        hwloc_bitmap_zero (missing);
    if (ids == NULL) {
        snprintf (err, errsz, "out of memory reading Slurm's core list");
        return -1;
    }
    if (dist_ranges_parse (cores, CORE_ID_MAX, add_cores, ids) < 0) {
        snprintf (err, errsz, "Slurm's core list '%.64s' does not parse", cores ? cores : "");
        hwloc_bitmap_free (ids);
        return -1;
    }
    hwloc_bitmap_foreach_begin (id, ids)
    {
        hwloc_obj_t obj = hwloc_get_obj_by_type (t->topo, unit, (unsigned) id);
        if (obj == NULL) {
            nmissing++;
            if (missing != NULL)
                hwloc_bitmap_set (missing, (unsigned) id);
        } else
            hwloc_bitmap_or (out, out, obj->cpuset);
    }
    hwloc_bitmap_foreach_end ();
    hwloc_bitmap_free (ids);
    return nmissing;
}

int dist_topo_find_gpu (const struct dist_topo *t, const char *busid)
{
    int i;

    for (i = 0; i < t->ngpus; i++)
        if (strcasecmp (t->gpu[i].busid, busid) == 0)
            return i;
    return -1;
}

static bool valid_boot_id (const char *id)
{
    size_t i;

    if (strlen (id) != 36)
        return false;
    for (i = 0; i < 36; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')
              || (id[i] == '-' && (i == 8 || i == 13 || i == 18 || i == 23))))
            return false;
    return true;
}

int dist_topo_cache_key (char *buf, size_t size, const char *boot_id, unsigned hwloc_version,
                         bool io)
{
    int n;

    if (!valid_boot_id (boot_id))
        return -1;
    n = snprintf (buf, size, "format=%d hwloc=0x%x boot=%s io=%d", DIST_TOPO_CACHE_FORMAT,
                  hwloc_version, boot_id, io ? 1 : 0);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

int dist_topo_site_key (char *buf, size_t size, const char *boot_id, unsigned hwloc_version,
                        unsigned long long dev, unsigned long long ino, long long file_size,
                        long long mtime_s, long mtime_ns)
{
    int n;

    if (!valid_boot_id (boot_id))
        return -1;
    n = snprintf (buf, size, "format=%d hwloc=0x%x boot=%s site=%llx:%llx:%lld:%lld.%09ld",
                  DIST_TOPO_CACHE_FORMAT, hwloc_version, boot_id, dev, ino, file_size, mtime_s,
                  mtime_ns);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

bool dist_topo_cache_usable (const char *stored, const char *boot_id, unsigned hwloc_version,
                             bool need_io)
{
    char key[DIST_TOPO_CACHE_KEY_MAX];

    if (stored == NULL)
        return false;
    if (dist_topo_cache_key (key, sizeof (key), boot_id, hwloc_version, true) == 0
        && strcmp (stored, key) == 0)
        return true; /* with I/O devices: good for every step */
    return !need_io && dist_topo_cache_key (key, sizeof (key), boot_id, hwloc_version, false) == 0
           && strcmp (stored, key) == 0;
}

#define SEAL_START "<!-- slurm-dist-train topology cache: length="

static uint64_t fnv1a64 (const char *p, size_t len)
{
    uint64_t h = 14695981039346656037ULL;

    while (len-- > 0) {
        h ^= (unsigned char) *p++;
        h *= 1099511628211ULL;
    }
    return h;
}

int dist_topo_cache_seal (const char *xml, size_t len, const char *key, char *line, size_t size)
{
    int n = snprintf (line, size, SEAL_START "%zu fnv1a64=%016" PRIx64 " key=%s -->\n", len,
                      fnv1a64 (xml, len), key);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

/* The start of text's last line, no longer than max; NULL when there is none. */
static const char *last_line (const char *text, size_t len, size_t max)
{
    size_t i;

    for (i = len - 1; i > 0 && len - i <= max; i--)
        if (text[i - 1] == '\n')
            return text + i;
    return NULL;
}

/* What a seal line says: the length and hash of the XML it was made for, and its key. */
struct seal_fields {
    unsigned long long xmllen, hash;
    const char *key, *key_end;
};

/* The fields of a seal line that starts with SEAL_START, NUL-terminated in place of its
 * newline; -1 when it is malformed. */
static int parse_seal (const char *line, struct seal_fields *f)
{
    const char *p = line + sizeof (SEAL_START) - 1, *end;
    char *q;

    if (*p < '0' || *p > '9')
        return -1;
    f->xmllen = strtoull (p, &q, 10);
    if (strncmp (q, " fnv1a64=", 9) != 0)
        return -1;
    p = q + 9;
    for (end = p; (*end >= '0' && *end <= '9') || (*end >= 'a' && *end <= 'f'); end++)
        ;
    if (end - p != 16)
        return -1;
    f->hash = strtoull (p, NULL, 16);
    if (strncmp (end, " key=", 5) != 0)
        return -1;
    f->key = end + 5;
    f->key_end = strstr (f->key, " -->");
    if (f->key_end == NULL || f->key_end[4] != '\0')
        return -1;
    return 0;
}

long dist_topo_cache_unseal (const char *text, size_t len, char *key, size_t keysize)
{
    const size_t start_len = sizeof (SEAL_START) - 1;
    char line[DIST_TOPO_CACHE_KEY_MAX + 128];
    const char *seal;
    struct seal_fields f;
    size_t linelen;

    /* the seal is the last line */
    if (len < start_len + 2 || text[len - 1] != '\n'
        || (seal = last_line (text, len, sizeof (line))) == NULL)
        return -1;
    linelen = (size_t) (text + len - seal);
    if (linelen >= sizeof (line) || linelen < start_len
        || memcmp (seal, SEAL_START, start_len) != 0)
        return -1;
    memcpy (line, seal, linelen);
    line[linelen - 1] = '\0'; /* the newline */
    if (parse_seal (line, &f) < 0 || (size_t) (f.key_end - f.key) >= keysize)
        return -1;
    /* the text before the seal is exactly the XML it was made for */
    if (f.xmllen != (unsigned long long) (seal - text) || f.xmllen > LONG_MAX
        || fnv1a64 (text, (size_t) f.xmllen) != f.hash)
        return -1;
    memcpy (key, f.key, (size_t) (f.key_end - f.key));
    key[f.key_end - f.key] = '\0';
    return (long) f.xmllen;
}
