/* fuzz_idx.c: libFuzzer harness of the IDX reader (pipeline/idx.c) as the
 * MNIST source uses it (pipeline/mnist.c): the input is one IDX file of
 * the train split, plain or gzip as its bytes are.
 *
 * An input whose magic says one dimension (byte 3 is 1) is the labels
 * file; any other is the images file. The other file of the pair is made
 * valid by the harness, with the sample count the input's header gives
 * (at most PARTNER_MAX), so every check of the pair is reached: both
 * headers, the counts, the image size, the payload and the gzip trailer.
 * Each input is read as its bytes are (a gzip seed stays gzip), and one
 * that starts as an IDX file again gzip-compressed by the harness under
 * the ".gz" names, so mutated contents also reach the reader through a
 * valid gzip stream.
 *
 * A read that succeeds is followed by reading the first and last rows.
 * Refusals are expected; only crashes, sanitizer reports and leaks count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pipeline/source.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/testutil.h"

#define PARTNER_MAX 4096u /* samples in the harness's half of the pair */
#define PARTNER_SIDE 2u   /* the harness's images are 2x2 */

static char *plain_dir, *gz_dir;

static void cleanup(void)
{
    free(plain_dir);
    free(gz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    plain_dir = fz_path("plain");
    gz_dir = fz_path("gz");
    if (mkdir(plain_dir, 0700) != 0 || mkdir(gz_dir, 0700) != 0)
        abort();
    atexit(cleanup);
    return 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Opens dir's train split, loads it and reads its first and last rows. */
static void read_split(const char *dir)
{
    sl_mnist_options o;
    sl__source *src = NULL;
    sl__error err;
    sl__row row;

    sl_mnist_options_init(&o);
    o.dataset_dir = dir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler.shuffle = 0;
    memset(&err, 0, sizeof err);
    if (sl__mnist_source_new(&src, &o, &err) != SL_OK)
        return;
    if (src->iface->prepare(src, NULL, &err) == SL_OK) {
        int64_t last = src->num_rows - 1;
        for (int64_t i = 0; i <= last; i += last > 0 ? last : 1) {
            memset(&row, 0, sizeof row);
            src->iface->read(src, i, &row, NULL, &err);
            sl__row_clear(&row);
        }
    }
    sl__source_release(src);
}

/* The harness's half of the pair, n samples, into path: a label file
 * (magic 0x00000801) or a file of 2x2 images (0x00000803). */
static void write_partner(const char *path, int images, uint32_t n)
{
    size_t header = images ? 16 : 8, sample = images ? PARTNER_SIDE * PARTNER_SIDE : 1;
    size_t size = header + (size_t)n * sample;
    uint8_t *buf = malloc(size);
    uint32_t dims[3] = {n, PARTNER_SIDE, PARTNER_SIDE};

    if (buf == NULL)
        abort();
    buf[0] = buf[1] = 0;
    buf[2] = 8;
    buf[3] = images ? 3 : 1;
    for (size_t d = 0; d < (images ? 3u : 1u); d++)
        for (int b = 0; b < 4; b++)
            buf[4 + 4 * d + (size_t)b] = (uint8_t)(dims[d] >> (24 - 8 * b));
    for (size_t i = header; i < size; i++)
        buf[i] = (uint8_t)(i % 10);
    fz_write(path, buf, size, 0);
    free(buf);
}

/* Writes the pair into dir (the input gzip-compressed when gz is 1) and
 * reads it. */
static void pair(const char *dir, const uint8_t *data, size_t size, int gz)
{
    int labels = size >= 4 && data[3] == 1;
    uint32_t n = size >= 8 ? be32(data + 4) : 1;
    const char *suffix = gz ? ".gz" : "";
    char name[64];
    char *input, *partner;

    if (n > PARTNER_MAX)
        n = PARTNER_MAX;
    snprintf(name, sizeof name, "train-%s-ubyte%s", labels ? "labels-idx1" : "images-idx3",
             suffix);
    input = tu_path(dir, name);
    snprintf(name, sizeof name, "train-%s-ubyte%s", labels ? "images-idx3" : "labels-idx1",
             suffix);
    partner = tu_path(dir, name);
    if (input == NULL || partner == NULL)
        abort();
    fz_write(input, data, size, gz);
    write_partner(partner, labels, n);
    read_split(dir);
    free(input);
    free(partner);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pair(plain_dir, data, size, 0);
    /* Compressed, an input that does not start as an IDX file of bytes
     * does (00 00 08) is refused at the same magic check: skip it. */
    if (size >= 3 && data[0] == 0 && data[1] == 0 && data[2] == 8)
        pair(gz_dir, data, size, 1);
    return 0;
}
