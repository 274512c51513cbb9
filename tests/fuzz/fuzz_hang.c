/* fuzz_hang.c - dist-train-doctor hang's reading of what the probes printed
 * (tools/doctor/hang.c) and the verdict over it (hangverdict.c).  The probes
 * run as the job's user, and srun adds its own lines: whatever arrives, the
 * parser keeps every field in bounds, and the report is a table and one
 * verdict line.  Input: the lines, as srun passes them on. */
#include "tests/fuzz/fuzz.h"
#include "tools/doctor/hang.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char *text = fuzz_string (data, size), *line, *save = NULL, verdict[DOCTOR_LINE_MAX];
    char pair[2][HANG_ENDPOINT_MAX], *report = NULL;
    size_t n, len = 0;
    FILE *f;

    for (line = strtok_r (text, "\n", &save); line != NULL; line = strtok_r (NULL, "\n", &save))
        (void) hang_sample_parse_line (&s, line);
    hang_sample_finish (&s);
    for (size_t i = 0; i < s.nranks; i++) {
        FUZZ_CHECK (strlen (s.rank[i].node) < DOCTOR_NAME_MAX);
        FUZZ_CHECK (s.rank[i].window_ms > 0);
        FUZZ_CHECK (i == 0 || s.rank[i - 1].rank < s.rank[i].rank);
    }
    n = hang_verdict (&s, verdict, sizeof (verdict));
    FUZZ_CHECK (strchr (verdict, '\n') == NULL);
    FUZZ_CHECK (n <= s.nranks + (size_t) (s.world_size > 0 ? s.world_size : 0) + 1);
    if (hang_suspect_pair (&s, pair) == 0)
        FUZZ_CHECK (strlen (pair[0]) < HANG_ENDPOINT_MAX && strlen (pair[1]) < HANG_ENDPOINT_MAX);
    f = open_memstream (&report, &len);
    if (f != NULL) {
        FUZZ_CHECK (hang_report (f, "1.0", &s) == n);
        fclose (f);
        /* a header, a column line, a line per rank, the probes' cost, the verdict */
        size_t lines = 0;
        for (size_t i = 0; i < len; i++)
            lines += report[i] == '\n';
        FUZZ_CHECK (lines == s.nranks + 4);
        free (report);
    }
    hang_sample_free (&s);
    free (text);
    return 0;
}
