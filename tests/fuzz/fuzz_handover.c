/* fuzz_handover.c - srun's texts for the nodes, SLURM_DIST_TRAIN_SRUN,
 * SLURM_DIST_TRAIN_LAYOUT (libdist/handover.c) and SLURM_DIST_TRAIN_TOPOLOGY
 * (libdist/netgroup.c), which reach slurmstepd in the job's environment, and the
 * topology text srun reads from slurmctld.  Input: a variable's value, read as each.
 * What parses must format and parse back the same. */
#include "libdist/handover.h"
#include "libdist/netgroup.h"
#include "tests/fuzz/fuzz.h"

static int valid_name (const char *s)
{
    return strspn (s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:")
           == strlen (s);
}

/* As the arbitrary layout of the step and shape the text claims (a small one). */
static void check_layout (const char *text)
{
    unsigned job, step, nodes, ranks;
    uint32_t node_of_rank[64], back[64];
    char *out;

    if (sscanf (text, "step=%u.%u nodes=%u ranks=%u ", &job, &step, &nodes, &ranks) != 4
        || ranks > 64)
        return;
    if (dist_layout_text_parse (text, job, step, nodes, ranks, node_of_rank) < 0)
        return;
    for (unsigned r = 0; r < ranks; r++)
        FUZZ_CHECK (node_of_rank[r] < nodes);
    out = dist_layout_text (job, step, nodes, node_of_rank, ranks);
    FUZZ_CHECK (out != NULL);
    FUZZ_CHECK (dist_layout_text_parse (out, job, step, nodes, ranks, back) == 0);
    FUZZ_CHECK (memcmp (back, node_of_rank, ranks * sizeof (*back)) == 0);
    free (out);
}

/* As the groups of the step and shape the text claims (a small one), and the rank order
 * they make for a layout of two ranks a node. */
static void check_groups (const char *text)
{
    unsigned job, step, groups, nodes;
    uint32_t group[32], back[32], node_of_rank[64], n;
    struct dist_netorder o;
    char *out;

    if (sscanf (text, "step=%u.%u groups=%u nodes=%u ", &job, &step, &groups, &nodes) != 4
        || nodes > 32 || dist_netgroup_text_parse (text, job, step, nodes, group, &n) < 0)
        return;
    FUZZ_CHECK (n >= 1 && n <= nodes);
    out = dist_netgroup_text (job, step, n, group, nodes);
    FUZZ_CHECK (out != NULL);
    FUZZ_CHECK (dist_netgroup_text_parse (out, job, step, nodes, back, &n) == 0);
    FUZZ_CHECK (memcmp (back, group, nodes * sizeof (*back)) == 0);
    free (out);
    for (uint32_t r = 0; r < 2 * nodes; r++)
        node_of_rank[r] = r / 2;
    FUZZ_CHECK (dist_netorder_make (&o, 1, n, group, nodes, node_of_rank, 2 * nodes) == 0);
    /* a permutation, whose rank 0 is Slurm's slurm_rank0 */
    memset (back, 0, sizeof (back));
    for (uint32_t r = 0; r < 2 * nodes; r++) {
        FUZZ_CHECK (o.new_rank[r] < 2 * nodes && o.group_rank[r] < o.group_size[group[r / 2]]);
        FUZZ_CHECK (o.new_rank[r] != 0 || r == o.slurm_rank0);
    }
    dist_netorder_free (&o);
}

/* As Slurm's topology for a step of the nodes the text names first. */
static void check_topology (const char *text)
{
    char *names[] = {"node1", "node2", "node10", "n01", "a"}, err[256];
    uint32_t group[5];
    int n = dist_netgroup_assign (text, names, 5, group, err, sizeof (err));

    FUZZ_CHECK (n >= -1 && n <= 5);
    for (int i = 0; n >= 0 && i < 5; i++)
        FUZZ_CHECK (n == 0 ? group[i] == 0 : group[i] < (uint32_t) n);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size), *out;
    struct dist_handover h, back;

    if (dist_handover_parse (text, &h) == 0) {
        FUZZ_CHECK (strnlen (h.rank0_node, DIST_NODE_MAX) < DIST_NODE_MAX
                    && strnlen (h.rank0_addr, DIST_NODE_MAX) < DIST_NODE_MAX);
        FUZZ_CHECK (valid_name (h.rank0_node) && valid_name (h.rank0_addr));
        out = malloc (DIST_HANDOVER_MAX);
        FUZZ_CHECK (dist_handover_format (&h, out, DIST_HANDOVER_MAX) == 0);
        FUZZ_CHECK (dist_handover_parse (out, &back) == 0);
        FUZZ_CHECK (back.job_id == h.job_id && back.step_id == h.step_id
                    && back.fail_fast == h.fail_fast && strcmp (back.rank0_node, h.rank0_node) == 0
                    && strcmp (back.rank0_addr, h.rank0_addr) == 0
                    && strcmp (back.key, h.key) == 0);
        /* a key is 64 lowercase hex digits or none */
        FUZZ_CHECK (h.key[0] == '\0'
                    || (strlen (h.key) == DIST_STEP_KEY_HEX
                        && strspn (h.key, "0123456789abcdef") == DIST_STEP_KEY_HEX));
        free (out);
    } else {
        /* a refused text leaves nothing behind */
        static const struct dist_handover zero;
        FUZZ_CHECK (memcmp (&h, &zero, sizeof (h)) == 0);
    }
    check_layout (text);
    check_groups (text);
    check_topology (text);
    free (text);
    return 0;
}
