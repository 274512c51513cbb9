/* fuzz_address.c - MASTER_ADDR chosen from what a node name resolves to
 * (libdist/address.c), without getaddrinfo: the answer is built from the
 * input.  Input: one entry a line, a numeric IPv4 or IPv6 address ("-" is an
 * entry without an address, "unix" one of another family); the first line
 * may be "outsz=N", the size of the caller's buffer (default 46). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/un.h>

#include "libdist/address.h"
#include "tests/fuzz/fuzz.h"

#define ENTRIES_MAX 64

static struct addrinfo *entry (const char *line)
{
    struct addrinfo *ai = calloc (1, sizeof (*ai));
    struct sockaddr_in in = {.sin_family = AF_INET};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    const void *sa = NULL;
    size_t len = 0;

    ai->ai_socktype = SOCK_STREAM;
    if (inet_pton (AF_INET, line, &in.sin_addr) == 1) {
        ai->ai_family = AF_INET;
        sa = &in, len = sizeof (in);
    } else if (inet_pton (AF_INET6, line, &in6.sin6_addr) == 1) {
        ai->ai_family = AF_INET6;
        sa = &in6, len = sizeof (in6);
    } else if (strcmp (line, "unix") == 0) {
        ai->ai_family = AF_UNIX;
        sa = &un, len = sizeof (un);
    } else {
        ai->ai_family = AF_INET; /* no address at all */
    }
    if (sa != NULL) {
        /* exactly the size getaddrinfo gives for the family */
        ai->ai_addr = malloc (len);
        memcpy (ai->ai_addr, sa, len);
        ai->ai_addrlen = (socklen_t) len;
    }
    return ai;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size), *p = text, *line;
    struct addrinfo *list = NULL, **tail = &list, *ai, *next;
    size_t outsz = DIST_ADDR_MAX, n = 0;
    char *out;

    if (strncmp (p, "outsz=", 6) == 0) {
        line = fuzz_line (&p);
        outsz = strtoul (line + 6, NULL, 10) % 128;
    }
    while (n++ < ENTRIES_MAX && (line = fuzz_line (&p)) != NULL) {
        *tail = entry (line);
        tail = &(*tail)->ai_next;
    }
    out = malloc (outsz + 1);
    for (ai = list; ai != NULL; ai = ai->ai_next)
        if (ai->ai_addr != NULL)
            (void) dist_address_is_loopback (ai->ai_addr);
    if (outsz > 0 && dist_address_pick (list, out, outsz) == 0) {
        /* a numeric address of the list, never loopback */
        struct sockaddr_in6 back6 = {.sin6_family = AF_INET6};
        struct sockaddr_in back4 = {.sin_family = AF_INET};
        bool v4;

        FUZZ_CHECK (strnlen (out, outsz) < outsz);
        v4 = inet_pton (AF_INET, out, &back4.sin_addr) == 1;
        FUZZ_CHECK (v4 || inet_pton (AF_INET6, out, &back6.sin6_addr) == 1);
        FUZZ_CHECK (!dist_address_is_loopback (v4 ? (struct sockaddr *) &back4
                                                  : (struct sockaddr *) &back6));
        if (!v4)
            FUZZ_CHECK (!IN6_IS_ADDR_LINKLOCAL (&back6.sin6_addr)
                        && !IN6_IS_ADDR_MULTICAST (&back6.sin6_addr));
    }
    for (ai = list; ai != NULL; ai = next) {
        next = ai->ai_next;
        free (ai->ai_addr);
        free (ai);
    }
    free (out);
    free (text);
    return 0;
}
