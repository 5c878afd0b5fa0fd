/* gate_open.c: a gate for end-to-end tests, loaded with LD_PRELOAD into
 * the process under test. Opening a file whose path starts with
 * SL_GATE_PREFIX, after SL_GATE_AFTER such opens (default 0), first opens
 * the FIFO SL_GATE_FIFO for reading and reads it to its end: the process
 * waits there until the test opens the FIFO for writing (which tells the
 * test the process has reached the gate) and then closes it. Without the
 * variables every open passes straight through. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

int open(const char *path, int flags, ...);

static atomic_long seen;

int open(const char *path, int flags, ...)
{
    int (*real_open)(const char *, int, ...) =
        (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    const char *prefix = getenv("SL_GATE_PREFIX"), *fifo = getenv("SL_GATE_FIFO");
    const char *after = getenv("SL_GATE_AFTER");
    mode_t mode = 0;
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (prefix && fifo && strncmp(path, prefix, strlen(prefix)) == 0 &&
        atomic_fetch_add(&seen, 1) == (after ? atol(after) : 0)) {
        int g = real_open(fifo, O_RDONLY);
        char c;
        while (g >= 0 && read(g, &c, 1) > 0)
            ;
        if (g >= 0)
            close(g);
    }
    return real_open(path, flags, mode);
}
