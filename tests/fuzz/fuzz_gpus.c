/* fuzz_gpus.c - the step's GPUs from CUDA_VISIBLE_DEVICES and
 * SLURM_STEP_GPUS: indices, UUIDs, MIG names (libdist/bind.c:
 * dist_step_gpus).  Input: CUDA_VISIBLE_DEVICES on the first line,
 * SLURM_STEP_GPUS on the second (absent: unset). */
#include "libdist/bind.h"
#include "libdist/config.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size), *p = text;
    char *visible = fuzz_line (&p), *global = fuzz_line (&p);
    int *index = malloc (DIST_GPUS_MAX * sizeof (*index));
    char (*tokens)[64] = malloc (DIST_GPUS_MAX * sizeof (*tokens));
    char *err = malloc (DIST_ERR_MAX);
    int n, i;

    /* an empty first line is an empty CUDA_VISIBLE_DEVICES */
    if (visible == NULL && size > 0)
        visible = text;
    visible = visible != NULL ? fuzz_dup (visible) : NULL;
    global = global != NULL ? fuzz_dup (global) : NULL;
    err[0] = '\0';
    n = dist_step_gpus (visible, global, index, tokens, err, DIST_ERR_MAX);
    FUZZ_CHECK (n >= -1 && n <= DIST_GPUS_MAX);
    if (n < 0)
        FUZZ_CHECK (err[0] != '\0' && strnlen (err, DIST_ERR_MAX) < DIST_ERR_MAX);
    for (i = 0; i < n; i++) {
        FUZZ_CHECK (index[i] >= 0 && index[i] <= 4095);
        FUZZ_CHECK (tokens[i][0] != '\0' && strnlen (tokens[i], 64) < 64);
        FUZZ_CHECK (strchr (tokens[i], ',') == NULL);
    }
    /* the pieces on their own, with smaller limits */
    if (visible != NULL) {
        n = dist_split_list (visible, tokens, 2);
        FUZZ_CHECK (n >= -1 && n <= 2);
        n = dist_parse_index_list (visible, index, 3);
        FUZZ_CHECK (n >= -1 && n <= 3);
    }
    free (visible);
    free (global);
    free (err);
    free (tokens);
    free (index);
    free (text);
    return 0;
}
