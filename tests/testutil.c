/* testutil.c: temporary folders, generated IDX (MNIST) files and JPEGs, and
 * the known pixel patterns the Check suites compare against. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* mkdtemp, nftw */
#endif

#include "tests/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <check.h>
#include <jpeglib.h>
#include <zlib.h>

#define IDX_MAGIC_UBYTE_1D 0x00000801u /* labels: dims n */
#define IDX_MAGIC_UBYTE_3D 0x00000803u /* images: dims n, h, w */
#define MNIST_SIDE 28

/* --- temporary folders ---------------------------------------------- */

char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char *tmpl;
    size_t len;
    if (!base || !base[0])
        base = "/tmp";
    len = strlen(base) + sizeof "/sluice-test-XXXXXX";
    tmpl = malloc(len);
    if (!tmpl)
        return NULL;
    snprintf(tmpl, len, "%s/sluice-test-XXXXXX", base);
    if (!mkdtemp(tmpl)) {
        free(tmpl);
        return NULL;
    }
    return tmpl;
}

static int rmtree_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path); /* files and (now empty) folders alike; errors ignored */
    return 0;
}

void tu_rmtree(const char *path)
{
    if (path)
        nftw(path, rmtree_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_path(const char *dir, const char *name)
{
    size_t len = strlen(dir) + 1 + strlen(name) + 1;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s/%s", dir, name);
    return p;
}

/* --- known patterns -------------------------------------------------- */

uint8_t tu_pixel(uint32_t i, uint32_t y, uint32_t x)
{
    /* Image i+1 is image i shifted by 31 (mod 256) at every pixel, so no two
     * consecutive images match anywhere; within a 28x28 image every byte
     * value 0..255 occurs. */
    return (uint8_t)((i * 31u + y * 7u + x * 13u) & 0xffu);
}

uint8_t tu_label(uint32_t i)
{
    return (uint8_t)(i % 10u);
}

/* --- files ----------------------------------------------------------- */

static int write_gz(const char *path, const void *data, size_t n)
{
    const unsigned char *p = data;
    gzFile gz = gzopen(path, "wb");
    int ok = 1;
    if (!gz)
        return -1;
    while (ok && n > 0) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        ok = gzwrite(gz, p, chunk) == (int)chunk;
        p += chunk;
        n -= chunk;
    }
    if (gzclose(gz) != Z_OK)
        ok = 0;
    return ok ? 0 : -1;
}

static int write_plain(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f)
        return -1;
    ok = n == 0 || fwrite(data, 1, n, f) == n;
    if (fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

int tu_write_bytes(const char *path, const void *data, size_t n, int gz)
{
    return gz ? write_gz(path, data, n) : write_plain(path, data, n);
}

int tu_read_file(const char *path, void **data, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t cap = 0, len = 0;
    int ok = 1;
    if (!f)
        return -1;
    for (;;) {
        size_t got;
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            unsigned char *nbuf = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!nbuf) {
                ok = 0;
                break;
            }
            buf = nbuf;
            cap = ncap;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            ok = !ferror(f);
            break;
        }
    }
    fclose(f);
    if (!ok) {
        free(buf);
        return -1;
    }
    *data = buf;
    *n = len;
    return 0;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Images first .. first+n-1 of tu_pixel as an IDX file. */
static int write_idx_images_from(const char *path, uint32_t first, uint32_t n, uint32_t h,
                                 uint32_t w, int gz)
{
    size_t hw = (size_t)h * w, header = 16, total;
    unsigned char *buf, *px;
    int rc;
    if (w != 0 && hw / w != h)
        return -1;
    if (n != 0 && hw > ((size_t)-1 - header) / n)
        return -1;
    total = header + (size_t)n * hw;
    buf = malloc(total);
    if (!buf)
        return -1;
    put_be32(buf, IDX_MAGIC_UBYTE_3D);
    put_be32(buf + 4, n);
    put_be32(buf + 8, h);
    put_be32(buf + 12, w);
    px = buf + header; /* (n, h, w) */
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++)
                *px++ = tu_pixel(first + i, y, x);
    rc = tu_write_bytes(path, buf, total, gz);
    free(buf);
    return rc;
}

static int write_idx_labels_from(const char *path, uint32_t first, uint32_t n, int gz)
{
    size_t header = 8, total;
    unsigned char *buf;
    int rc;
    if ((size_t)n > (size_t)-1 - header)
        return -1;
    total = header + (size_t)n;
    buf = malloc(total);
    if (!buf)
        return -1;
    put_be32(buf, IDX_MAGIC_UBYTE_1D);
    put_be32(buf + 4, n);
    for (uint32_t i = 0; i < n; i++)
        buf[header + i] = tu_label(first + i); /* (n,) */
    rc = tu_write_bytes(path, buf, total, gz);
    free(buf);
    return rc;
}

int tu_write_idx_images(const char *path, uint32_t n, uint32_t h, uint32_t w, int gz)
{
    return write_idx_images_from(path, 0, n, h, w, gz);
}

int tu_write_idx_labels(const char *path, uint32_t n, int gz)
{
    return write_idx_labels_from(path, 0, n, gz);
}

/* One MNIST file: dir/name (+ ".gz"), images or labels from sample first. */
static int write_mnist_file(const char *dir, const char *name, int images, uint32_t first,
                            uint32_t n, int gz)
{
    char fname[64];
    char *path;
    int rc;
    snprintf(fname, sizeof fname, "%s%s", name, gz ? ".gz" : "");
    path = tu_path(dir, fname);
    if (!path)
        return -1;
    rc = images ? write_idx_images_from(path, first, n, MNIST_SIDE, MNIST_SIDE, gz)
                : write_idx_labels_from(path, first, n, gz);
    free(path);
    return rc;
}

int tu_make_mnist(const char *dir, uint32_t n_train, uint32_t n_test, int gz)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return -1;
    if (write_mnist_file(dir, "train-images-idx3-ubyte", 1, 0, n_train, gz) != 0 ||
        write_mnist_file(dir, "train-labels-idx1-ubyte", 0, 0, n_train, gz) != 0 ||
        write_mnist_file(dir, "t10k-images-idx3-ubyte", 1, n_train, n_test, gz) != 0 ||
        write_mnist_file(dir, "t10k-labels-idx1-ubyte", 0, n_train, n_test, gz) != 0)
        return -1;
    return 0;
}

char *tu_mnist_dir(uint32_t n_train, uint32_t n_test)
{
    char *dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(tu_make_mnist(dir, n_train, n_test, 0), 0);
    return dir;
}

void tu_mnist_dir_drop(char *dir)
{
    tu_rmtree(dir);
    free(dir);
}

/* --- images ---------------------------------------------------------- */

void tu_fill_image(uint8_t *px, int w, int h, int c, uint32_t seed)
{
    /* A triangle wave along a diagonal: continuous, so JPEG keeps it close.
     * px is (h, w, c). */
    uint64_t phase = (uint64_t)seed * 37u;
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            for (int ch = 0; ch < c; ch++) {
                uint64_t v = (phase + (uint64_t)x * 3u + (uint64_t)y * 2u + (uint64_t)ch * 85u) % 510u;
                px[((size_t)y * (size_t)w + (size_t)x) * (size_t)c + (size_t)ch] =
                    (uint8_t)(v > 255u ? 510u - v : v);
            }
        }
    }
}

/* Lives on the heap so its fields stay well defined across longjmp. */
typedef struct jpeg_enc {
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    jmp_buf jump;
    unsigned char *buf;
    unsigned long len;
} jpeg_enc;

static void jpeg_error_exit(j_common_ptr cinfo)
{
    jpeg_enc *enc = (jpeg_enc *)cinfo->client_data;
    longjmp(enc->jump, 1);
}

static void jpeg_silent(j_common_ptr cinfo, int level)
{
    (void)cinfo;
    (void)level;
}

int tu_encode_jpeg(uint8_t **out, size_t *out_len, const uint8_t *px, int w, int h, int c,
                   int quality)
{
    jpeg_enc *enc;
    if (!out || !out_len || !px || w <= 0 || h <= 0 || (c != 1 && c != 3))
        return -1;
    enc = calloc(1, sizeof *enc);
    if (!enc)
        return -1;
    enc->cinfo.err = jpeg_std_error(&enc->jerr);
    enc->jerr.error_exit = jpeg_error_exit;
    enc->jerr.emit_message = jpeg_silent;
    enc->cinfo.client_data = enc;
    if (setjmp(enc->jump) != 0) {
        jpeg_destroy_compress(&enc->cinfo);
        free(enc->buf);
        free(enc);
        return -1;
    }
    jpeg_create_compress(&enc->cinfo);
    jpeg_mem_dest(&enc->cinfo, &enc->buf, &enc->len);
    enc->cinfo.image_width = (JDIMENSION)w;
    enc->cinfo.image_height = (JDIMENSION)h;
    enc->cinfo.input_components = c;
    enc->cinfo.in_color_space = c == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&enc->cinfo);
    jpeg_set_quality(&enc->cinfo, quality, TRUE); /* baseline tables */
    jpeg_start_compress(&enc->cinfo, TRUE);
    while (enc->cinfo.next_scanline < enc->cinfo.image_height) {
        size_t y = enc->cinfo.next_scanline;
        JSAMPROW row = (JSAMPROW)(px + y * (size_t)w * (size_t)c); /* (w, c) */
        jpeg_write_scanlines(&enc->cinfo, &row, 1);
    }
    jpeg_finish_compress(&enc->cinfo);
    jpeg_destroy_compress(&enc->cinfo);
    *out = enc->buf;
    *out_len = (size_t)enc->len;
    free(enc);
    return 0;
}

int tu_write_jpeg(const char *path, const uint8_t *px, int w, int h, int c, int quality)
{
    uint8_t *buf;
    size_t len;
    int rc;
    if (tu_encode_jpeg(&buf, &len, px, w, h, c, quality) != 0)
        return -1;
    rc = tu_write_bytes(path, buf, len, 0);
    free(buf);
    return rc;
}

int tu_make_image_folder(const char *dir, int nclasses, int per_class, int w, int h)
{
    uint8_t *px; /* (h, w, 3) */
    int rc = 0;
    if (nclasses < 0 || per_class < 0 || w <= 0 || h <= 0)
        return -1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return -1;
    px = malloc((size_t)w * (size_t)h * 3);
    if (!px)
        return -1;
    for (int k = 0; k < nclasses && rc == 0; k++) {
        char name[32];
        char *cdir;
        snprintf(name, sizeof name, "class_%d", k);
        cdir = tu_path(dir, name);
        if (!cdir || (mkdir(cdir, 0777) != 0 && errno != EEXIST)) {
            free(cdir);
            rc = -1;
            break;
        }
        for (int j = 0; j < per_class && rc == 0; j++) {
            char *file;
            snprintf(name, sizeof name, "img_%d.jpg", j);
            file = tu_path(cdir, name);
            tu_fill_image(px, w, h, 3, (uint32_t)k * 1000u + (uint32_t)j);
            rc = file ? tu_write_jpeg(file, px, w, h, 3, 90) : -1;
            free(file);
        }
        free(cdir);
    }
    free(px);
    return rc;
}

int64_t tu_dataset_size(const sl_dataset *ds)
{
    int64_t size;
    return sl_dataset_get_dataset_size(ds, &size) == SL_OK ? size : INT64_MIN;
}

int tu_shorten(int sanitized, const char *test, const char *what)
{
    const char *full = getenv("SLUICE_TESTS_FULL");
    int forced_full = full && strcmp(full, "1") == 0;
    if (!sanitized)
        return 0;
    if (forced_full)
        printf("%s: sanitizer build, full length (SLUICE_TESTS_FULL=1)\n", test);
    else
        printf("%s: sanitizer build, shortened: %s; the plain build runs it whole "
               "(so does SLUICE_TESTS_FULL=1)\n",
               test, what);
    fflush(stdout);
    return !forced_full;
}

/* --- fixtures ------------------------------------------------------------- */

sl_dataset *tu_image_folder_decoded(const char *dir, int workers)
{
    sl_image_folder_options o;
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_image_folder_options_init(&o);
    o.dataset_dir = dir;
    o.decode = 1;
    o.num_parallel_workers = workers;
    ck_assert_msg(sl_dataset_image_folder(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    return ds;
}

sl_dataset *tu_lenet_pipeline(const char *dir, sl_mnist_usage usage, int workers, uint64_t seed,
                              int resize, int drop_remainder, int64_t num_samples)
{
    return tu_lenet_pipeline_batch(dir, usage, workers, seed, resize, drop_remainder, num_samples,
                                   32);
}

sl_dataset *tu_lenet_pipeline_batch(const char *dir, sl_mnist_usage usage, int workers,
                                    uint64_t seed, int resize, int drop_remainder,
                                    int64_t num_samples, int64_t batch)
{
    sl_mnist_options mo;
    sl_dataset *ds;
    sl_op *cast, *rs, *r1, *r2, *chw;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&mo);
    mo.dataset_dir = dir;
    mo.usage = usage;
    mo.sampler.seed = seed;
    mo.sampler.shuffle = usage == SL_MNIST_TRAIN;
    mo.sampler.num_samples = num_samples;
    ck_assert_msg(sl_dataset_mnist(ds, &mo) == SL_OK, "%s", sl_dataset_last_error(ds));
    sl_dataset_set_seed(ds, seed);
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&rs, 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&r1, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&r2, 1 / 0.3081, -1 * 0.1307 / 0.3081, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &cast, 1, "label", NULL, workers), SL_OK);
    if (resize)
        ck_assert_int_eq(sl_dataset_map(ds, &rs, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &r1, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &r2, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &chw, 1, "image", NULL, workers), SL_OK);
    if (usage == SL_MNIST_TRAIN)
        ck_assert_int_eq(sl_dataset_shuffle(ds, 10000), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, batch, drop_remainder, workers), SL_OK);
    sl_op_release(cast);
    sl_op_release(rs);
    sl_op_release(r1);
    sl_op_release(r2);
    sl_op_release(chw);
    return ds;
}

void tu_assert_same_params(sl_model *a, sl_model *b, const char *what)
{
    sl_graph *ga = sl_model_graph(a), *gb = sl_model_graph(b);
    ck_assert_uint_eq(sl_graph_num_params(ga), sl_graph_num_params(gb));
    for (size_t i = 0; i < sl_graph_num_params(ga); i++) {
        size_t na, nb;
        const float *da = sl_graph_param_data(ga, sl_graph_param_at(ga, i), &na);
        const float *db = sl_graph_param_data(gb, sl_graph_param_at(gb, i), &nb);
        ck_assert_uint_eq(na, nb);
        ck_assert_msg(memcmp(da, db, na * sizeof(float)) == 0,
                      "%s: parameter '%s' differs (first value %.9g vs %.9g)", what,
                      sl_graph_node_name(ga, sl_graph_param_at(ga, i)), (double)da[0],
                      (double)db[0]);
    }
}

int tu_infer_identity(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                      sl__error *err)
{
    (void)op;
    (void)err;
    *out = *in;
    return SL_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tu_listing(const char *dir, char *buf, size_t len)
{
    char *names[64];
    size_t n = 0, used = 0;
    struct dirent *e;
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "%s: cannot read the folder", dir);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        ck_assert_uint_lt(n, 64);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_names);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s ", names[i]);
        ck_assert_uint_lt(used, len);
        free(names[i]);
    }
}
