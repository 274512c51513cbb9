/* fuzz_topo_xml.c - a node's topology cache as the plugin reads it: the seal
 * checked (libdist/topo.c: dist_topo_cache_unseal), then the XML loaded by
 * hwloc's own parser (dist_topo_load_xml), then the binding planned on it
 * (libdist/bind.c) from Slurm's text: the job's cores, CUDA_VISIBLE_DEVICES,
 * SLURM_STEP_GPUS and the local task count.
 *
 * Only sealed text reaches hwloc, as in the plugin: hwloc 2.9's XML import
 * crashes within seconds on corrupt XML, with either parser (a NULL
 * dereference in hwloc_bitmap_compare_first under hwloc_topology_load, a
 * heap overflow in hwloc_bitmap_sscanf), and the plugin never parses what
 * it did not seal itself.  So mutations of the XML are refused by the seal,
 * and the fuzzing happens in the first line and in what planning makes of
 * the recorded machines.
 *
 * Input: one line "cores=LIST visible=LIST gpus=LIST tasks=N own=0|1" (each
 * field optional), then a sealed cache file (XML and seal line). */
#include <stdbool.h>

#include "libdist/bind.h"
#include "libdist/config.h"
#include "libdist/topo.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerInitialize (int *argc, char ***argv)
{
    (void) argc, (void) argv;
    /* what spank/topocache.c sets for its cache: hwloc's own parser, no PCI
     * discovery, no GPU runtimes */
    setenv ("HWLOC_PLUGINS_BLACKLIST",
            "hwloc_gl,hwloc_opencl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,"
            "hwloc_levelzero,hwloc_pci,hwloc_xml_libxml",
            1);
    return 0;
}

struct slurm_text {
    const char *cores, *visible, *gpus;
    int ntasks;
    bool own;
};

/* "key=value" words of the first line, in place. */
static void parse_first_line (char *line, struct slurm_text *s)
{
    char *word, *save = NULL;

    for (word = strtok_r (line, " ", &save); word != NULL; word = strtok_r (NULL, " ", &save)) {
        if (strncmp (word, "cores=", 6) == 0)
            s->cores = word + 6;
        else if (strncmp (word, "visible=", 8) == 0)
            s->visible = word + 8;
        else if (strncmp (word, "gpus=", 5) == 0)
            s->gpus = word + 5;
        else if (strncmp (word, "tasks=", 6) == 0)
            s->ntasks = atoi (word + 6);
        else if (strcmp (word, "own=1") == 0)
            s->own = true;
    }
}

static void plan (const struct dist_topo *t, const char *cores, const int *gpu, int ngpus,
                  int ntasks, bool own)
{
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc ();
    struct dist_bind_plan p;
    int pos[DIST_GPUS_MAX], i, n;
    char err[DIST_ERR_MAX];

    err[0] = '\0';
    if (dist_topo_cores_cpuset (t, cores, allowed, NULL, err, sizeof (err)) < 0) {
        FUZZ_CHECK (err[0] != '\0');
        hwloc_bitmap_free (allowed);
        return;
    }
    if (hwloc_bitmap_iszero (allowed)) {
        hwloc_bitmap_free (allowed);
        return;
    }
    if (dist_bind_plan (t, allowed, gpu, ngpus, ntasks, &p, err, sizeof (err)) < 0) {
        FUZZ_CHECK (err[0] != '\0');
        hwloc_bitmap_free (allowed);
        return;
    }
    FUZZ_CHECK (p.ntasks == ntasks && p.ngpus == ngpus);
    for (i = 0; i < ntasks; i++) {
        const struct dist_bind_rank *rk = &p.rank[i];
        FUZZ_CHECK (!hwloc_bitmap_iszero (rk->cpuset));
        FUZZ_CHECK (hwloc_bitmap_isincluded (rk->cpuset, allowed));
        FUZZ_CHECK (rk->nic >= -1 && rk->nic < t->nnics);
        if (ngpus > 0) {
            FUZZ_CHECK (rk->gpu_first >= 0 && rk->gpu_count >= 1
                        && rk->gpu_first + rk->gpu_count <= ngpus);
            n = dist_bind_visible (&p, i, own, pos);
            FUZZ_CHECK (n >= 1 && n <= ngpus);
            /* the rank's first own GPU is among what it sees */
            while (--n >= 0 && pos[n] != p.order[rk->gpu_first])
                ;
            FUZZ_CHECK (n >= 0);
        }
    }
    /* with at least as many CPUs as ranks, no two ranks share one */
    if (!p.cpus_shared)
        for (i = 1; i < ntasks; i++)
            FUZZ_CHECK (!hwloc_bitmap_intersects (p.rank[i - 1].cpuset, p.rank[i].cpuset));
    dist_bind_plan_free (&p);
    hwloc_bitmap_free (allowed);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr (data, '\n', size);
    char *first, *file, key[DIST_TOPO_CACHE_KEY_MAX], err[DIST_ERR_MAX];
    char tokens[DIST_GPUS_MAX][64];
    int index[DIST_GPUS_MAX], ngpus, all[DIST_GPUS_MAX], i;
    struct slurm_text s = {"0-65535", NULL, NULL, 1, false};
    struct dist_topo t;
    size_t len;
    long xmllen;

    if (nl == NULL)
        return 0;
    first = fuzz_string (data, (size_t) (nl - data));
    len = size - (size_t) (nl + 1 - data);
    file = malloc (len + 1);
    memcpy (file, nl + 1, len);
    xmllen = dist_topo_cache_unseal (file, len, key, sizeof (key));
    if (xmllen <= 0) {
        free (file);
        free (first);
        return 0;
    }
    file[xmllen] = '\0'; /* as spank/topocache.c does */
    if (dist_topo_load_xml (&t, file, (size_t) xmllen + 1, DIST_TOPO_IO | DIST_TOPO_THIS_SYSTEM,
                            err, sizeof (err))
        < 0) {
        free (file);
        free (first);
        return 0;
    }
    FUZZ_CHECK (t.ngpus >= 0 && t.ngpus <= DIST_GPUS_MAX);
    FUZZ_CHECK (t.nnics >= 0 && t.nnics <= DIST_NICS_MAX);
    for (i = 0; i < t.ngpus; i++) {
        FUZZ_CHECK (dist_topo_find_gpu (&t, t.gpu[i].busid) == i);
        FUZZ_CHECK (t.gpu[i].numa != NULL && t.gpu[i].package != NULL);
    }
    parse_first_line (first, &s);
    /* Slurm's text as spank/bind.c reads it */
    ngpus = dist_step_gpus (s.visible, s.gpus, index, tokens, err, sizeof (err));
    plan (&t, s.cores, index, ngpus < 0 ? 0 : ngpus, s.ntasks, s.own);
    /* and the shapes of every step on this machine */
    for (i = 0; i < t.ngpus; i++)
        all[i] = t.ngpus - 1 - i; /* Slurm's order need not be PCI order */
    plan (&t, "0-65535", all, t.ngpus, t.ngpus > 0 ? t.ngpus : 1, false);
    plan (&t, "0-65535", all, t.ngpus, t.ngpus + 1, true);
    plan (&t, s.cores, all, t.ngpus > 1 ? 1 : t.ngpus, 3, false);
    dist_topo_destroy (&t);
    free (file);
    free (first);
    return 0;
}
