/* check_hostile.c: files made to hurt. A decompression bomb (a few hundred
 * bytes of arithmetic-coded JPEG declaring 16384x16384) is refused from
 * its header, naming the file, before anything is allocated; raising
 * max_pixels lets a large image through. The decode budget bounds the
 * bytes of decoded images that a pipeline's decode workers hold at once
 * (two workers never hold two images when the budget fits one), and a stop
 * wakes a worker waiting on it. (Checkpoint folders, the other hostile
 * files of issue 12, are in check_checkpoint_folder.c.) */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include <jpeglib.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/byte_budget.h"
#include "ops/op_impl.h"
#include "pipeline/iterator_impl.h"
#include "sluice/sluice.h"
#include "testutil.h"

Suite *make_hostile_suite(void);

/* --- helpers ------------------------------------------------------------ */

static char *tmp; /* a fresh folder per test */

static void setup_tmp(void)
{
    tmp = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmp);
}

static void teardown_tmp(void)
{
    tu_rmtree(tmp);
    free(tmp);
    tmp = NULL;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/* An ImageFolder dataset over dir, decoding with `workers`, in file order. */
static sl_dataset *image_folder(const char *dir, int workers)
{
    sl_dataset *ds;
    sl_image_folder_options o;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_image_folder_options_init(&o);
    o.dataset_dir = dir;
    o.decode = 1;
    o.num_parallel_workers = workers;
    o.sampler.shuffle = 0;
    ck_assert_msg(sl_dataset_image_folder(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    return ds;
}

/* --- a probe op after the decode --------------------------------------- */

/* Passes images through and counts the bytes of those inside it at once:
 * it runs while its worker still holds the decode budget for the image, so
 * with a budget that fits one image, two images are never inside at once.
 * Each image stays hold_ms; with `gated` set, every image waits until the
 * test opens the gate. */
typedef struct probe {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t live, peak; /* bytes inside now, and the most at once */
    int arrivals;
    int hold_ms;
    int gated, open;
} probe;

typedef struct probe_op {
    sl_op base;
    probe *p;
} probe_op;

static int probe_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    probe *p = ((const probe_op *)op)->p;
    uint64_t bytes = sl_tensor_nbytes(in);
    (void)ctx;
    pthread_mutex_lock(&p->lock);
    p->live += bytes;
    if (p->live > p->peak)
        p->peak = p->live;
    p->arrivals++;
    pthread_cond_broadcast(&p->cond);
    while (p->gated && !p->open)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
    if (p->hold_ms > 0)
        sleep_ms(p->hold_ms);
    pthread_mutex_lock(&p->lock);
    p->live -= bytes;
    pthread_mutex_unlock(&p->lock);
    *out = in;
    return SL_OK;
}

static const sl_op_iface probe_iface = {"Probe", tu_infer_identity, probe_run, NULL};

static void probe_init(probe *p, int hold_ms, int gated)
{
    memset(p, 0, sizeof *p);
    ck_assert_int_eq(pthread_mutex_init(&p->lock, NULL), 0);
    ck_assert_int_eq(pthread_cond_init(&p->cond, NULL), 0);
    p->hold_ms = hold_ms;
    p->gated = gated;
}

static void probe_destroy(probe *p)
{
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
}

static void probe_open(probe *p)
{
    pthread_mutex_lock(&p->lock);
    p->open = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* Maps the probe over `image` in the decode's stage (consecutive maps run
 * in one stage, row by row). */
static void add_probe(sl_dataset *ds, probe *p, int workers)
{
    sl_op *op;
    ck_assert_int_eq(sl__op_alloc(&op, sizeof(probe_op), &probe_iface, 0), SL_OK);
    ((probe_op *)op)->p = p;
    ck_assert_msg(sl_dataset_map(ds, &op, 1, "image", NULL, workers) == SL_OK, "%s",
                  sl_dataset_last_error(ds));
    sl_op_release(op);
}

/* FNV-1a of a tensor's bytes. */
static uint64_t tensor_hash(const sl_tensor *t)
{
    const uint8_t *b = t->data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0, n = sl_tensor_nbytes(t); i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Reads the budget's counters under its lock. */
static void budget_counts(sl__byte_budget *b, uint64_t *peak, int *waiting, uint64_t *waits)
{
    pthread_mutex_lock(&b->lock);
    if (peak)
        *peak = b->peak;
    if (waiting)
        *waiting = b->waiting;
    if (waits)
        *waits = b->waits;
    pthread_mutex_unlock(&b->lock);
}

/* --- decompression bombs -------------------------------------------------- */

/* libjpeg's errors longjmp back to the encoder (or header reader) here. */
typedef struct jpeg_jump {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
} jpeg_jump;

static void jump_on_error(j_common_ptr cinfo)
{
    longjmp(((jpeg_jump *)cinfo->err)->jump, 1);
}

/* Encodes a small w x h image of c channels (1 or 3) with arithmetic
 * coding (SOF9 instead of SOF0); *out is malloc'd. */
static void encode_arith(uint8_t **out, size_t *len, int w, int h, int c)
{
    struct jpeg_compress_struct cinfo;
    jpeg_jump jerr;
    unsigned char *buf = NULL;
    unsigned long n = 0;
    uint8_t *px = malloc((size_t)w * (size_t)h * (size_t)c); /* (h, w, c) */
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, w, h, c, 3);
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = jump_on_error;
    if (setjmp(jerr.jump))
        ck_abort_msg("libjpeg could not encode an arithmetic-coded JPEG");
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &buf, &n);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = c;
    cinfo.in_color_space = c == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&cinfo);
    cinfo.arith_code = TRUE;
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = px + (size_t)cinfo.next_scanline * (size_t)w * (size_t)c;
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(px);
    *out = malloc(n);
    ck_assert_ptr_nonnull(*out);
    memcpy(*out, buf, n);
    free(buf); /* jpeg_mem_dest's buffer comes from malloc */
    *len = n;
}

/* Rewrites the arithmetic-coded frame header (SOF9) to declare h x w. */
static void patch_sof9(uint8_t *jpg, size_t len, unsigned h, unsigned w)
{
    for (size_t i = 2; i + 9 < len; i++) {
        if (jpg[i] == 0xFF && jpg[i + 1] == 0xC9) {
            jpg[i + 5] = (uint8_t)(h >> 8);
            jpg[i + 6] = (uint8_t)h;
            jpg[i + 7] = (uint8_t)(w >> 8);
            jpg[i + 8] = (uint8_t)w;
            return;
        }
    }
    ck_abort_msg("no SOF9 marker");
}

/* A bomb: a 16x16 image encoded with arithmetic coding, its frame header
 * then patched to declare side x side. Encoding a real 16384x16384 image
 * would take seconds; this takes microseconds and is just as hostile: the
 * header is well formed, and once the arithmetic decoder meets the EOI
 * marker it decodes every further block as zeros without a warning, so
 * libjpeg would fill the whole declared image "successfully" (the issue's
 * 384-byte file took 3.8 s and 805 MB). */
static void make_bomb(uint8_t **out, size_t *len, unsigned side, int c)
{
    encode_arith(out, len, 16, 16, c);
    patch_sof9(*out, *len, side, side);
}

/* What libjpeg itself reads in the header: the declared size, and that the
 * file is arithmetic-coded. */
static void check_header(const uint8_t *jpg, size_t len, unsigned side)
{
    struct jpeg_decompress_struct cinfo;
    jpeg_jump jerr;
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = jump_on_error;
    if (setjmp(jerr.jump))
        ck_abort_msg("libjpeg refused the bomb's header");
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, jpg, (unsigned long)len);
    ck_assert_int_eq(jpeg_read_header(&cinfo, TRUE), JPEG_HEADER_OK);
    ck_assert_uint_eq(cinfo.image_width, side);
    ck_assert_uint_eq(cinfo.image_height, side);
    ck_assert(cinfo.arith_code);
    jpeg_destroy_decompress(&cinfo);
}

static long max_rss_kb(void)
{
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

static sl_tensor *bytes_tensor(const uint8_t *data, size_t len)
{
    sl_tensor *t;
    int64_t shape[1] = {(int64_t)len};
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, 1, shape), SL_OK);
    memcpy(sl_tensor_data(t), data, len);
    return t;
}

/* The bomb through the Decode op and through an ImageFolder pipeline: a
 * clear error naming the size, the limit and the option that raises it
 * (and in the pipeline the file), at once and without allocating the
 * image: the pipeline's buffer pool stays small, so does the process. */
START_TEST(test_bomb_refused)
{
    uint8_t *bomb;
    size_t len;
    sl_op *op;
    sl_tensor *in, *out = NULL;
    char msg[512], *root, *cdir, *good, *bad;
    long rss0 = max_rss_kb();
    double t0;
    sl_dataset *ds;
    sl_iterator *it;
    sl_iterator_stats stats;
    sl_row row;
    int rc;

    make_bomb(&bomb, &len, 16384, 3);
    ck_assert_uint_lt(len, 1024);
    check_header(bomb, len, 16384);

    ck_assert_int_eq(sl_op_decode_new(&op, 1, NULL, 0), SL_OK);
    in = bytes_tensor(bomb, len);
    t0 = wall_ms();
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(wall_ms() - t0 < 500.0, "refusing took %.0f ms", wall_ms() - t0);
    ck_assert_ptr_null(out);
    ck_assert_msg(strstr(msg, "16384x16384 = 268435456 pixels") &&
                      strstr(msg, "max_pixels = 67108864") &&
                      strstr(msg, "--decode-max-pixels"),
                  "%s", msg);
    sl_tensor_release(in);
    sl_op_release(op);

    /* In an ImageFolder, after a good image. */
    root = tu_path(tmp, "bombs");
    cdir = tu_path(root, "a");
    good = tu_path(cdir, "a_good.jpg");
    bad = tu_path(cdir, "b_bomb.jpg");
    ck_assert_int_eq(mkdir(root, 0777), 0);
    ck_assert_int_eq(mkdir(cdir, 0777), 0);
    {
        uint8_t px[64 * 48 * 3];
        tu_fill_image(px, 64, 48, 3, 1);
        ck_assert_int_eq(tu_write_jpeg(good, px, 64, 48, 3, 90), 0);
    }
    ck_assert_int_eq(tu_write_bytes(bad, bomb, len, 0), 0);
    ds = image_folder(root, 2);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    t0 = wall_ms();
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    sl_row_clear(&row);
    rc = sl_iterator_next(it, &row);
    ck_assert_msg(wall_ms() - t0 < 2000.0, "refusing took %.0f ms", wall_ms() - t0);
    ck_assert_int_eq(rc, SL_EFORMAT);
    ck_assert_msg(strstr(sl_iterator_last_error(it), bad) &&
                      strstr(sl_iterator_last_error(it), "16384x16384") &&
                      strstr(sl_iterator_last_error(it), "max_pixels = 67108864"),
                  "%s", sl_iterator_last_error(it));
    sl_iterator_get_stats(it, &stats);
    ck_assert_msg(stats.pool_bytes < ((size_t)16 << 20), "the pool holds %zu bytes",
                  stats.pool_bytes);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    /* An 805 MB image never came to be (ASan's shadow and the test's own
     * files stay far below). */
    ck_assert_msg(max_rss_kb() - rss0 < 256 * 1024, "peak RSS grew by %ld kB",
                  max_rss_kb() - rss0);
    free(bomb);
    free(good);
    free(bad);
    free(cdir);
    free(root);
}
END_TEST

/* Raising max_pixels lets a large image through: a bomb-style file
 * declaring 8200x8200 gray (67,240,000 pixels, just over the default
 * 2^26) is refused by default and decodes, as libjpeg would, with the
 * limit at 2^27 (a 67 MB tensor). */
START_TEST(test_raised_limit_lets_large_image_through)
{
    uint8_t *jpg;
    size_t len;
    sl_op *op;
    sl_tensor *in, *out = NULL;
    char msg[512];
    make_bomb(&jpg, &len, 8200, 1);
    check_header(jpg, len, 8200);
    in = bytes_tensor(jpg, len);

    ck_assert_int_eq(sl_op_decode_new(&op, 0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "8200x8200 = 67240000 pixels"), "%s", msg);
    sl_op_release(op);

    ck_assert_int_eq(sl_op_decode_new_limited(&op, 0, (uint64_t)1 << 27, NULL, 0), SL_OK);
    ck_assert_msg(sl_op_apply(op, in, &out, 0, msg, sizeof msg) == SL_OK, "%s", msg);
    ck_assert_int_eq(sl_tensor_ndim(out), 3);
    ck_assert_int_eq(sl_tensor_shape(out)[0], 8200);
    ck_assert_int_eq(sl_tensor_shape(out)[1], 8200);
    ck_assert_int_eq(sl_tensor_shape(out)[2], 1);
    sl_tensor_release(out);
    sl_op_release(op);
    sl_tensor_release(in);
    free(jpg);
}
END_TEST

/* ImageFolder's decode_max_pixels: a limit below a 16x16 image refuses it
 * naming the file, one at its size lets it through, 0 is refused. */
START_TEST(test_image_folder_decode_max_pixels)
{
    char *dir = tu_path(tmp, "folder");
    sl_image_folder_options o;
    sl_dataset *ds;
    sl_iterator *it;
    sl_row row;
    ck_assert_int_eq(tu_make_image_folder(dir, 1, 1, 16, 16), 0);
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
        sl_image_folder_options_init(&o);
        ck_assert_uint_eq(o.decode_max_pixels, SL_DECODE_MAX_PIXELS_DEFAULT);
        o.dataset_dir = dir;
        o.decode = 1;
        o.decode_max_pixels = pass == 0 ? 255 : 256;
        ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_OK);
        ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
        if (pass == 0) {
            ck_assert_int_eq(sl_iterator_next(it, &row), SL_EFORMAT);
            ck_assert_msg(strstr(sl_iterator_last_error(it), "img_0.jpg") &&
                              strstr(sl_iterator_last_error(it), "max_pixels = 255"),
                          "%s", sl_iterator_last_error(it));
        } else {
            ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
            sl_row_clear(&row);
        }
        sl_iterator_free(it);
        sl_dataset_free(ds);
    }
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_image_folder_options_init(&o);
    o.dataset_dir = dir;
    o.decode = 1;
    o.decode_max_pixels = 0;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_EINVAL);
    ck_assert_msg(strstr(sl_dataset_last_error(ds), "decode_max_pixels"), "%s",
                  sl_dataset_last_error(ds));
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

/* --- the byte budget ---------------------------------------------------- */

START_TEST(test_byte_budget_unit)
{
    sl__byte_budget b;
    sl__error err;
    ck_assert_int_eq(sl__byte_budget_init(&b, 100, &err), SL_OK);
    ck_assert_int_eq(sl__byte_budget_take(&b, 101, 1), SL_EINVAL); /* could never fit */
    ck_assert_int_eq(sl__byte_budget_take(&b, 60, 1), SL_OK);
    ck_assert_int_eq(sl__byte_budget_take(&b, 50, 0), SL_ETIMEDOUT); /* would have to wait */
    ck_assert_int_eq(sl__byte_budget_take(&b, 40, 0), SL_OK);
    ck_assert_uint_eq(b.held, 100);
    sl__byte_budget_give(&b, 60);
    ck_assert_int_eq(sl__byte_budget_take(&b, 60, 1), SL_OK);
    ck_assert_uint_eq(b.peak, 100);
    sl__byte_budget_close(&b);
    ck_assert_int_eq(sl__byte_budget_take(&b, 0, 1), SL_ECLOSED);
    sl__byte_budget_give(&b, 100);
    ck_assert_uint_eq(b.held, 0);
    sl__byte_budget_destroy(&b);
}
END_TEST

#define BIG_SIDE 1024
#define BIG_BYTES ((uint64_t)BIG_SIDE * BIG_SIDE * 3)
#define BIG_COUNT 12

/* The hashes and labels of every row of ds (BIG_COUNT of them). */
static void run_hashes(sl_dataset *ds, uint64_t *hashes, int32_t *labels, uint64_t *budget_peak,
                       uint64_t *budget_limit)
{
    sl_iterator_options o;
    sl_iterator *it;
    sl_row row;
    int n = 0, rc;
    sl_iterator_options_init(&o);
    o.chunk_rows = 1; /* each worker takes one image at a time */
    o.timeout_ms = 60000;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    ck_assert(it->has_decode_budget);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK || rc == SL_END_OF_EPOCH) {
        if (rc == SL_END_OF_EPOCH)
            continue;
        ck_assert_int_lt(n, BIG_COUNT);
        hashes[n] = tensor_hash(row.columns[0]);
        labels[n] = *(const int32_t *)row.columns[1]->data;
        n++;
        sl_row_clear(&row);
    }
    ck_assert_msg(rc == SL_END_OF_DATA, "%d: %s", rc, sl_iterator_last_error(it));
    ck_assert_int_eq(n, BIG_COUNT);
    budget_counts(&it->decode_budget, budget_peak, NULL, NULL);
    *budget_limit = it->decode_budget.limit;
    sl_iterator_free(it);
}

/* Two workers, a budget that fits one 1024x1024 image, twelve such images:
 * the images inside the probe (which runs while the budget is held) never
 * add up to more than one, and the rows are those of a run without a
 * budget to speak of. */
START_TEST(test_decode_budget_bounds_workers)
{
    char *dir = tu_path(tmp, "big");
    uint64_t bounded[BIG_COUNT], free_run[BIG_COUNT], peak, limit;
    int32_t lb[BIG_COUNT], lf[BIG_COUNT];
    probe p;
    sl_dataset *ds;
    ck_assert_int_eq(tu_make_image_folder(dir, 2, BIG_COUNT / 2, BIG_SIDE, BIG_SIDE), 0);

    probe_init(&p, 15, 0);
    ds = image_folder(dir, 2);
    add_probe(ds, &p, 2);
    sl_dataset_set_decode_budget(ds, BIG_BYTES);
    run_hashes(ds, bounded, lb, &peak, &limit);
    ck_assert_uint_eq(limit, BIG_BYTES);
    ck_assert_msg(p.peak <= BIG_BYTES, "%llu bytes of decoded images held at once",
                  (unsigned long long)p.peak);
    ck_assert_uint_eq(p.peak, BIG_BYTES);
    ck_assert_uint_eq(peak, BIG_BYTES); /* the budget's own count agrees */
    ck_assert_int_eq(p.arrivals, BIG_COUNT);
    probe_destroy(&p);

    /* The default budget: the largest image Decode accepts (2^26 RGB
     * pixels), room for many of these at once. Same rows. */
    probe_init(&p, 0, 0);
    sl_dataset_set_decode_budget(ds, 0);
    run_hashes(ds, free_run, lf, &peak, &limit);
    ck_assert_uint_eq(limit, SL_DECODE_MAX_PIXELS_DEFAULT * 3);
    for (int i = 0; i < BIG_COUNT; i++) {
        ck_assert_int_eq(lb[i], lf[i]);
        ck_assert_msg(bounded[i] == free_run[i], "row %d differs", i);
    }
    probe_destroy(&p);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

typedef struct freer {
    sl_iterator *it;
    double done_ms;
} freer;

static void *free_iterator(void *arg)
{
    freer *f = arg;
    sl_iterator_free(f->it);
    f->done_ms = wall_ms();
    return NULL;
}

/* Waits up to 10 s for done(arg) to be true; returns it. */
static int wait_for(int (*done)(void *), void *arg)
{
    double t0 = wall_ms();
    int ok;
    while (!(ok = done(arg)) && wall_ms() - t0 < 10000.0)
        sleep_ms(1);
    return ok;
}

static int probe_arrivals(probe *p)
{
    int n;
    pthread_mutex_lock(&p->lock);
    n = p->arrivals;
    pthread_mutex_unlock(&p->lock);
    return n;
}

static int budget_waiting(sl__byte_budget *b)
{
    int n;
    budget_counts(b, NULL, &n, NULL);
    return n;
}

/* What the stop test waits for. */
typedef struct stop_scene {
    probe *p;
    sl_iterator *it;
} stop_scene;

/* One image at the gate (holding the budget), another worker waiting. */
static int one_holds_one_waits(void *arg)
{
    stop_scene *s = arg;
    return probe_arrivals(s->p) == 1 && budget_waiting(&s->it->decode_budget) == 1;
}

static int nobody_waits(void *arg)
{
    stop_scene *s = arg;
    return budget_waiting(&s->it->decode_budget) == 0;
}

/* One worker holds the budget (its image waits at the probe's gate), the
 * other waits for budget: freeing the iterator wakes the waiting one at
 * once, before the gate opens, and everything joins as soon as it does. */
START_TEST(test_decode_budget_stop_wakes_waiter)
{
    char *dir = tu_path(tmp, "big");
    sl_iterator_options o;
    sl_iterator *it;
    probe p;
    sl_dataset *ds;
    pthread_t t;
    freer f;
    uint64_t waits;
    double opened;
    stop_scene scene;
    ck_assert_int_eq(tu_make_image_folder(dir, 1, 4, 256, 256), 0);
    probe_init(&p, 0, 1);
    ds = image_folder(dir, 2);
    add_probe(ds, &p, 2);
    sl_dataset_set_decode_budget(ds, 256 * 256 * 3);
    sl_iterator_options_init(&o);
    o.chunk_rows = 1;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    scene.p = &p;
    scene.it = it;
    ck_assert_msg(wait_for(one_holds_one_waits, &scene),
                  "arrivals %d, waiting %d", probe_arrivals(&p),
                  budget_waiting(&it->decode_budget));
    budget_counts(&it->decode_budget, NULL, NULL, &waits);
    ck_assert_uint_eq(waits, 1);

    f.it = it;
    f.done_ms = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, free_iterator, &f), 0);
    /* The gate is still shut, so the iterator is still alive here. */
    ck_assert_msg(wait_for(nobody_waits, &scene),
                  "the stop did not wake the worker waiting for decode budget");
    ck_assert_int_eq(probe_arrivals(&p), 1);
    opened = wall_ms();
    probe_open(&p);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(f.done_ms - opened < 2000.0, "joined %.0f ms after the gate opened",
                  f.done_ms - opened);
    probe_destroy(&p);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

/* An image needing more than the whole budget can never fit: an error
 * naming it, not a wait. */
START_TEST(test_decode_budget_too_small)
{
    char *dir = tu_path(tmp, "small");
    sl_iterator *it;
    sl_row row;
    sl_dataset *ds;
    int rc;
    ck_assert_int_eq(tu_make_image_folder(dir, 1, 1, 32, 24), 0);
    ds = image_folder(dir, 2);
    sl_dataset_set_decode_budget(ds, 1000);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    rc = sl_iterator_next(it, &row);
    ck_assert_int_eq(rc, SL_EINVAL);
    ck_assert_msg(strstr(sl_iterator_last_error(it), "img_0.jpg") &&
                      strstr(sl_iterator_last_error(it), "32x24 image needs 2304 bytes") &&
                      strstr(sl_iterator_last_error(it), "decode budget of 1000 bytes") &&
                      strstr(sl_iterator_last_error(it), "sl_dataset_set_decode_budget"),
                  "%s", sl_iterator_last_error(it));
    sl_iterator_free(it);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

Suite *make_hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *tc = tu_tcase("bombs", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_bomb_refused);
    tcase_add_test(tc, test_raised_limit_lets_large_image_through);
    tcase_add_test(tc, test_image_folder_decode_max_pixels);
    suite_add_tcase(s, tc);

    tc = tu_tcase("decode_budget", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_byte_budget_unit);
    tcase_add_test(tc, test_decode_budget_bounds_workers);
    tcase_add_test(tc, test_decode_budget_stop_wakes_waiter);
    tcase_add_test(tc, test_decode_budget_too_small);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_hostile_suite);
}
