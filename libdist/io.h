/* io.h - whole reads and writes that survive short counts and EINTR.
 *
 * Slurm's own safe_read/safe_write answer the same need; these are for code
 * that runs without libslurm (the shim, the doctor, the unit tests).
 */
#ifndef DIST_IO_H
#define DIST_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Write all len bytes of buf to fd: 0, or -1 with errno set. */
int dist_write_all (int fd, const void *buf, size_t len);

/* Read fd until its end into buf, NUL-terminated: the bytes read (at most
 * size - 1), or -1 with errno set; EFBIG when fd holds more than size - 1. */
ssize_t dist_read_all (int fd, char *buf, size_t size);

/* Who may have written a file that dist_read_file accepts. */
enum dist_file_owner {
    DIST_FILE_ANYONE, /* any regular file */
    DIST_FILE_ROOT_ONLY, /* root's, writable by no one else, not a symlink */
};

/* A regular file's whole text, malloc'ed and NUL-terminated (*len without
 * the NUL), of at most max bytes; NULL with errno set when it cannot be
 * read, is not a regular file, fails the owner rule, or is larger (EFBIG).
 * Never blocks on a FIFO. */
char *dist_read_file (const char *path, size_t max, enum dist_file_owner owner, size_t *len);

#endif /* DIST_IO_H */
