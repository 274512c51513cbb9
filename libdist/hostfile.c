/* hostfile.c - the entries of a hostfile's text, in rank order. */
#include <stdlib.h>
#include <string.h>

#include "hostfile.h"

#define SEPARATORS " \t\r\n,"

/* "*N" after an entry: N in 1..65535, then a separator, a comment or the end. */
static int parse_repeat (const char **p, unsigned *repeat)
{
    char *end;
    unsigned long n;

    *repeat = 1;
    if (**p != '*')
        return 0;
    (*p)++;
    if (**p < '0' || **p > '9')
        return -1;
    n = strtoul (*p, &end, 10);
    if (n < 1 || n > 65535 || (*end != '\0' && *end != '#' && strchr (SEPARATORS, *end) == NULL))
        return -1;
    *repeat = (unsigned) n;
    *p = end;
    return 0;
}

int dist_hostfile_walk (const char *text,
                        int (*each) (const char *entry, unsigned repeat, void *arg), void *arg)
{
    char entry[DIST_HOSTFILE_ENTRY_MAX];
    const char *p = text;
    unsigned repeat;

    while (*p != '\0') {
        size_t len = 0;
        int depth = 0;

        if (*p == '#') { /* comment: skip the rest of the line */
            p += strcspn (p, "\n");
            continue;
        }
        if (strchr (SEPARATORS, *p) != NULL) {
            p++;
            continue;
        }
        /* an entry ends at a separator outside brackets, or at '*' */
        while (p[len] != '\0' && p[len] != '*' && p[len] != '#'
               && (depth > 0 || strchr (SEPARATORS, p[len]) == NULL)) {
            if (p[len] == '[')
                depth++;
            else if (p[len] == ']' && depth > 0)
                depth--;
            len++;
        }
        /* "*5" or "node1,*3": a repeat of nothing */
        if (len == 0 || len >= sizeof (entry))
            return -1;
        memcpy (entry, p, len);
        entry[len] = '\0';
        p += len;
        if (parse_repeat (&p, &repeat) < 0 || each (entry, repeat, arg) != 0)
            return -1;
    }
    return 0;
}

struct first {
    char *out;
    size_t outsz;
    int found;
};

static int take_first (const char *entry, unsigned repeat, void *arg)
{
    struct first *f = arg;
    size_t len = strlen (entry);

    (void) repeat;
    if (len >= f->outsz)
        return -1;
    memcpy (f->out, entry, len + 1);
    f->found = 1;
    return 1; /* stop here */
}

int dist_hostfile_first (const char *text, char *out, size_t outsz)
{
    struct first f = { out, outsz, 0 };

    dist_hostfile_walk (text, take_first, &f);
    return f.found ? 0 : -1;
}
