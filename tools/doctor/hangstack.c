/* hangstack.c - which collective a rank's threads are in, read from their
 * stacks.
 *
 * A rank that calls another collective than the others (a broadcast where
 * they all-reduce) waits as they do: in futex and epoll_wait, with every
 * socket queue empty, so /proc's states and the socket tables cannot tell
 * it apart.  Its stack can.  The kernel shows each blocked thread's stack
 * pointer (/proc/PID/task/TID/syscall) and, to the process's own user, its
 * memory (/proc/PID/mem): reading them neither stops nor slows the process,
 * as a ptrace attach would.  Each word above the stack pointer that points
 * into an executable file mapping is looked up in that file's symbol tables
 * (.symtab, else .dynsym), and the innermost one that is a collective's
 * entry point (hang_collective_symbol) is the thread's.
 *
 * This is a scan, not an unwind (the libraries have no frame pointers): a
 * word may be a stale return address of an earlier call.  The innermost
 * match is nearly always the live frame, and the verdict uses these names
 * only to tell the ranks apart, after every rule of /proc has found none.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hang.h"

#define MAPS_MAX (4 * 1024 * 1024) /* bytes of /proc/PID/maps read */
#define EXEC_MAPS_MAX 8192 /* executable file mappings kept */
#define FILES_MAX 1024 /* files whose symbols are looked at, per process */
#define THREADS_MAX 1024 /* threads of one process scanned */
#define LOADS_MAX 16 /* PT_LOAD segments of one file */
#define PHDRS_MAX 256 /* program headers looked at */
#define TABLE_MAX (64 * 1024 * 1024) /* bytes of one symbol or string table */
#define FUNCS_MAX 4096 /* collective functions kept per file */

struct func {
    uint64_t start, end; /* the file's virtual addresses */
    char name[HANG_WAIT_MAX];
};

struct file {
    unsigned long dev_major, dev_minor, inode;
    unsigned long long start, end; /* one mapping of it */
    char path[512];
    bool loaded, usable;
    struct {
        uint64_t offset, vaddr, size;
    } load[LOADS_MAX];
    size_t nload, nfunc;
    struct func *func;
};

struct exec_map {
    uint64_t start, end, offset;
    struct file *file;
};

struct stack_scan {
    const char *root;
    long pid;
    hang_symbol_match match;
    struct exec_map *map;
    size_t nmap;
    struct file *file;
    size_t nfile;
};

/* The collectives of gloo (C++, its exported gloo::NAME functions) and of
 * MPI (MPI_NAME and the profiling PMPI_NAME). */
static const char *const gloo_names[] = {
    "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "barrier",
    "broadcast", "gather",     "gatherv",   "reduce",   "scatter",
};
static const char *const mpi_names[] = {
    "Allgather", "Allgatherv", "Allreduce", "Alltoall", "Alltoallv",      "Barrier",
    "Bcast",     "Gather",     "Gatherv",   "Reduce",   "Reduce_scatter", "Scatter",
};

static bool one_of (const char *name, size_t len, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen (list[i]) == len && memcmp (list[i], name, len) == 0)
            return true;
    return false;
}

bool hang_collective_symbol (const char *name, char *out, size_t size)
{
    const char *p;
    char *end;
    unsigned long len;

    /* _ZN4gloo9broadcastE...: gloo::broadcast(...), and not gloo::x::broadcast */
    if (strncmp (name, "_ZN4gloo", 8) == 0 && name[8] >= '1' && name[8] <= '9') {
        len = strtoul (name + 8, &end, 10);
        if (len < 32 && strnlen (end, len + 1) > len && end[len] == 'E'
            && one_of (end, len, gloo_names, sizeof (gloo_names) / sizeof (gloo_names[0]))) {
            snprintf (out, size, "gloo::%.*s", (int) len, end);
            return true;
        }
        return false;
    }
    p = strncmp (name, "PMPI_", 5) == 0  ? name + 5
        : strncmp (name, "MPI_", 4) == 0 ? name + 4
                                         : NULL;
    if (p != NULL
        && one_of (p, strlen (p), mpi_names, sizeof (mpi_names) / sizeof (mpi_names[0]))) {
        snprintf (out, size, "MPI_%s", p);
        return true;
    }
    return false;
}

static bool read_at (int fd, void *buf, size_t size, uint64_t offset)
{
    size_t got = 0;
    ssize_t n;

    if (offset > (uint64_t) INT64_MAX - size)
        return false;
    while (got < size) {
        n = pread (fd, (char *) buf + got, size - got, (off_t) (offset + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        got += (size_t) n;
    }
    return true;
}

/* A section's contents, whole, or NULL (too large, or outside the file). */
static void *section (int fd, const Elf64_Shdr *sh, off_t file_size)
{
    void *buf;

    if (sh->sh_size == 0 || sh->sh_size > TABLE_MAX || sh->sh_offset > (uint64_t) file_size
        || sh->sh_size > (uint64_t) file_size - sh->sh_offset
        || (buf = malloc (sh->sh_size)) == NULL)
        return NULL;
    if (!read_at (fd, buf, sh->sh_size, sh->sh_offset)) {
        free (buf);
        return NULL;
    }
    return buf;
}

/* The collective functions of one symbol table (sh) into f. */
static void table_funcs (struct stack_scan *sc, struct file *f, int fd, const Elf64_Shdr *shdr,
                         size_t nsec, const Elf64_Shdr *sh, off_t file_size)
{
    Elf64_Sym *sym;
    char *str;
    size_t nsym, strsize;

    if (sh->sh_entsize != sizeof (Elf64_Sym) || sh->sh_link >= nsec)
        return;
    sym = section (fd, sh, file_size);
    str = section (fd, &shdr[sh->sh_link], file_size);
    nsym = sym != NULL ? sh->sh_size / sizeof (Elf64_Sym) : 0;
    strsize = str != NULL ? shdr[sh->sh_link].sh_size : 0;
    for (size_t i = 0; i < nsym && str != NULL && f->nfunc < FUNCS_MAX; i++) {
        struct func fn;
        if (ELF64_ST_TYPE (sym[i].st_info) != STT_FUNC || sym[i].st_size == 0
            || sym[i].st_value > UINT64_MAX - sym[i].st_size || sym[i].st_name >= strsize
            || memchr (str + sym[i].st_name, '\0', strsize - sym[i].st_name) == NULL
            || !sc->match (str + sym[i].st_name, fn.name, sizeof (fn.name)))
            continue;
        fn.start = sym[i].st_value;
        fn.end = sym[i].st_value + sym[i].st_size;
        f->func[f->nfunc++] = fn;
    }
    free (sym);
    free (str);
}

/* Whether fd is a 64-bit ELF file of this machine's byte order; its header into eh. */
static bool elf_header (int fd, Elf64_Ehdr *eh)
{
    const unsigned char order =
        (const unsigned char) (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB
                                                                         : ELFDATA2MSB);

    return read_at (fd, eh, sizeof (*eh), 0) && memcmp (eh->e_ident, ELFMAG, SELFMAG) == 0
           && eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_ident[EI_DATA] == order
           && eh->e_phentsize == sizeof (Elf64_Phdr) && eh->e_shentsize == sizeof (Elf64_Shdr)
           && eh->e_shnum > 0;
}

/* The file's PT_LOAD segments (file offset to address) and its collective functions. */
static void file_load (struct stack_scan *sc, struct file *f, int fd, off_t file_size)
{
    Elf64_Ehdr eh;
    Elf64_Phdr ph;
    Elf64_Shdr *shdr = NULL;
    bool have_symtab = false;

    if (!elf_header (fd, &eh))
        return;
    for (size_t i = 0; i < eh.e_phnum && i < PHDRS_MAX && f->nload < LOADS_MAX; i++) {
        if (!read_at (fd, &ph, sizeof (ph), eh.e_phoff + i * sizeof (ph)))
            return;
        if (ph.p_type != PT_LOAD || ph.p_offset > UINT64_MAX - ph.p_filesz)
            continue;
        f->load[f->nload].offset = ph.p_offset;
        f->load[f->nload].vaddr = ph.p_vaddr;
        f->load[f->nload++].size = ph.p_filesz;
    }
    if ((shdr = calloc (eh.e_shnum, sizeof (*shdr))) == NULL
        || (f->func = calloc (FUNCS_MAX, sizeof (*f->func))) == NULL
        || !read_at (fd, shdr, eh.e_shnum * sizeof (*shdr), eh.e_shoff)) {
        free (shdr);
        return;
    }
    for (size_t i = 0; i < eh.e_shnum; i++)
        have_symtab |= shdr[i].sh_type == SHT_SYMTAB;
    /* (a file with .symtab has every function of .dynsym in it too) */
    for (size_t i = 0; i < eh.e_shnum; i++)
        if (shdr[i].sh_type == (have_symtab ? SHT_SYMTAB : SHT_DYNSYM))
            table_funcs (sc, f, fd, shdr, eh.e_shnum, &shdr[i], file_size);
    free (shdr);
    f->usable = f->nfunc > 0;
    if (!f->usable) {
        free (f->func);
        f->func = NULL;
    }
}

/* The file as the process sees it (its own root: a container's), checked to be the
 * mapped one; its symbols read once. */
static void file_open (struct stack_scan *sc, struct file *f)
{
    char path[640];
    struct stat st;
    int fd;

    f->loaded = true;
    /* The mapped file itself, where the kernel lets us (map_files: root only): a probe
     * run as root must not open what a path, which the user chose, leads to.  Else (the
     * job's user, who may open nothing more than the user can) by its path in the
     * process's root.  (O_NONBLOCK: a FIFO put where the library was must not hold the
     * probe.) */
    snprintf (path, sizeof (path), "%s/%ld/map_files/%llx-%llx", sc->root, sc->pid, f->start,
              f->end);
    fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && geteuid () != 0) {
        snprintf (path, sizeof (path), "%s/%ld/root%s", sc->root, sc->pid, f->path);
        fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    }
    if (fd < 0)
        return;
    if (fstat (fd, &st) == 0 && S_ISREG (st.st_mode) && st.st_ino == f->inode)
        file_load (sc, f, fd, st.st_size);
    close (fd);
}

static struct file *file_of (struct stack_scan *sc, const struct exec_map *m, unsigned long major,
                             unsigned long minor, unsigned long inode, const char *path)
{
    struct file *f;

    for (size_t i = 0; i < sc->nfile; i++) {
        f = &sc->file[i];
        if (f->inode == inode && f->dev_major == major && f->dev_minor == minor)
            return f;
    }
    if (sc->nfile >= FILES_MAX || strlen (path) >= sizeof (f->path))
        return NULL;
    f = &sc->file[sc->nfile++];
    memset (f, 0, sizeof (*f));
    f->dev_major = major;
    f->dev_minor = minor;
    f->inode = inode;
    f->start = m->start;
    f->end = m->end;
    snprintf (f->path, sizeof (f->path), "%s", path);
    return f;
}

/* One line of /proc/PID/maps: an executable mapping of a file is kept. */
static void maps_line (struct stack_scan *sc, char *line)
{
    unsigned long long start, end, offset;
    unsigned long major, minor, inode;
    char perms[8];
    int used = 0;
    char *path;
    size_t len;

    if (sscanf (line, "%llx-%llx %7s %llx %lx:%lx %lu %n", &start, &end, perms, &offset, &major,
                &minor, &inode, &used)
            < 7
        || used == 0 || perms[2] != 'x' || inode == 0 || sc->nmap >= EXEC_MAPS_MAX)
        return;
    path = line + used;
    len = strlen (path);
    if (path[0] != '/' || (len > 10 && strcmp (path + len - 10, " (deleted)") == 0))
        return;
    sc->map[sc->nmap].start = start;
    sc->map[sc->nmap].end = end;
    sc->map[sc->nmap].offset = offset;
    if ((sc->map[sc->nmap].file = file_of (sc, &sc->map[sc->nmap], major, minor, inode, path))
        != NULL)
        sc->nmap++;
}

static int maps_read (struct stack_scan *sc)
{
    char path[64], *buf, *line, *next;
    size_t got = 0;
    ssize_t n;
    int fd;

    snprintf (path, sizeof (path), "%s/%ld/maps", sc->root, sc->pid);
    if ((fd = open (path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    if ((buf = malloc (MAPS_MAX)) == NULL) {
        close (fd);
        return -1;
    }
    while (got + 1 < MAPS_MAX && (n = read (fd, buf + got, MAPS_MAX - 1 - got)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        got += (size_t) n;
    }
    close (fd);
    buf[got] = '\0';
    for (line = buf; line != NULL && *line != '\0'; line = next) {
        if ((next = strchr (line, '\n')) != NULL)
            *next++ = '\0';
        maps_line (sc, line);
    }
    free (buf);
    return 0;
}

/* The collective function that address w is in, or NULL. */
static const char *function_at (struct stack_scan *sc, uint64_t w)
{
    size_t lo = 0, hi = sc->nmap;
    const struct exec_map *m;
    struct file *f;
    uint64_t off;

    /* (maps lists mappings in address order) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w < sc->map[mid].start)
            hi = mid;
        else if (w >= sc->map[mid].end)
            lo = mid + 1;
        else
            break;
    }
    if (lo >= hi)
        return NULL;
    m = &sc->map[lo + (hi - lo) / 2];
    f = m->file;
    if (!f->loaded)
        file_open (sc, f);
    if (!f->usable)
        return NULL;
    off = w - m->start + m->offset;
    for (size_t i = 0; i < f->nload; i++) {
        uint64_t vaddr;
        if (off < f->load[i].offset || off - f->load[i].offset >= f->load[i].size)
            continue;
        vaddr = off - f->load[i].offset + f->load[i].vaddr;
        for (size_t j = 0; j < f->nfunc; j++)
            if (vaddr >= f->func[j].start && vaddr < f->func[j].end)
                return f->func[j].name;
        return NULL;
    }
    return NULL;
}

/* Add name to the '+'-separated list in out, once. */
static void names_add (char *out, size_t size, const char *name)
{
    size_t len = strlen (name), have = strlen (out);

    for (const char *p = out; *p != '\0';) {
        const char *plus = strchr (p, '+');
        size_t n = plus != NULL ? (size_t) (plus - p) : strlen (p);
        if (n == len && memcmp (p, name, len) == 0)
            return;
        p += n + (plus != NULL);
    }
    if (have + (have > 0) + len + 1 > size)
        return;
    snprintf (out + have, size - have, "%s%s", have > 0 ? "+" : "", name);
}

/* One thread: its stack pointer from its syscall file, the words above it from mem. */
static void thread_scan (struct stack_scan *sc, int mem, long tid, uint64_t *stack, char *out,
                         size_t size)
{
    char path[96], text[256], *tok[10], *save = NULL;
    unsigned long long sp;
    ssize_t n;
    size_t ntok = 0;
    int fd;

    snprintf (path, sizeof (path), "%s/%ld/task/%ld/syscall", sc->root, sc->pid, tid);
    if ((fd = open (path, O_RDONLY | O_CLOEXEC)) < 0)
        return;
    n = read (fd, text, sizeof (text) - 1);
    close (fd);
    if (n <= 0)
        return;
    text[n] = '\0';
    /* "NR ARG1 ... ARG6 SP PC", or "-1 SP PC" (blocked outside a syscall), or "running" */
    for (char *t = strtok_r (text, " \n", &save); t != NULL && ntok < 10;
         t = strtok_r (NULL, " \n", &save))
        tok[ntok++] = t;
    if (ntok < 3 || sscanf (tok[ntok - 2], "%llx", &sp) != 1 || sp % sizeof (uint64_t) != 0)
        return;
    n = pread (mem, stack, HANG_STACK_SCAN, (off_t) sp);
    for (ssize_t i = 0; n > 0 && i < n / (ssize_t) sizeof (uint64_t); i++) {
        const char *name = function_at (sc, stack[i]);
        if (name != NULL) {
            names_add (out, size, name);
            return;
        }
    }
}

int hang_stack_collectives (const char *proc_root, long pid, hang_symbol_match match, char *out,
                            size_t size)
{
    struct stack_scan sc = {.root = proc_root, .pid = pid, .match = match};
    char path[64];
    uint64_t *stack = NULL;
    struct dirent *e;
    size_t nthread = 0;
    int mem = -1, rc = -1;
    DIR *d = NULL;

    snprintf (path, sizeof (path), "%s/%ld/mem", proc_root, pid);
    if ((mem = open (path, O_RDONLY | O_CLOEXEC)) < 0
        || (sc.map = calloc (EXEC_MAPS_MAX, sizeof (*sc.map))) == NULL
        || (sc.file = calloc (FILES_MAX, sizeof (*sc.file))) == NULL
        || (stack = malloc (HANG_STACK_SCAN)) == NULL || maps_read (&sc) < 0)
        goto out;
    snprintf (path, sizeof (path), "%s/%ld/task", proc_root, pid);
    if ((d = opendir (path)) == NULL)
        goto out;
    while ((e = readdir (d)) != NULL && nthread < THREADS_MAX)
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
            thread_scan (&sc, mem, strtol (e->d_name, NULL, 10), stack, out, size);
            nthread++;
        }
    closedir (d);
    rc = 0;
out:
    if (mem >= 0)
        close (mem);
    for (size_t i = 0; sc.file != NULL && i < sc.nfile; i++)
        free (sc.file[i].func);
    free (sc.file);
    free (sc.map);
    free (stack);
    return rc;
}
