/* slurmconf.c - one key of a Slurm configuration file (slurm.conf, mpi.conf), read
 * the way Slurm reads it: for the shim (mpi.conf's fence) and dist-train-doctor
 * (slurm.conf's ports and plugins), which link no Slurm library to ask it. */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "slurmconf.h"

/* The first character at or after p (up to end) that is neither a blank nor a tab. */
static const char *skip_blanks (const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Where the value at v ends: at a blank, a comment or a carriage return, or at end. */
static const char *value_end (const char *v, const char *end)
{
    while (v < end && *v != ' ' && *v != '\t' && *v != '#' && *v != '\r')
        v++;
    return v;
}

/* One line of a Slurm configuration file: is it "key = value", and where is the value? */
static bool conf_line (const char *line, const char *end, const char *key, const char **value,
                       size_t *value_len)
{
    size_t key_len = strlen (key);
    const char *p = skip_blanks (line, end), *v;

    if ((size_t) (end - p) <= key_len || strncasecmp (p, key, key_len) != 0)
        return false;
    p = skip_blanks (p + key_len, end);
    if (p == end || *p != '=')
        return false;
    v = skip_blanks (p + 1, end);
    p = value_end (v, end);
    if (p - v >= 2 && (*v == '"' || *v == '\'') && p[-1] == *v) {
        v++;
        p--;
    }
    *value = v;
    *value_len = (size_t) (p - v);
    return true;
}

bool dist_slurm_conf_value (const char *text, size_t len, const char *key, char *out, size_t outlen)
{
    const char *line = text, *end = text + len, *eol, *value = NULL, *v;
    size_t value_len = 0, vl;
    bool found = false;

    while (line < end) {
        eol = memchr (line, '\n', (size_t) (end - line));
        if (eol == NULL)
            eol = end;
        if (conf_line (line, eol, key, &v, &vl)) {
            value = v;
            value_len = vl;
            found = true;
        }
        line = eol + 1;
    }
    if (!found || value_len >= outlen)
        return false;
    memcpy (out, value, value_len);
    out[value_len] = '\0';
    return true;
}
