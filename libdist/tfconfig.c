/* tfconfig.c - TF_CONFIG's JSON, built once per node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfconfig.h"

/* Host names go into JSON strings unescaped: allow only what names hold. */
static int plain_host (const char *h)
{
    if (*h == '\0' || strlen (h) > 255)
        return 0;
    return strspn (h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789.-_:[]") == strlen (h);
}

char *dist_tf_config_prefix (const char *const *host_of_rank, size_t ntasks,
                             uint16_t port_base, uint16_t lo, uint16_t hi)
{
    static const char head[] = "{\"cluster\": {\"worker\": [";
    static const char tail[] = "]}, \"task\": {\"type\": \"worker\", \"index\": ";
    size_t span, i, size = sizeof (head) + sizeof (tail);
    char *text, *p;

    if (hi < lo || port_base < lo || port_base > hi)
        return NULL;
    span = (size_t) hi - lo + 1;
    if (ntasks == 0 || ntasks > span)
        return NULL;
    for (i = 0; i < ntasks; i++) {
        if (!plain_host (host_of_rank[i]))
            return NULL;
        size += strlen (host_of_rank[i]) + 12; /* quotes, ":65535", ", " */
    }
    text = p = malloc (size);
    if (text == NULL)
        return NULL;
    p += sprintf (p, "%s", head);
    for (i = 0; i < ntasks; i++) {
        unsigned port = lo + ((size_t) port_base - lo + i) % span;
        p += sprintf (p, "%s\"%s:%u\"", i > 0 ? ", " : "", host_of_rank[i], port);
    }
    sprintf (p, "%s", tail);
    return text;
}
