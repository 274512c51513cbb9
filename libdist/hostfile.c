/* hostfile.c - find rank 0's entry in a hostfile's text. */
#include <string.h>

#include "hostfile.h"

int dist_hostfile_first (const char *text, char *out, size_t outsz)
{
    const char *p = text;

    while (*p != '\0') {
        size_t len = 0;
        int depth = 0;

        if (*p == '#') {                /* comment: skip the rest of the line */
            p += strcspn (p, "\n");
            continue;
        }
        if (strchr (" \t\r\n,", *p) != NULL) {
            p++;
            continue;
        }
        /* an entry ends at a separator outside brackets, or at '*' */
        while (p[len] != '\0' && p[len] != '*' && p[len] != '#'
               && (depth > 0 || strchr (" \t\r\n,", p[len]) == NULL)) {
            if (p[len] == '[')
                depth++;
            else if (p[len] == ']' && depth > 0)
                depth--;
            len++;
        }
        if (len == 0 || len >= outsz)
            return -1;
        memcpy (out, p, len);
        out[len] = '\0';
        return 0;
    }
    return -1;
}
