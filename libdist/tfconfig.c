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
                      "0123456789.-_:[]")
           == strlen (h);
}

static const char head[] = "{\"cluster\": {\"worker\": [";
static const char tail[] = "]}, \"task\": {\"type\": \"worker\", \"index\": ";

/* The size of the prefix with five-digit ports: an upper bound. */
static size_t prefix_size (const char *const *host_of_rank, size_t ntasks)
{
    size_t size = sizeof (head) + sizeof (tail), i;

    for (i = 0; i < ntasks; i++)
        size += strlen (host_of_rank[i]) + 10; /* quotes, ":65535", ", " */
    return size;
}

int dist_tf_config_fits (const char *const *host_of_rank, size_t ntasks)
{
    return prefix_size (host_of_rank, ntasks) <= DIST_TF_CONFIG_MAX;
}

char *dist_tf_config_prefix (const char *const *host_of_rank, size_t ntasks, uint16_t port_base,
                             uint16_t lo, uint16_t hi)
{
    size_t span, i, size;
    char *text, *p;

    if (hi < lo || port_base < lo || port_base > hi)
        return NULL;
    span = (size_t) hi - lo + 1;
    if (ntasks == 0 || ntasks > span)
        return NULL;
    for (i = 0; i < ntasks; i++)
        if (!plain_host (host_of_rank[i]))
            return NULL;
    size = prefix_size (host_of_rank, ntasks);
    if (size > DIST_TF_CONFIG_MAX)
        return NULL;
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
