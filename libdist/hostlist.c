/* hostlist.c - Slurm's compressed node lists walked one expression at a time, each range
 * either expanded name by name or skipped by its size. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hostlist.h"

/* Nine digits: a range's size fits a long everywhere. */
#define VALUE_MAX 999999999L

/* dist_hostlist_each's own: count the names, refuse more than DIST_HOSTLIST_MAX. */
#define COUNTED 0x100

/* One expression: a name, or the prefix before open, ranges up to close, a suffix. */
struct expr {
    const char *s;
    size_t len;
    const char *open, *close; /* NULL for a name */
};

/* What walk does with each range of an expression (lo = hi = 0 for a name). */
typedef int (*visit_fn) (const struct expr *e, long lo, long hi, int width, void *arg);

static bool separator (char c, int flags)
{
    return c == ',' || ((flags & DIST_HOSTLIST_LOOSE) && (c == ' ' || c == '\t'));
}

/* The expression at p: up to a separator outside brackets ("n[1,3],m" is two). */
static size_t expr_len (const char *p, int flags)
{
    size_t n = 0;
    int depth = 0;

    for (; p[n] != '\0' && (depth > 0 || !separator (p[n], flags)); n++)
        depth += p[n] == '[' ? 1 : p[n] == ']' ? -1 : 0;
    return n;
}

/* A number at *p (before end), digits only: its value and how many digits it has. */
static bool number (const char **p, const char *end, long *v, int *width)
{
    const char *start = *p;

    for (*v = 0; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
        if (*v > (VALUE_MAX - (**p - '0')) / 10)
            return false;
        *v = *v * 10 + (**p - '0');
    }
    *width = (int) (*p - start);
    return *width > 0;
}

/* The range at *p of a bracket ending at close, and *p past it and the ',' after it; width
 * is lo's digits, which Slurm pads every name of the range to. */
static bool next_range (const char **p, const char *close, long *lo, long *hi, int *width)
{
    int hi_width;

    if (!number (p, close, lo, width))
        return false;
    *hi = *lo;
    if (*p < close && **p == '-') {
        (*p)++;
        if (!number (p, close, hi, &hi_width))
            return false;
    }
    if (*hi < *lo)
        return false;
    if (*p == close)
        return true;
    /* a ',' between ranges, never at the end ("n[1,]") */
    return **p == ',' && ++*p < close;
}

static int digits (long v)
{
    int n = 1;

    while ((v /= 10) != 0)
        n++;
    return n;
}

/* Whether s (len bytes) is one expression, into e; *count its names, past cap counted as
 * cap + 1 (a list of a billion-wide ranges cannot overflow the sum). */
static bool expr_parse (const char *s, size_t len, long cap, struct expr *e, long *count)
{
    const char *end = s + len, *p;
    size_t longest = 0;

    e->s = s;
    e->len = len;
    e->open = memchr (s, '[', len);
    e->close = e->open != NULL ? memchr (e->open, ']', (size_t) (end - e->open)) : NULL;
    if (len == 0 || (e->open != NULL && e->close == NULL))
        return false;
    /* one bracket pair; blanks are separators to Slurm's reader, never part of a name */
    for (p = s; p < end; p++)
        if ((*p == '[' && p != e->open) || (*p == ']' && p != e->close) || *p == ' ' || *p == '\t')
            return false;
    *count = 1;
    if (e->open == NULL)
        return len < DIST_HOSTLIST_NAME_MAX;
    *count = 0;
    for (p = e->open + 1; p == e->open + 1 || p < e->close;) {
        long lo, hi;
        int width;
        if (!next_range (&p, e->close, &lo, &hi, &width))
            return false;
        width = width > digits (hi) ? width : digits (hi);
        longest = (size_t) width > longest ? (size_t) width : longest;
        *count = *count > cap - (hi - lo + 1) ? cap + 1 : *count + (hi - lo + 1);
    }
    return len - (size_t) (e->close - e->open + 1) + longest < DIST_HOSTLIST_NAME_MAX;
}

/* Name v of e (width digits at least) into out; false when it does not fit. */
static bool format (const struct expr *e, long v, int width, char *out, size_t outlen)
{
    int n;

    if (e->open == NULL)
        n = snprintf (out, outlen, "%.*s", (int) e->len, e->s);
    else
        n = snprintf (out, outlen, "%.*s%0*ld%.*s", (int) (e->open - e->s), e->s, width, v,
                      (int) (e->s + e->len - e->close - 1), e->close + 1);
    return n >= 0 && (size_t) n < outlen;
}

/* Visit every range of list in order until visit returns non-zero (returned); 0 at the
 * end, -1 for a malformed expression (or, COUNTED, one past DIST_HOSTLIST_MAX names). */
static int walk (const char *list, int flags, visit_fn visit, void *arg)
{
    const char *p = list;
    long total = 0;

    if (list == NULL)
        return -1;
    for (;;) {
        struct expr e;
        size_t len;
        long count;
        int rc = 0;

        if (flags & DIST_HOSTLIST_LOOSE) {
            while (separator (*p, flags))
                p++;
            if (*p == '\0')
                return 0;
        }
        /* (strictly, "" and a ',' at either end are empty expressions, refused here) */
        len = expr_len (p, flags);
        if (!expr_parse (p, len, DIST_HOSTLIST_MAX - total, &e, &count))
            return -1;
        if ((flags & COUNTED) && count > DIST_HOSTLIST_MAX - total)
            return -1;
        total += count;
        if (e.open == NULL)
            rc = visit (&e, 0, 0, 0, arg);
        else
            for (const char *r = e.open + 1; rc == 0 && r < e.close;) {
                long lo = 0, hi = 0;
                int width = 0; /* (next_range sets all three; gcc 15 cannot tell) */
                next_range (&r, e.close, &lo, &hi, &width);
                rc = visit (&e, lo, hi, width, arg);
            }
        if (rc != 0)
            return rc;
        p += len;
        if (*p++ == '\0')
            return 0;
    }
}

struct each_state {
    int (*each) (const char *name, void *arg);
    void *arg;
};

static int each_range (const struct expr *e, long lo, long hi, int width, void *arg)
{
    struct each_state *st = arg;
    char name[DIST_HOSTLIST_NAME_MAX];

    for (long v = lo; v <= hi; v++) {
        int rc;
        if (!format (e, v, width, name, sizeof (name)))
            return -1;
        if ((rc = st->each (name, st->arg)) != 0)
            return rc;
    }
    return 0;
}

int dist_hostlist_each (const char *list, int flags, int (*each) (const char *name, void *arg),
                        void *arg)
{
    struct each_state st = {each, arg};

    if (each == NULL || (flags & ~DIST_HOSTLIST_LOOSE) != 0)
        return -1;
    return walk (list, flags | COUNTED, each_range, &st);
}

struct nth_state {
    long n; /* names still to skip */
    char *out;
    size_t outlen;
};

/* A range before the name is skipped whole; the name's own is formatted. */
static int nth_range (const struct expr *e, long lo, long hi, int width, void *arg)
{
    struct nth_state *st = arg;

    if (st->n > hi - lo) {
        st->n -= hi - lo + 1;
        return 0;
    }
    return format (e, lo + st->n, width, st->out, st->outlen) ? 1 : -1;
}

int dist_hostlist_nth (const char *list, long n, char *out, size_t outlen)
{
    struct nth_state st = {n, out, outlen};

    if (n < 0 || out == NULL || outlen == 0)
        return -1;
    return walk (list, 0, nth_range, &st) == 1 ? 0 : -1;
}
