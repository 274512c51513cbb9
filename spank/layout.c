/* layout.c - the step's whole layout (the node of every rank), read from the
 * step environment: what the tf profile and the verbose table need.  Block,
 * cyclic and plane are recomputed from the tasks per node; arbitrary comes
 * from SLURM_HOSTFILE, whose entries name each rank's node in rank order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "dist_train.h"
#include "libdist/hostfile.h"
#include "libdist/layout.h"

#define HOSTFILE_MAX (4 << 20) /* a hostfile of a million ranks is well below */

char *dist_train_read_hostfile (spank_t sp)
{
    char path[4096], msg[DIST_ERR_MAX];
    char *text = NULL;
    size_t len = 0, size = 0;
    struct stat st;
    struct statfs fs;
    ssize_t n;
    int fd;

    if (spank_getenv (sp, "SLURM_HOSTFILE", path, sizeof (path)) != ESPANK_SUCCESS) {
        dist_train_defer_error ("the arbitrary distribution without SLURM_HOSTFILE "
                                "hides which node runs each rank; use SLURM_HOSTFILE, "
                                "or set MASTER_ADDR yourself");
        return NULL;
    }
    /* (user_init runs with the user's identity: the user's own file.)  Never
     * block slurmstepd on it: a FIFO or a device would hold the node until a
     * writer comes; and never read what only slurmstepd can see (its own
     * /proc/self). */
    if ((fd = open (path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0) {
        snprintf (msg, sizeof (msg), "cannot open SLURM_HOSTFILE %.128s: %s", path,
                  strerror (errno));
        dist_train_defer_error (msg);
        return NULL;
    }
    if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || fstatfs (fd, &fs) < 0
        || fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC) {
        snprintf (msg, sizeof (msg),
                  "SLURM_HOSTFILE %.128s is not a plain file (a FIFO, a device, or under "
                  "/proc or /sys); give a file that lists the step's nodes",
                  path);
        dist_train_defer_error (msg);
        close (fd);
        return NULL;
    }
    do {
        if (len + 1 >= size) {
            char *bigger = size < HOSTFILE_MAX ? realloc (text, size ? 2 * size : 4096) : NULL;
            if (bigger == NULL) {
                snprintf (msg, sizeof (msg), "SLURM_HOSTFILE %.128s is larger than %d bytes",
                          path, HOSTFILE_MAX);
                dist_train_defer_error (msg);
                free (text);
                close (fd);
                return NULL;
            }
            text = bigger;
            size = size ? 2 * size : 4096;
        }
        n = read (fd, text + len, size - len - 1);
        if (n > 0)
            len += (size_t) n;
    } while (n > 0 || (n < 0 && errno == EINTR));
    close (fd);
    text[len] = '\0';
    return text;
}

/* Ranks in hostfile order: each entry expanded, repeated, matched to the
 * step's nodes. */
struct arbitrary {
    struct step_layout *l;
    uint32_t rank;
};

static int place_ranks (const char *entry, unsigned repeat, void *arg)
{
    struct arbitrary *a = arg;
    dt_hostlist_t hl = slurm_hostlist_create (entry);
    char *host;
    uint32_t node;

    if (hl == NULL)
        return -1;
    while (a->rank < a->l->ntasks && (host = slurm_hostlist_shift (hl)) != NULL) {
        for (node = 0; node < a->l->nnodes && strcmp (a->l->names[node], host) != 0; node++)
            ;
        free (host);
        if (node == a->l->nnodes) {
            slurm_hostlist_destroy (hl);
            return -1; /* a host outside the step */
        }
        for (unsigned k = 0; k < repeat && a->rank < a->l->ntasks; k++)
            a->l->node_of_rank[a->rank++] = node;
    }
    slurm_hostlist_destroy (hl);
    return 0;
}

static int arbitrary_layout (spank_t sp, struct step_layout *l)
{
    struct arbitrary a = { l, 0 };
    char *text = dist_train_read_hostfile (sp);
    int rc;

    if (text == NULL)
        return -1;
    rc = dist_hostfile_walk (text, place_ranks, &a);
    free (text);
    return rc == 0 && a.rank == l->ntasks ? 0 : -1;
}

int dist_train_layout_load (spank_t sp, const struct dist_step *st,
                            struct step_layout *l)
{
    char dist_text[64], plane_text[16], *text = NULL;
    uint32_t *counts = NULL, plane = 0, i;
    enum dist_distribution dist;
    dt_hostlist_t hl = NULL;
    int rc = -1;

    l->nnodes = st->node_count;
    l->ntasks = st->world_size;
    l->names = calloc (l->nnodes, sizeof (*l->names));
    l->node_of_rank = calloc (l->ntasks, sizeof (*l->node_of_rank));
    counts = calloc (l->nnodes, sizeof (*counts));
    if (spank_getenv (sp, "SLURM_DISTRIBUTION", dist_text, sizeof (dist_text)) != ESPANK_SUCCESS)
        dist_text[0] = '\0';
    dist = dist_distribution_parse (dist_text);
    if (spank_getenv (sp, "SLURM_DIST_PLANESIZE", plane_text, sizeof (plane_text))
        == ESPANK_SUCCESS)
        plane = (uint32_t) strtoul (plane_text, NULL, 10);
    if (l->names == NULL || l->node_of_rank == NULL || counts == NULL
        || (hl = dist_train_step_hostlist (sp)) == NULL)
        goto out;
    for (i = 0; i < l->nnodes; i++)
        if ((l->names[i] = slurm_hostlist_shift (hl)) == NULL)
            goto out;
    if (dist == DIST_DIST_ARBITRARY) {
        rc = arbitrary_layout (sp, l);
        goto out;
    }
    if ((text = dist_train_getenv_any (sp, "SLURM_STEP_TASKS_PER_NODE")) == NULL
        || dist_tasks_per_node_parse (text, counts, l->nnodes) != (int) l->nnodes
        || dist_layout_assign (dist, plane, counts, l->nnodes, l->node_of_rank, l->ntasks) < 0)
        goto out;
    rc = 0;
out:
    free (counts);
    free (text);
    if (hl != NULL)
        slurm_hostlist_destroy (hl);
    if (rc < 0)
        dist_train_layout_free (l);
    return rc;
}
void dist_train_layout_free (struct step_layout *l)
{
    uint32_t i;

    if (l->names != NULL)
        for (i = 0; i < l->nnodes; i++)
            free (l->names[i]);
    free (l->names);
    free (l->node_of_rank);
    l->names = NULL;
    l->node_of_rank = NULL;
}
