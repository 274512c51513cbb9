/* fuzz_handover.c - srun's texts for the nodes, SLURM_DIST_TRAIN_SRUN and
 * SLURM_DIST_TRAIN_LAYOUT (libdist/handover.c), which reach slurmstepd in the
 * job's environment.  Input: a variable's value, read as each.  What parses
 * must format and parse back the same. */
#include "libdist/handover.h"
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
    free (text);
    return 0;
}
