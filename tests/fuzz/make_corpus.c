/* make_corpus.c: writes the seed corpora of the fuzz harnesses into
 * DIR/<harness>/ (tests/fuzz/corpus holds what it wrote; rerun it there
 * when a format changes: `tests/fuzz/make_corpus $(srcdir)/tests/fuzz/corpus`
 * from a fuzz build):
 *   idx/         IDX image and label files, plain and gzip
 *   decode/      small JPEGs: grayscale, RGB 4:2:0, progressive, arithmetic
 *                coded with restart markers, CMYK with an Adobe marker
 *   checkpoint/  checkpoints of fz_checkpoint_graph, saved by the library
 *                with and without Momentum's accumulators
 *   cli_options/ command lines of `bench pipeline`
 * Every file is well formed: the fuzzer mutates from there. A tool, not
 * library code: it stops at the first failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>

#include "tests/fuzz/fuzz_util.h"
#include "tests/testutil.h"

static const char *top;

static void fail(const char *what)
{
    fprintf(stderr, "make_corpus: %s\n", what);
    exit(1);
}

/* top/sub, made if missing. */
static char *folder(const char *sub)
{
    char *dir = tu_path(top, sub);
    if (dir == NULL || (mkdir(dir, 0777) != 0 && errno != EEXIST))
        fail(sub);
    return dir;
}

static void write_file(const char *dir, const char *name, const void *data, size_t n, int gz)
{
    char *path = tu_path(dir, name);
    if (path == NULL || tu_write_bytes(path, data, n, gz) != 0)
        fail(name);
    printf("%s (%zu bytes%s)\n", path, n, gz ? " before gzip" : "");
    free(path);
}

static void idx_seeds(void)
{
    char *dir = folder("idx");
    char *path;
    /* images: 2 of 3x3; labels: 2 */
    static const char *names[4] = {"images.idx", "images.idx.gz", "labels.idx",
                                   "labels.idx.gz"};
    for (int i = 0; i < 4; i++) {
        path = tu_path(dir, names[i]);
        if (path == NULL || (i < 2 ? tu_write_idx_images(path, 2, 3, 3, i == 1)
                                   : tu_write_idx_labels(path, 2, i == 3)) != 0)
            fail(names[i]);
        printf("%s\n", path);
        free(path);
    }
    free(dir);
}

typedef struct jpeg_seed {
    const char *name;
    int w, h;
    J_COLOR_SPACE space; /* JCS_GRAYSCALE, JCS_RGB or JCS_CMYK */
    int progressive, arith, restart_rows;
} jpeg_seed;

static void jpeg_seed_write(const char *dir, const jpeg_seed *s)
{
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    int c = s->space == JCS_GRAYSCALE ? 1 : s->space == JCS_RGB ? 3 : 4;
    uint8_t *px = malloc((size_t)s->w * (size_t)s->h * (size_t)c); /* (h, w, c) */
    unsigned char *buf = NULL;
    unsigned long len = 0;

    if (px == NULL)
        fail("out of memory");
    for (int y = 0; y < s->h; y++)
        for (int x = 0; x < s->w; x++)
            for (int k = 0; k < c; k++)
                px[((size_t)y * (size_t)s->w + (size_t)x) * (size_t)c + (size_t)k] =
                    (uint8_t)(x * 16 + y * 8 + k * 64);
    cinfo.err = jpeg_std_error(&jerr); /* errors exit: fine for a tool */
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &buf, &len);
    cinfo.image_width = (JDIMENSION)s->w;
    cinfo.image_height = (JDIMENSION)s->h;
    cinfo.input_components = c;
    cinfo.in_color_space = s->space;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 75, TRUE);
    if (s->space == JCS_CMYK)
        jpeg_set_colorspace(&cinfo, JCS_YCCK); /* writes the Adobe marker */
    if (s->progressive)
        jpeg_simple_progression(&cinfo);
    cinfo.arith_code = s->arith ? TRUE : FALSE;
    cinfo.restart_in_rows = s->restart_rows;
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = px + (size_t)cinfo.next_scanline * (size_t)s->w * (size_t)c;
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    write_file(dir, s->name, buf, (size_t)len, 0);
    free(buf);
    free(px);
}

static void decode_seeds(void)
{
    static const jpeg_seed seeds[] = {
        {"gray_8x8.jpg", 8, 8, JCS_GRAYSCALE, 0, 0, 0},
        {"rgb420_16x16.jpg", 16, 16, JCS_RGB, 0, 0, 0},
        {"rgb_progressive_12x10.jpg", 12, 10, JCS_RGB, 1, 0, 0},
        {"rgb_arith_restart_16x16.jpg", 16, 16, JCS_RGB, 0, 1, 1},
        {"cmyk_adobe_8x8.jpg", 8, 8, JCS_CMYK, 0, 0, 0},
    };
    char *dir = folder("decode");
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        jpeg_seed_write(dir, &seeds[i]);
    free(dir);
}

static void checkpoint_seeds(void)
{
    char *dir = folder("checkpoint");
    for (int opt = 0; opt < 2; opt++) {
        sl_graph *g = fz_checkpoint_graph(opt);
        char *path = tu_path(dir, opt ? "mlp_momentum.ckpt" : "mlp.ckpt");
        if (g == NULL || path == NULL || sl_checkpoint_save(g, path, 7 + opt) != SL_OK)
            fail(g ? sl_graph_last_error(g) : "checkpoint network");
        printf("%s\n", path);
        free(path);
        sl_graph_free(g);
    }
    free(dir);
}

static void cli_seeds(void)
{
    static const char *lines[][2] = {
        {"defaults.txt", "--workers 1,2 --repeats 1 --epochs 1 --seed 3\n"},
        {"lenet_ops.txt", "--label-int32 --resize 32x32 --rescale 1/255 "
                          "--rescale 1/0.3081,-0.1307/0.3081 --hwc2chw --shuffle 100 "
                          "--batch 2\n"},
        {"imagenet_ops.txt", "--resize 224 --flip 0.5 --normalize 123.675,116.28,103.53:"
                             "58.395,57.12,57.375 --hwc2chw --batch 1 --keep-remainder\n"},
        {"crop_sampler.txt", "--crop 24x20,4 --no-source-shuffle --num-samples 2 "
                             "--usage all --decode-max-pixels 4096 --json\n"},
        {"bad.txt", "--batch=-1 --shuffle 1 --bogus x --resize 0x3 extra\n"},
    };
    char *dir = folder("cli_options");
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        write_file(dir, lines[i][0], lines[i][1], strlen(lines[i][1]), 0);
    free(dir);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus DIR\n");
        return 2;
    }
    top = argv[1];
    if (mkdir(top, 0777) != 0 && errno != EEXIST)
        fail(top);
    idx_seeds();
    decode_seeds();
    checkpoint_seeds();
    cli_seeds();
    return 0;
}
