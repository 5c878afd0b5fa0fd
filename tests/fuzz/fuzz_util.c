/* fuzz_util.c: see fuzz_util.h. */
#include "tests/fuzz/fuzz_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/testutil.h"

static char *tmpdir;

/* AddressSanitizer's defaults for every harness (ASAN_OPTIONS still
 * overrides them). A freed block waits in quarantine, so that a use after
 * free is caught, until 256 MiB more are freed; these harnesses free a few
 * hundred KiB per input (zlib's state for each file opened), so with that
 * default every allocation lands on fresh pages and page faults halve the
 * rate of fuzz_idx and fuzz_checkpoint. 16 MiB still holds a block for
 * dozens of inputs, far longer than any input runs. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=16";
}

static void remove_tmpdir(void)
{
    tu_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

const char *fz_tmpdir(void)
{
    if (tmpdir == NULL) {
        tmpdir = tu_mkdtemp();
        if (tmpdir == NULL) {
            perror("fuzz: cannot make a temporary folder");
            abort();
        }
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

char *fz_path(const char *name)
{
    char *p = tu_path(fz_tmpdir(), name);
    if (p == NULL)
        abort();
    return p;
}

/* data as a gzip stream, malloc'd into *out. zlib's gzwrite would set up
 * a 32 KiB window and 256 KiB of deflate state for every input; inputs are
 * a few KiB, so a 4 KiB window and the smallest state do (any inflater
 * reads the result, whatever window it was made with). */
static size_t gzip_small(const void *data, size_t n, unsigned char **out)
{
    z_stream z;
    size_t cap;

    memset(&z, 0, sizeof z);
    if (n > UINT32_MAX / 2 ||
        deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 12, 1, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    cap = deflateBound(&z, (uLong)n);
    *out = malloc(cap);
    if (*out == NULL)
        abort();
    z.next_in = (Bytef *)(uintptr_t)data;
    z.avail_in = (uInt)n;
    z.next_out = *out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        abort();
    deflateEnd(&z);
    return cap - z.avail_out;
}

/* Writes all of data[0..n) to fd; 0 or -1. */
static int write_all(int fd, const unsigned char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        data += w;
        n -= (size_t)w;
    }
    return 0;
}

void fz_write(const char *path, const void *data, size_t n, int gz)
{
    unsigned char *packed = NULL;
    int fd, rc;

    if (gz)
        n = gzip_small(data, n, &packed);
    /* The file is overwritten in place and then cut to length, neither
     * truncated to 0 first (ext4 then flushes it when it is closed,
     * auto_da_alloc: milliseconds per input) nor made anew (ext4 looks for
     * a free inode that was not recently deleted: tens of microseconds). */
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    rc = fd < 0 ? -1 : write_all(fd, gz ? packed : data, n);
    if (rc == 0)
        rc = ftruncate(fd, (off_t)n);
    if (fd >= 0 && close(fd) != 0)
        rc = -1;
    free(packed);
    if (rc != 0) {
        fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
}

sl_graph *fz_checkpoint_graph(int with_optimizer)
{
    sl_graph *g;
    sl_network_options o;
    sl_network net;
    int rc;

    if (sl_graph_new(&g) != SL_OK)
        return NULL;
    sl_network_options_init(&o);
    o.kind = SL_NETWORK_MLP;
    o.batch = 1;
    o.channels = 1;
    o.height = 2;
    o.width = 2;
    o.num_classes = 2;
    o.hidden[0] = 3;
    o.nhidden = 1;
    rc = sl_network_build(g, &o, &net);
    if (rc >= 0 && with_optimizer) {
        rc = sl_graph_backward(g, net.loss);
        if (rc >= 0)
            rc = sl_graph_momentum(g, 0.01f, 0.9f);
    }
    if (rc < 0) {
        fprintf(stderr, "fuzz: cannot build the checkpoint network: %s\n",
                sl_graph_last_error(g));
        sl_graph_free(g);
        return NULL;
    }
    return g;
}
