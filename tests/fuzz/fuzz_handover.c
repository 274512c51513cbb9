/* fuzz_handover.c - srun's text for the nodes, DIST_TRAIN_SRUN
 * (libdist/handover.c), which reaches slurmstepd in the job's environment.
 * Input: the variable's value.  What parses must format and parse back the
 * same. */
#include "libdist/handover.h"
#include "tests/fuzz/fuzz.h"

static int valid_name (const char *s)
{
    return strspn (s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:")
           == strlen (s);
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
    free (text);
    return 0;
}
