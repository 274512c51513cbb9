/* report.c - the report rank 0 prints: one line per node, one per
 * problem, a verdict; or the same as JSON (--json). */
#include <string.h>

#include "doctor.h"
#include "auth.h"
#include "text.h"

#define P DOCTOR_PROGRAM ": "
#define STACK_LINES_MAX 8 /* different collective stacks named; more are counted */

static void verdict_text (const struct doctor_result *res, double timeout_s, char *out, size_t size)
{
    size_t nodes = 0;

    for (size_t i = 0; i < res->nnodes; i++)
        nodes += res->node[i].ranks[0] != '\0';
    if (doctor_result_ok (res))
        snprintf (out, size, "ok: all %zu rank%s on %zu node%s checked in, nothing wrong",
                  res->checked_in, res->checked_in == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
    else
        snprintf (out, size, "FAILED: %zu problem%s; %zu tasks of %ld checked in within %.0f s",
                  res->nproblems, res->nproblems == 1 ? "" : "s", res->checked_in, res->world_size,
                  timeout_s);
}

/* "s" when a list of ranks ("0-3", "1,5") names more than one. */
static const char *plural (const char *ranks)
{
    return ranks[strcspn (ranks, ",-")] != '\0' ? "s" : "";
}

/* Whether one of the nodes shown[0..n) has this stack: its line is out. */
static bool stack_shown (const struct doctor_result *res, const size_t *shown, size_t n,
                         const char *stack)
{
    for (size_t s = 0; s < n; s++)
        if (strcmp (res->node[shown[s]].stack, stack) == 0)
            return true;
    return false;
}

/* Each node's collective stack, one line for the nodes that share one. */
static void stack_lines (FILE *f, const struct doctor_result *res)
{
    size_t shown[STACK_LINES_MAX], nshown = 0, more = 0;
    char names[DOCTOR_LINE_MAX / 2];

    for (size_t i = 0; i < res->nnodes; i++) {
        const char *stack = res->node[i].stack;
        if (stack[0] == '\0' || stack_shown (res, shown, nshown, stack))
            continue;
        if (nshown == STACK_LINES_MAX) {
            more++;
            continue;
        }
        shown[nshown++] = i;
        names[0] = '\0';
        for (size_t j = i; j < res->nnodes; j++)
            if (strcmp (res->node[j].stack, stack) == 0)
                doctor_list_join (names, sizeof (names), ",", res->node[j].name);
        fprintf (f, P "%s: %s\n", names, stack);
    }
    if (more > 0)
        fprintf (f, P "... and nodes with %zu more different stacks\n", more);
}

void doctor_report_text (FILE *f, const struct doctor_result *res, double timeout_s)
{
    char verdict[DOCTOR_LINE_MAX];
    size_t i;

    for (i = 0; i < res->nnodes; i++) {
        const struct doctor_node_summary *s = &res->node[i];
        if (s->ranks[0] == '\0') {
            if (s->missing[0] != '\0')
                fprintf (f, P "%s: no rank checked in (expected rank%s %s)\n", s->name,
                         plural (s->missing), s->missing);
            else
                fprintf (f, P "%s: no rank checked in\n", s->name);
            continue;
        }
        fprintf (f, P "%s: rank%s %s via %s %s, connected in <= %ld ms%s%s%s%s\n", s->name,
                 plural (s->ranks), s->ranks, s->ifnames[0] ? s->ifnames : "?", s->sources,
                 s->max_connect_ms, s->missing[0] ? ", missing " : "", s->missing,
                 s->note[0] ? "; " : "", s->note);
    }
    stack_lines (f, res);
    /* (a note, not a problem: anyone can connect to a port, and that must
     * not fail the step) */
    if (res->unauthenticated > 0)
        fprintf (f,
                 P "note: %zu connection%s to MASTER_PORT closed without a record signed with "
                   "this step's key (from %s): not ranks of this step, or ranks with another "
                   "step's " DOCTOR_KEY_VAR "\n",
                 res->unauthenticated, res->unauthenticated == 1 ? "" : "s",
                 res->unauthenticated_from);
    if (res->fabric[0] != '\0')
        fprintf (f, P "%s\n", res->fabric);
    for (i = 0; i < res->nwarnings && i < DOCTOR_WARNINGS_MAX; i++)
        fprintf (f, P "warning: %s\n", res->warning[i]);
    if (res->nwarnings > DOCTOR_WARNINGS_MAX)
        fprintf (f, P "warning: ... and %zu more\n", res->nwarnings - DOCTOR_WARNINGS_MAX);
    for (i = 0; i < res->nproblems && i < DOCTOR_PROBLEMS_MAX; i++)
        fprintf (f, P "problem: %s\n", res->problem[i]);
    if (res->nproblems > DOCTOR_PROBLEMS_MAX)
        fprintf (f, P "problem: ... and %zu more\n", res->nproblems - DOCTOR_PROBLEMS_MAX);
    verdict_text (res, timeout_s, verdict, sizeof (verdict));
    fprintf (f, P "%s\n", verdict);
}

/* A JSON string; the text is printable ASCII already, only quotes and
 * backslashes need escaping. */
static void json_string (FILE *f, const char *s)
{
    fputc ('"', f);
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\')
            fputc ('\\', f);
        if ((unsigned char) *s < 0x20 || (unsigned char) *s >= 0x7f)
            fprintf (f, "\\u%04x", (unsigned char) *s);
        else
            fputc (*s, f);
    }
    fputc ('"', f);
}

void doctor_report_json (FILE *f, const struct doctor_result *res, double timeout_s)
{
    char verdict[DOCTOR_LINE_MAX];
    size_t i;

    verdict_text (res, timeout_s, verdict, sizeof (verdict));
    fprintf (f, "{\"ok\":%s,\"world_size\":%ld,\"checked_in\":%zu,\"timeout_s\":%.0f,\"nodes\":[",
             doctor_result_ok (res) ? "true" : "false", res->world_size, res->checked_in,
             timeout_s);
    for (i = 0; i < res->nnodes; i++) {
        const struct doctor_node_summary *s = &res->node[i];
        fprintf (f, "%s{\"name\":", i ? "," : "");
        json_string (f, s->name);
        fputs (",\"ranks\":", f);
        json_string (f, s->ranks);
        fputs (",\"missing\":", f);
        json_string (f, s->missing);
        fputs (",\"interfaces\":", f);
        json_string (f, s->ifnames);
        fputs (",\"addresses\":", f);
        json_string (f, s->sources);
        fprintf (f, ",\"max_connect_ms\":%ld,\"note\":", s->max_connect_ms);
        json_string (f, s->note);
        fputs (",\"stack\":", f);
        json_string (f, s->stack);
        fputc ('}', f);
    }
    fputs ("],\"problems\":[", f);
    for (i = 0; i < res->nproblems && i < DOCTOR_PROBLEMS_MAX; i++) {
        fputs (i ? "," : "", f);
        json_string (f, res->problem[i]);
    }
    fputs ("],\"warnings\":[", f);
    for (i = 0; i < res->nwarnings && i < DOCTOR_WARNINGS_MAX; i++) {
        fputs (i ? "," : "", f);
        json_string (f, res->warning[i]);
    }
    fprintf (f,
             "],\"warnings_total\":%zu,\"problems_total\":%zu,\"unauthenticated\":%zu,"
             "\"unauthenticated_from\":",
             res->nwarnings, res->nproblems, res->unauthenticated);
    json_string (f, res->unauthenticated_from);
    fputs (",\"fabric\":", f);
    json_string (f, res->fabric);
    fputs (",\"verdict\":", f);
    json_string (f, verdict);
    fputs ("}\n", f);
}
