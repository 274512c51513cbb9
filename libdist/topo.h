/* topo.h - a node's hwloc topology, reduced to what binding needs: the GPUs
 * (in PCI order, which is Slurm's global GPU index) and the RDMA NICs.
 *
 * Loading never initializes CUDA, NVML or OpenCL: those hwloc components
 * are excluded, and GPUs are recognized by PCI class and vendor, which also
 * works for XML files recorded without any of them.
 */
#ifndef DIST_TOPO_H
#define DIST_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include <hwloc.h>

#define DIST_GPUS_MAX 64
#define DIST_NICS_MAX 64
#define DIST_BUSID_MAX 16 /* "dddd:bb:dd.f" and the NUL */
#define DIST_NICNAME_MAX 32

struct dist_gpu {
    char busid[DIST_BUSID_MAX];
    hwloc_obj_t pci; /* the PCI device */
    hwloc_obj_t numa; /* first ancestor with local memory: its cpuset is
                              the GPU's NUMA locality */
    hwloc_obj_t package; /* enclosing package, else the machine */
};

struct dist_nic {
    char name[DIST_NICNAME_MAX]; /* OpenFabrics name: mlx5_0, rdmap197s0 */
    hwloc_obj_t pci;
};

struct dist_topo {
    hwloc_topology_t topo;
    bool this_system; /* the topology is this machine's (not an XML
                               from elsewhere) */
    int ngpus;
    struct dist_gpu gpu[DIST_GPUS_MAX]; /* sorted by PCI bus id */
    int nnics;
    struct dist_nic nic[DIST_NICS_MAX];
};

/* What to load: I/O devices (PCI GPUs, NICs: a live load then walks the PCI
 * bus, which takes long on big nodes), and whether an XML file is known to
 * be this very machine's (our own cache), so binding applies. */
#define DIST_TOPO_IO 0x1
#define DIST_TOPO_THIS_SYSTEM 0x2
/* A live load of the whole machine, CPUs outside this process's cgroup
 * included: what one step caches serves steps with other CPUs (binding
 * narrows to the step's own CPUs itself). */
#define DIST_TOPO_WHOLE_MACHINE 0x4
/* dist_topo_read_file only: the file, and every directory on its real path, must be
 * root's and writable by nobody else (a directory with the sticky bit, as /var/tmp, may
 * be: nobody else can replace root's entries there).  Whoever can write them would decide
 * every user's binding on the node, and what root keeps of it. */
#define DIST_TOPO_ROOT_FILE 0x8

/* Load the topology: from xmlfile when given, else hwloc's usual sources
 * (HWLOC_XMLFILE in the environment, or the live machine).  0 on success;
 * -1 with a message in err, t left empty. */
int dist_topo_load (struct dist_topo *t, const char *xmlfile, unsigned flags, char *err,
                    size_t errsz);

/* The node's topology cache (spank/topocache.c) is valid for one boot, one
 * hwloc and one format of ours; io says whether it holds I/O devices.  Its
 * file is the XML text followed by a seal: one comment line with the key,
 * the text's length and its FNV-1a hash.  hwloc's XML import crashes on some
 * corrupt files, so a cache is parsed only when its seal holds.  Format 3:
 * every CPU of the machine is allowed (format 2 kept the saving step's
 * cpuset as the machine's allowed CPUs). */
#define DIST_TOPO_CACHE_FORMAT 3
#define DIST_TOPO_CACHE_KEY_MAX 256

/* The key for this boot (the kernel's boot_id) and hwloc version; -1 when
 * boot_id is not one (36 characters of hex digits and dashes). */
int dist_topo_cache_key (char *buf, size_t size, const char *boot_id, unsigned hwloc_version,
                         bool io);

/* The seal line for len bytes of XML text and key; -1 when it does not fit
 * in size. */
int dist_topo_cache_seal (const char *xml, size_t len, const char *key, char *line, size_t size);

/* The length of the XML text of a sealed cache of len bytes, its key copied
 * into key; -1 when the seal is missing, malformed or does not match. */
long dist_topo_cache_unseal (const char *text, size_t len, char *key, size_t keysize);

/* Whether a cache whose key is stored serves a load that needs I/O devices
 * or not: same format, boot and hwloc, and I/O devices when needed. */
bool dist_topo_cache_usable (const char *stored, const char *boot_id, unsigned hwloc_version,
                             bool need_io);

/* The key of the checked copy of a site's topology file: this boot and hwloc, and the
 * file's identity (device, inode, size, modification time), so that an edited or replaced
 * file is checked again.  -1 when boot_id is not one or the key does not fit. */
int dist_topo_site_key (char *buf, size_t size, const char *boot_id, unsigned hwloc_version,
                        unsigned long long dev, unsigned long long ino, long long file_size,
                        long long mtime_s, long mtime_ns);

/* hwloc loads every plugin it finds at its first topology of the process, and the OpenCL
 * and GL ones pull in large libraries: loading them takes most of the time of a load from
 * the cache.  Its switch is this variable, read only then: a live load with I/O devices
 * needs the PCI plugin; a site's XML file, which may hold anything XML allows, needs
 * libxml2's; hwloc's own export (our cache, the child's answer) is read by hwloc's
 * built-in parser. */
#define DIST_TOPO_PLUGINS_ENV "HWLOC_PLUGINS_BLACKLIST"
#define DIST_TOPO_PLUGINS_GPU                                                                      \
    "hwloc_gl,hwloc_opencl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero"
#define DIST_TOPO_PLUGINS_FOR_SITE_XML DIST_TOPO_PLUGINS_GPU ",hwloc_pci"
#define DIST_TOPO_PLUGINS_FOR_LIVE_IO DIST_TOPO_PLUGINS_GPU ",hwloc_xml_libxml"
#define DIST_TOPO_PLUGINS_FOR_EXPORTS DIST_TOPO_PLUGINS_FOR_LIVE_IO ",hwloc_pci"

/* The identity of a site's topology file, as the reading child found it (stat). */
struct dist_topo_file_id {
    unsigned long long dev, ino;
    long long size, mtime_s;
    long mtime_ns;
};

/* Whether the caller still wants hwloc's export of the file with this identity: false
 * when it holds a current copy of its own. */
typedef bool (*dist_topo_want_fn) (const struct dist_topo_file_id *id, void *arg);

/* Run first in the reading child.  A caller that keeps hwloc's plugins loaded, with its
 * own choice of them, lets go of them here: the child then loads those a site's XML
 * needs (libxml2's; hwloc's built-in parser reads only what hwloc writes). */
extern void (*dist_topo_file_child_prepare) (void);

/* How long the child may take, from fork to its last byte: 30 s (tests shorten it). */
extern int dist_topo_file_timeout_ms;

/* A site's XML file read by hwloc in a child process (libdist/topofile.c), with flags as
 * dist_topo_load's.  Everything that touches the file (stat, open, read) happens in the
 * child: a corrupt file crashes hwloc there, and a hung mount (NFS, FUSE) or a FIFO holds
 * the child, which is killed at the deadline, not the caller.  The child first tells the
 * file's identity; when want (if not NULL) says the caller has a current copy, it stops
 * there and 0 is returned.  Otherwise 1, with hwloc's export of what it read in *xml
 * (malloc'ed, NUL-terminated, *len without the NUL); or -1 with the reason in err, which
 * names the file as "label=path": hwloc refused it, crashed on it (a corrupt file), it is
 * not a regular file, it or a directory on its path is not root's alone (with
 * DIST_TOPO_ROOT_FILE), or the child took longer than the deadline. */
int dist_topo_read_file (const char *label, const char *path, unsigned flags,
                         dist_topo_want_fn want, void *arg, char **xml, size_t *len, char *err,
                         size_t errsz);

/* The same from an XML text in memory of len bytes, its NUL included. */
int dist_topo_load_xml (struct dist_topo *t, const char *xml, size_t len, unsigned flags, char *err,
                        size_t errsz);

void dist_topo_destroy (struct dist_topo *t);

/* How many cores Slurm can name on this topology: its cores, or its PUs when
 * it has no core objects. */
int dist_topo_core_count (const struct dist_topo *t);

/* The PUs of Slurm's cores ("0-3,8": Slurm numbers a node's cores in hwloc's
 * logical order).  Cores the topology lacks (a node that slurm.conf describes
 * with more cores than it has) are left out, and their numbers put in missing
 * when it is not NULL; returns how many were left out, or -1 (message in err)
 * when the list does not parse. */
int dist_topo_cores_cpuset (const struct dist_topo *t, const char *cores, hwloc_bitmap_t out,
                            hwloc_bitmap_t missing, char *err, size_t errsz);

/* The GPU whose bus id is busid ("0000:07:00.0", case-insensitive), or -1. */
int dist_topo_find_gpu (const struct dist_topo *t, const char *busid);

/* Whether the PCI devices the kernel lists in devices (sysfs's
 * "/sys/bus/pci/devices") hold a GPU, by the same vendor and class that
 * hwloc's devices are taken for GPUs by: one small read per device, where
 * hwloc's own discovery of the bus costs far more.  False when the directory
 * cannot be read. */
bool dist_pci_has_gpu (const char *devices);

#endif /* DIST_TOPO_H */
