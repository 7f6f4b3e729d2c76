/* LD_PRELOAD allocation counter for scripts/alloc-rate.sh (no dependencies: cc -shared -fPIC).
 *
 * Interposes malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign, valloc
 * and pvalloc, forwards each to glibc's own __libc_* entry points (so no dlsym and no
 * recursion) and counts every call, from every thread, with relaxed atomics.
 *
 * Reading the counts: the counters live in one static array. At load the library writes
 * "<hex address of the array> <slot count>" to $ALLOC_COUNT_DIR/addr.<pid>; the measuring
 * script reads the array straight out of /proc/<pid>/mem at any moment it likes (no signal,
 * no extra thread, nothing in the measured process changes). At exit the counts are also
 * written to $ALLOC_COUNT_DIR/exit.<pid> as "name value" lines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

enum { MALLOC, CALLOC, REALLOC, FREE, POSIX_MEMALIGN, ALIGNED_ALLOC, MEMALIGN, VALLOC, PVALLOC, BYTES, NSLOTS };
static const char *const names[NSLOTS] = {"malloc", "calloc", "realloc", "free", "posix_memalign",
                                          "aligned_alloc", "memalign", "valloc", "pvalloc", "bytes"};

/* Slot 0 of the exported block is a magic number, so a wrong address shows at once. */
#define MAGIC 0x414c4c4f43434e54ull /* "ALLOCCNT" */
static _Atomic uint64_t block[1 + NSLOTS] __attribute__((aligned(64))) = {MAGIC};

static inline void count(int slot, size_t bytes) {
    atomic_fetch_add_explicit(&block[1 + slot], 1, memory_order_relaxed);
    if (bytes) atomic_fetch_add_explicit(&block[1 + BYTES], bytes, memory_order_relaxed);
}

void *malloc(size_t n) { count(MALLOC, n); return __libc_malloc(n); }
void *calloc(size_t k, size_t n) { count(CALLOC, k * n); return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { count(REALLOC, n); return __libc_realloc(p, n); }
void free(void *p) { if (p) count(FREE, 0); __libc_free(p); }
void *memalign(size_t a, size_t n) { count(MEMALIGN, n); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { count(ALIGNED_ALLOC, n); return __libc_memalign(a, n); }
void *valloc(size_t n) { count(VALLOC, n); return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), n); }
void *pvalloc(size_t n) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    count(PVALLOC, n);
    return __libc_memalign(pg, (n + pg - 1) / pg * pg);
}
int posix_memalign(void **out, size_t a, size_t n) {
    count(POSIX_MEMALIGN, n);
    if (a < sizeof(void *) || (a & (a - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(a, n);
    if (!p && n) return ENOMEM;
    *out = p;
    return 0;
}

/* Formatting without stdio allocations: snprintf into a stack buffer, write(2). */
static void write_file(const char *prefix, const char *body, size_t len) {
    const char *dir = getenv("ALLOC_COUNT_DIR");
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%ld", dir, prefix, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ssize_t r = write(fd, body, len);
    (void)r;
    close(fd);
}

__attribute__((constructor)) static void alloc_count_start(void) {
    char line[128];
    int n = snprintf(line, sizeof line, "%lx %d\n", (unsigned long)(uintptr_t)&block[0], 1 + NSLOTS);
    write_file("addr", line, (size_t)n);
}

__attribute__((destructor)) static void alloc_count_stop(void) {
    char text[1024];
    size_t len = 0;
    for (int i = 0; i < NSLOTS; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s %llu\n", names[i],
                                (unsigned long long)atomic_load_explicit(&block[1 + i], memory_order_relaxed));
    write_file("exit", text, len);
}
