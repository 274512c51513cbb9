/* io.c - whole reads and writes that survive short counts and EINTR. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

int dist_write_all (int fd, const void *buf, size_t len)
{
    const char *p = buf;
    size_t off = 0;
    ssize_t n;

    while (off < len) {
        n = write (fd, p + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        off += (size_t) n;
    }
    return 0;
}

ssize_t dist_read_all (int fd, char *buf, size_t size)
{
    size_t got = 0;
    ssize_t n;
    char extra;

    if (size == 0) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        /* one byte past a full buffer tells a file of exactly size - 1 bytes from a larger one */
        if (got == size - 1)
            n = read (fd, &extra, 1);
        else
            n = read (fd, buf + got, size - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        if (got == size - 1) {
            errno = EFBIG;
            return -1;
        }
        got += (size_t) n;
    }
    buf[got] = '\0';
    return (ssize_t) got;
}

static bool owner_allows (const struct stat *st, enum dist_file_owner owner)
{
    if (owner == DIST_FILE_ANYONE)
        return true;
    return st->st_uid == 0 && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

char *dist_read_file (const char *path, size_t max, enum dist_file_owner owner, size_t *len)
{
    int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    struct stat st;
    char *text = NULL;
    ssize_t n;
    int fd, saved;

    if (owner == DIST_FILE_ROOT_ONLY)
        flags |= O_NOFOLLOW;
    if ((fd = open (path, flags)) < 0)
        return NULL;
    if (fstat (fd, &st) < 0)
        goto fail;
    if (!S_ISREG (st.st_mode) || !owner_allows (&st, owner)) {
        errno = EACCES;
        goto fail;
    }
    /* The size in stat only narrows the bound, never refuses by itself: /proc's
     * files say 0 and /sys's a page, whatever their text, so the read decides
     * (EFBIG past the bound).  A file that grows while it is read is refused
     * rather than read in part. */
    if (st.st_size > 0 && (size_t) st.st_size < max)
        max = (size_t) st.st_size;
    if ((text = malloc (max + 1)) == NULL || (n = dist_read_all (fd, text, max + 1)) < 0)
        goto fail;
    close (fd);
    *len = (size_t) n;
    return text;
fail:
    saved = errno;
    free (text);
    close (fd);
    errno = saved;
    return NULL;
}
