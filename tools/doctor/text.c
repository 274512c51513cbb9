/* text.c - the bounded lists and problem lines the checks write:
 * whatever a rank sent, a line stays a line. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* Add a line to lines[max]; past max it is only counted in *n. */
__attribute__ ((format (printf, 4, 0))) static void
add_line (char (*lines)[DOCTOR_LINE_MAX], size_t max, size_t *n, const char *fmt, va_list ap)
{
    if (*n < max)
        vsnprintf (lines[*n], DOCTOR_LINE_MAX, fmt, ap);
    (*n)++;
}

void doctor_problem (struct doctor_result *res, const char *fmt, ...)
{
    va_list ap;

    va_start (ap, fmt);
    add_line (res->problem, DOCTOR_PROBLEMS_MAX, &res->nproblems, fmt, ap);
    va_end (ap);
}

void doctor_warning (struct doctor_result *res, const char *fmt, ...)
{
    va_list ap;

    va_start (ap, fmt);
    add_line (res->warning, DOCTOR_WARNINGS_MAX, &res->nwarnings, fmt, ap);
    va_end (ap);
}

/* Append sep and item to a bounded list, ending it with "..." once full. */
void doctor_list_join (char *list, size_t size, const char *sep, const char *item)
{
    size_t len = strlen (list);

    if (len >= 3 && strcmp (list + len - 3, "...") == 0)
        return;
    if (len + strlen (item) + 6 >= size) {
        snprintf (list + len, size - len, "%s...", len > 0 ? sep : "");
        return;
    }
    snprintf (list + len, size - len, "%s%s", len > 0 ? sep : "", item);
}

void doctor_list_add (char *list, size_t size, const char *item)
{
    doctor_list_join (list, size, ",", item);
}

/* Add item unless the list has it already. */
void doctor_set_add (char *list, size_t size, const char *item)
{
    char copy[DOCTOR_LINE_MAX], *tok, *save = NULL;

    snprintf (copy, sizeof (copy), "%s", list);
    for (tok = strtok_r (copy, ",", &save); tok != NULL; tok = strtok_r (NULL, ",", &save))
        if (strcmp (tok, item) == 0)
            return;
    doctor_list_add (list, size, item[0] != '\0' ? item : "?");
}

static int cmp_long (const void *a, const void *b)
{
    long x = *(const long *) a, y = *(const long *) b;
    return x < y ? -1 : x > y;
}

/* Sorted values as ranges: "0-3,8". */
void doctor_ranges_text (long *v, size_t n, char *out, size_t size)
{
    char item[48];
    size_t i, j;

    out[0] = '\0';
    qsort (v, n, sizeof (*v), cmp_long);
    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n && v[j] <= v[j - 1] + 1; j++)
            ;
        if (v[j - 1] == v[i])
            snprintf (item, sizeof (item), "%ld", v[i]);
        else
            snprintf (item, sizeof (item), "%ld-%ld", v[i], v[j - 1]);
        doctor_list_add (out, size, item);
    }
}

/* The ranks of the records at idx[0..n) as ranges (copied: sorting). */
void doctor_ranks_of (const struct doctor_rank *recs, const size_t *idx, size_t n, char *out,
                      size_t size)
{
    long *v = malloc ((n + 1) * sizeof (*v));
    size_t i;

    if (v == NULL) {
        snprintf (out, size, "?");
        return;
    }
    for (i = 0; i < n; i++)
        v[i] = recs[idx[i]].rank;
    doctor_ranges_text (v, n, out, size);
    free (v);
}
