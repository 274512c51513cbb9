/* fuzz.h - what the libFuzzer harnesses share: the input as a C string of
 * exactly its size (so AddressSanitizer sees a read past its end), its
 * lines, and a check that aborts, which libFuzzer reports as a crash. */
#ifndef DIST_FUZZ_H
#define DIST_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf (stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond);            \
            abort ();                                                                              \
        }                                                                                          \
    } while (0)

/* The input, NUL-terminated, in a block of size + 1 bytes (an embedded NUL
 * ends the string early, as it would in an environment variable). */
static inline char *fuzz_string (const uint8_t *data, size_t size)
{
    char *s = malloc (size + 1);

    if (s == NULL)
        abort ();
    memcpy (s, data, size);
    s[size] = '\0';
    return s;
}

/* A copy of s in a block of exactly its length + 1 bytes. */
static inline char *fuzz_dup (const char *s)
{
    return fuzz_string ((const uint8_t *) s, strlen (s));
}

/* The next line of *p (cut at '\n', which is removed), NULL at the end. */
static inline char *fuzz_line (char **p)
{
    char *line = *p, *nl;

    if (line == NULL || *line == '\0')
        return NULL;
    nl = strchr (line, '\n');
    if (nl != NULL) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = line + strlen (line);
    }
    return line;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#endif /* DIST_FUZZ_H */
