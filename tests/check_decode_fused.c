/* check_decode_fused.c: Decode fused with the crop or resize after it
 * (ops/vision/decode_fused.c) on JPEGs made here with libjpeg: several
 * sizes, 4:2:0 and 4:4:4, baseline and progressive, greyscale and CMYK
 * inputs; RandomResizedCrop boxes at every border, its fallback, the
 * evaluation transform (Resize of the shorter side, CenterCrop), a fixed
 * Resize and CenterCrop alone.
 *
 * Two references (tests/decode_fused_ref.h): decoding the whole image at
 * the fused op's N/8 scale and sampling it at the same positions must give
 * the fused result within 1 level (so the region it decodes, cut with
 * jpeg_crop_scanline and jpeg_skip_scanlines, is right at every border);
 * decode-then-transform differs by what decoding at N/8 averages where
 * the full decode's bilinear taps pick single pixels: its mean absolute
 * difference is bounded, its worst printed. CenterCrop alone (N = 8, whole
 * pixels) must be exact. Real photographs: check_decode_photos.c. Also: a
 * pipeline plans the fusion across map nodes and draws the same boxes as
 * the separate ops, sl_dataset_set_decode_fusion(ds, 0) turns it off, and
 * fused errors are the Decode's. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "tests/decode_fused_ref.h"
#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "core/rng.h"
#include "ops/op_impl.h"
#include "tests/testutil.h"

Suite *make_decode_fused_suite(void);

/* Mean absolute difference from decode-then-transform, in levels of 255:
 * the 1.5 for pictures with soft edges; step edges with +-7
 * levels of noise are the worst case for decoding at N/8. */
#define SOFT_MEAN_BOUND 1.5
#define HARD_MEAN_BOUND 4.0 /* seen: 2.9 */

typedef struct jpeg_kind {
    int comps;       /* 1 grey, 3 YCbCr, 4 CMYK */
    int subsample;   /* 2: 4:2:0, 1: 4:4:4 */
    int progressive;
} jpeg_kind;

/* Synthetic content. Soft: smooth shading and a disc whose edge ramps over
 * a few pixels, with a little noise, as photographs are. Hard: the same
 * with a step edge, a one-colour bar and noise of +-7 levels, the worst
 * case for decoding at a reduced scale (see the bounds below). */
enum { PICT_SOFT, PICT_HARD };

static uint8_t *make_picture(int w, int h, int comps, int kind, uint32_t seed)
{
    uint8_t *px = malloc((size_t)w * h * comps);
    uint32_t s = seed * 2654435761u + 1;
    double radius = sqrt((double)w * h / 30.0), ramp = kind == PICT_HARD ? 0.5 : 3.0;
    ck_assert_ptr_nonnull(px);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < comps; c++) {
                double v = 60 + 120.0 * x / w + 50.0 * sin((y + 17 * c) / (9.0 + c)) +
                           30.0 * cos(x / 23.0 + c);
                double dx = x - w * (0.3 + 0.2 * c / 3.0), dy = y - h * 0.4;
                double in = (radius - sqrt(dx * dx + dy * dy)) / ramp + 0.5;
                in = in < 0 ? 0 : in > 1 ? 1 : in;
                v = v * (1 - in) + (230 - 40 * c) * in;
                if (kind == PICT_HARD && abs(x - w / 2) < w / 40 + 1)
                    v = 20;
                s = s * 1664525u + 1013904223u;
                v += ((double)(s >> 28) - 7.5) * (kind == PICT_HARD ? 1.0 : 0.2);
                px[((size_t)y * w + x) * comps + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    return px;
}

static sl_tensor *encode(int w, int h, const jpeg_kind *k, int kind, uint32_t seed)
{
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    unsigned char *buf = NULL;
    unsigned long len = 0;
    uint8_t *px = make_picture(w, h, k->comps, kind, seed);
    sl_tensor *t;
    int64_t shape[1];
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &buf, &len);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = k->comps;
    cinfo.in_color_space = k->comps == 1 ? JCS_GRAYSCALE : k->comps == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(&cinfo);
    if (k->comps == 4)
        jpeg_set_colorspace(&cinfo, JCS_YCCK);
    jpeg_set_quality(&cinfo, 90, TRUE);
    if (k->comps >= 3) {
        cinfo.comp_info[0].h_samp_factor = k->subsample;
        cinfo.comp_info[0].v_samp_factor = k->subsample;
        for (int c = 1; c < cinfo.num_components; c++)
            cinfo.comp_info[c].h_samp_factor = cinfo.comp_info[c].v_samp_factor = 1;
        if (k->comps == 4) /* K at full resolution, like Y */
            cinfo.comp_info[3].h_samp_factor = cinfo.comp_info[3].v_samp_factor = k->subsample;
    }
    if (k->progressive)
        jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = px + (size_t)cinfo.next_scanline * w * k->comps;
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(px);
    shape[0] = (int64_t)len;
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, 1, shape), SL_OK);
    memcpy(sl_tensor_data(t), buf, len);
    free(buf);
    return t;
}

/* The worst differences from the separate ops seen in a test, for soft
 * pictures [0] and hard ones [1]. */
static ref_diff worst[2];

static void report_worst(const char *what)
{
    printf("%s, fused against decode-then-transform (levels of 255): soft pictures mean %.3f "
           "max %d, hard pictures mean %.3f max %d\n",
           what, worst[0].mean, worst[0].max, worst[1].mean, worst[1].max);
    memset(worst, 0, sizeof worst);
}

/* Checks decode + ops[0..n) fused against both references, for geometry g
 * of the image. exact: equal to the separate ops. */
static void check_case(const sl_tensor *jpeg, sl_op *decode, sl_op **ops, size_t n,
                       uint64_t seed, const ref_geom *g, int rgb, int hard, int exact,
                       const char *what)
{
    sl_op *fused = ref_fuse(decode, ops, n);
    sl_tensor *got, *sep = ref_separate(jpeg, decode, ops, n, seed), *same;
    ref_diff d;
    char err[512];
    ck_assert_msg(sl_op_apply(fused, jpeg, &got, seed, err, sizeof err) == SL_OK, "%s: %s",
                  what, err);
    same = ref_same_scale(jpeg, g, rgb);
    d = ref_compare(got, same, what);
    ck_assert_msg(d.max <= 1, "%s: %.3f mean, %d max from the same-scale reference", what,
                  d.mean, d.max);
    d = ref_compare(got, sep, what);
    if (exact)
        ck_assert_msg(d.max == 0, "%s: not exact (max %d)", what, d.max);
    ck_assert_msg(d.mean <= (hard ? HARD_MEAN_BOUND : SOFT_MEAN_BOUND), "%s: mean %.3f max %d",
                  what, d.mean, d.max);
    worst[hard].mean = fmax(worst[hard].mean, d.mean);
    worst[hard].max = d.max > worst[hard].max ? d.max : worst[hard].max;
    sl_tensor_release(same);
    sl_tensor_release(sep);
    sl_tensor_release(got);
    sl_op_release(fused);
}

static const jpeg_kind kinds[] = {
    {3, 2, 0}, {3, 1, 0}, {3, 2, 1}, {3, 1, 1}, {1, 1, 0}, {1, 1, 1}, {4, 1, 0}, {4, 2, 1},
};
static const int sizes[][2] = {{500, 375}, {375, 500}, {640, 480}, {257, 193}, {1203, 901}};

static const char *kind_name(const jpeg_kind *k, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s %s", k->comps == 1 ? "grey" : k->comps == 3 ? "YCbCr" : "CMYK",
             k->subsample == 2 ? "4:2:0" : "4:4:4", k->progressive ? "progressive" : "baseline");
    return buf;
}

START_TEST(test_train_transform)
{
    sl_op *decode, *rrc;
    char what[160], kn[64];
    ck_assert_int_eq(sl_op_decode_new(&decode, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_resized_crop_new(&rrc, 224, 224, SL_RRC_SCALE_MIN,
                                                   SL_RRC_SCALE_MAX, SL_RRC_RATIO_MIN,
                                                   SL_RRC_RATIO_MAX, SL_INTER_LINEAR,
                                                   SL_RRC_ATTEMPTS, NULL, 0),
                     SL_OK);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
            for (int hard = 0; hard < 2; hard++) {
                sl_tensor *jpeg = encode(sizes[z][0], sizes[z][1], &kinds[k], hard,
                                         (uint32_t)(k * 7 + z));
                for (uint64_t seed = 0; seed < 4; seed++) {
                    ref_geom g;
                    ref_geom_rrc(&g, rrc, sizes[z][1], sizes[z][0], seed);
                    snprintf(what, sizeof what, "%s %s %dx%d rrc seed %llu",
                             hard ? "hard" : "soft", kind_name(&kinds[k], kn, sizeof kn),
                             sizes[z][0], sizes[z][1], (unsigned long long)seed);
                    check_case(jpeg, decode, &rrc, 1, seed, &g, 1, hard, 0, what);
                }
                sl_tensor_release(jpeg);
            }
    report_worst("train transform");
    sl_op_release(rrc);
    sl_op_release(decode);
}
END_TEST

/* Boxes touching each border of the image, found by scanning seeds with
 * the op's own box function, and the fallback (a scale that never fits). */
START_TEST(test_crops_at_every_border)
{
    static const jpeg_kind k420 = {3, 2, 0}, kprog = {3, 2, 1};
    sl_op *decode, *rrc, *fallback;
    sl_tensor *jpegs[2];
    int found[4] = {0};
    char what[128];
    ck_assert_int_eq(sl_op_decode_new(&decode, 1, NULL, 0), SL_OK);
    /* a 346x346 box (scale 1/4 of 800x600) resized to 64: decoded at 2/8 */
    ck_assert_int_eq(sl_op_random_resized_crop_new(&rrc, 64, 64, 0.25, 0.25, 1, 1,
                                                   SL_INTER_LINEAR, 10, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_random_resized_crop_new(&fallback, 100, 80, 2, 3, 0.75, 4.0 / 3.0,
                                                   SL_INTER_LINEAR, 10, NULL, 0),
                     SL_OK);
    jpegs[0] = encode(803, 601, &k420, PICT_SOFT, 5);
    jpegs[1] = encode(803, 601, &kprog, PICT_HARD, 6);
    for (uint64_t seed = 0; seed < 200000 && !(found[0] && found[1] && found[2] && found[3]);
         seed++) {
        int64_t box[4];
        int side = -1;
        ck_assert_int_eq(sl_op_random_resized_crop_box(rrc, 601, 803, seed, box, NULL, 0), SL_OK);
        if (box[0] == 0 && !found[0])
            side = 0;
        else if (box[1] == 0 && !found[1])
            side = 1;
        else if (box[0] + box[2] == 601 && !found[2])
            side = 2;
        else if (box[1] + box[3] == 803 && !found[3])
            side = 3;
        if (side < 0)
            continue;
        found[side] = 1;
        for (int j = 0; j < 2; j++) {
            ref_geom g;
            ref_geom_rrc(&g, rrc, 601, 803, seed);
            snprintf(what, sizeof what, "border %d (box %lld,%lld %lldx%lld) jpeg %d", side,
                     (long long)box[0], (long long)box[1], (long long)box[2], (long long)box[3],
                     j);
            check_case(jpegs[j], decode, &rrc, 1, seed, &g, 1, j, 0, what);
        }
    }
    ck_assert_msg(found[0] && found[1] && found[2] && found[3], "borders %d %d %d %d", found[0],
                  found[1], found[2], found[3]);
    for (int j = 0; j < 2; j++) {
        ref_geom g;
        ref_geom_rrc(&g, fallback, 601, 803, 3);
        /* the fallback: too wide for 4/3, so the height and 601 * 4/3 = 801.33 */
        ck_assert(g.bh == 601 && g.bw == 801 && g.bx == 1);
        check_case(jpegs[j], decode, &fallback, 1, 3, &g, 1, j, 0, "fallback");
    }
    report_worst("crops at every border");
    sl_tensor_release(jpegs[0]);
    sl_tensor_release(jpegs[1]);
    sl_op_release(fallback);
    sl_op_release(rrc);
    sl_op_release(decode);
}
END_TEST

START_TEST(test_eval_transforms)
{
    sl_op *decode, *grey, *shorter, *center, *resize, *big, *ops[2];
    char what[160], kn[64];
    ck_assert_int_eq(sl_op_decode_new(&decode, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_decode_new(&grey, 0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_shorter_side_new(&shorter, 256, SL_INTER_LINEAR, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_center_crop_new(&center, 224, 224, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&resize, 160, 200, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_center_crop_new(&big, 700, 1300, NULL, 0), SL_OK);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
            for (int hard = 0; hard < 2; hard++) {
                sl_tensor *jpeg = encode(sizes[z][0], sizes[z][1], &kinds[k], hard,
                                         (uint32_t)(k * 5 + z));
                char name[96];
                snprintf(name, sizeof name, "%s %s %dx%d", hard ? "hard" : "soft",
                         kind_name(&kinds[k], kn, sizeof kn), sizes[z][0], sizes[z][1]);
                int64_t h = sizes[z][1], w = sizes[z][0];
                ref_geom g;
                ops[0] = shorter;
                ops[1] = center;
                snprintf(what, sizeof what, "%s resize 256 + center 224", name);
                ref_geom_eval(&g, h, w, 256, 0, 0, 224, 224);
                check_case(jpeg, decode, ops, 2, 0, &g, 1, hard, 0, what);
                snprintf(what, sizeof what, "%s grey output", name);
                check_case(jpeg, grey, ops, 2, 0, &g, 0, hard, 0, what);
                snprintf(what, sizeof what, "%s resize 160x200", name);
                ref_geom_eval(&g, h, w, 0, 160, 200, 0, 0);
                check_case(jpeg, decode, &resize, 1, 0, &g, 1, hard, 0, what);
                snprintf(what, sizeof what, "%s center 224 alone", name);
                ref_geom_eval(&g, h, w, 0, 0, 0, 224, 224);
                check_case(jpeg, decode, &center, 1, 0, &g, 1, hard, 1, what);
                snprintf(what, sizeof what, "%s center 700x1300 padded", name);
                ref_geom_eval(&g, h, w, 0, 0, 0, 700, 1300);
                check_case(jpeg, decode, &big, 1, 0, &g, 1, hard, 1, what);
                sl_tensor_release(jpeg);
            }
    report_worst("eval transforms");
    sl_op_release(big);
    sl_op_release(resize);
    sl_op_release(center);
    sl_op_release(shorter);
    sl_op_release(grey);
    sl_op_release(decode);
}
END_TEST

/* What does not fuse: nearest interpolation, a flip first, no decode. */
START_TEST(test_fuse_patterns)
{
    sl_op *decode, *near, *flip, *rrc, *ops[3], *fused;
    size_t used;
    ck_assert_int_eq(sl_op_decode_new(&decode, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&near, 10, 10, SL_INTER_NEAREST, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&flip, 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_resized_crop_new(&rrc, 8, 8, 0.08, 1, 0.75, 1.33,
                                                   SL_INTER_LINEAR, 10, NULL, 0),
                     SL_OK);
    ops[0] = decode;
    ops[1] = near;
    ck_assert_int_eq(sl__op_fuse(ops, 2, &fused, &used), SL_OK);
    ck_assert_ptr_null(fused);
    ops[1] = flip;
    ops[2] = rrc;
    ck_assert_int_eq(sl__op_fuse(ops, 3, &fused, &used), SL_OK);
    ck_assert_ptr_null(fused);
    ck_assert_int_eq(used, 1);
    ops[0] = rrc;
    ops[1] = decode;
    ck_assert_int_eq(sl__op_fuse(ops, 2, &fused, &used), SL_OK);
    ck_assert_ptr_null(fused);
    ops[0] = decode;
    ops[1] = rrc;
    ops[2] = flip; /* the flip stays separate */
    ck_assert_int_eq(sl__op_fuse(ops, 3, &fused, &used), SL_OK);
    ck_assert_ptr_nonnull(fused);
    ck_assert_int_eq(used, 2);
    ck_assert_str_eq(sl_op_name(fused), "decode+random_resized_crop");
    ck_assert_int_eq(fused->random, 1);
    sl_op_release(fused);
    sl_op_release(rrc);
    sl_op_release(flip);
    sl_op_release(near);
    sl_op_release(decode);
}
END_TEST

/* Errors of the fused op are the Decode's: not a JPEG, cut short, a bomb. */
START_TEST(test_fused_errors)
{
    static const jpeg_kind k420 = {3, 2, 0};
    sl_op *decode, *small, *center, *ops[2], *fused;
    sl_tensor *jpeg = encode(300, 200, &k420, PICT_SOFT, 1), *cut, *out;
    int64_t shape[1];
    size_t used;
    char msg[512];
    ck_assert_int_eq(sl_op_decode_new(&decode, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_decode_new_limited(&small, 1, 1000, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_center_crop_new(&center, 16, 16, NULL, 0), SL_OK);
    ops[0] = decode;
    ops[1] = center;
    ck_assert_int_eq(sl__op_fuse(ops, 2, &fused, &used), SL_OK);
    shape[0] = (int64_t)sl_tensor_nbytes(jpeg) / 2;
    ck_assert_int_eq(sl_tensor_new(&cut, SL_UINT8, 1, shape), SL_OK);
    memcpy(sl_tensor_data(cut), sl_tensor_data(jpeg), (size_t)shape[0]);
    /* the crop reads the middle rows, which a half file still holds: a
     * cut at a third fails for every row below it */
    shape[0] = (int64_t)sl_tensor_nbytes(jpeg) / 5;
    sl_tensor_release(cut);
    ck_assert_int_eq(sl_tensor_new(&cut, SL_UINT8, 1, shape), SL_OK);
    memcpy(sl_tensor_data(cut), sl_tensor_data(jpeg), (size_t)shape[0]);
    ck_assert_int_eq(sl_op_apply(fused, cut, &out, 0, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "decode: cannot decode JPEG"), "%s", msg);
    memset(sl_tensor_data(cut), 0x41, 8);
    ck_assert_int_eq(sl_op_apply(fused, cut, &out, 0, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "decode: not a JPEG"), "%s", msg);
    sl_op_release(fused);
    ops[0] = small;
    ck_assert_int_eq(sl__op_fuse(ops, 2, &fused, &used), SL_OK);
    ck_assert_int_eq(sl_op_apply(fused, jpeg, &out, 0, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "300x200 = 60000 pixels, more than max_pixels = 1000"), "%s", msg);
    sl_op_release(fused);
    sl_tensor_release(cut);
    sl_tensor_release(jpeg);
    sl_op_release(center);
    sl_op_release(small);
    sl_op_release(decode);
}
END_TEST

/* Files cut anywhere, or with bytes flipped, through each fused form (crop
 * alone, resize + crop, a random box): an error naming the decode or, for
 * damage libjpeg cannot see in the rows read, an image; never a crash
 * (the sanitizer build runs this too). */
START_TEST(test_fused_damaged_files)
{
    static const jpeg_kind kinds2[] = {{3, 2, 0}, {3, 2, 1}, {4, 1, 0}, {1, 1, 1}};
    sl_op *decode, *center, *shorter, *rrc, *fused[3], *ops[2];
    int failed = 0;
    ck_assert_int_eq(sl_op_decode_new(&decode, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_center_crop_new(&center, 64, 64, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_shorter_side_new(&shorter, 80, SL_INTER_LINEAR, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_random_resized_crop_new(&rrc, 48, 48, 0.08, 1, 0.75, 1.33,
                                                   SL_INTER_LINEAR, 10, NULL, 0),
                     SL_OK);
    ops[0] = center;
    fused[0] = ref_fuse(decode, ops, 1);
    ops[0] = shorter;
    ops[1] = center;
    fused[1] = ref_fuse(decode, ops, 2);
    ops[0] = rrc;
    fused[2] = ref_fuse(decode, ops, 1);
    for (size_t k = 0; k < sizeof kinds2 / sizeof kinds2[0]; k++) {
        sl_tensor *jpeg = encode(331, 247, &kinds2[k], PICT_SOFT, (uint32_t)k);
        size_t n = sl_tensor_nbytes(jpeg);
        for (size_t cut = 0; cut < 24; cut++) {
            int64_t shape[1];
            sl_tensor *bad, *out;
            char msg[512];
            /* cut short, or a run of bytes overwritten in the middle */
            shape[0] = cut < 12 ? (int64_t)(n * (cut + 1) / 13) : (int64_t)n;
            ck_assert_int_eq(sl_tensor_new(&bad, SL_UINT8, 1, shape), SL_OK);
            memcpy(sl_tensor_data(bad), sl_tensor_data(jpeg), (size_t)shape[0]);
            if (cut >= 12)
                memset((uint8_t *)sl_tensor_data(bad) + n * (cut - 11) / 13, 0x5a, 40);
            for (int f = 0; f < 3; f++) {
                int rc = sl_op_apply(fused[f], bad, &out, cut, msg, sizeof msg);
                if (rc == SL_OK) {
                    sl_tensor_release(out);
                } else {
                    ck_assert_int_eq(rc, SL_EFORMAT);
                    ck_assert_msg(strstr(msg, "decode:"), "%s", msg);
                    failed++;
                }
            }
            sl_tensor_release(bad);
        }
        sl_tensor_release(jpeg);
    }
    ck_assert_int_gt(failed, 100);
    for (int f = 0; f < 3; f++)
        sl_op_release(fused[f]);
    sl_op_release(rrc);
    sl_op_release(shorter);
    sl_op_release(center);
    sl_op_release(decode);
}
END_TEST

/* In a pipeline: ImageFolder's decode (its own map node) fuses with the
 * user's RandomResizedCrop in the next node, draws the same boxes (the
 * rows stay within the bound of the same pipeline run on decoded
 * tensors), and rows do not depend on the worker count. */
static sl_dataset *folder_pipeline(const char *dir, int fused, int workers)
{
    sl_image_folder_options o;
    sl_dataset *ds;
    sl_op *ops[2];
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_image_folder_options_init(&o);
    o.dataset_dir = dir;
    o.decode = 1;
    o.num_parallel_workers = workers;
    o.sampler.shuffle = 0;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_OK);
    sl_dataset_set_seed(ds, 11);
    ck_assert_int_eq(sl_op_random_resized_crop_new(&ops[0], 24, 24, 0.08, 1, 0.75, 1.33,
                                                   SL_INTER_LINEAR, 10, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[1], 0.5, NULL, 0), SL_OK);
    sl_dataset_set_decode_fusion(ds, fused);
    ck_assert_int_eq(sl_dataset_map(ds, ops, 2, "image", NULL, workers), SL_OK);
    sl_op_release(ops[0]);
    sl_op_release(ops[1]);
    ck_assert_int_eq(sl_dataset_batch(ds, 4, 1, workers), SL_OK);
    return ds;
}

static sl_tensor **collect(sl_dataset *ds, size_t *n)
{
    sl_iterator *it;
    sl_row row;
    sl_tensor **out = calloc(64, sizeof *out);
    int rc;
    *n = 0;
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        ck_assert_uint_lt(*n, 64);
        out[(*n)++] = sl_tensor_retain(row.columns[0]);
        sl_row_clear(&row);
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH, "%s", sl_iterator_last_error(it));
    sl_iterator_free(it);
    return out;
}

START_TEST(test_pipeline_fuses_across_nodes)
{
    char *dir = tu_mkdtemp();
    sl_dataset *ds[3];
    sl_tensor **rows[3];
    size_t n[3];
    double sum = 0;
    size_t count = 0;
    int max = 0;
    ck_assert_int_eq(tu_make_image_folder(dir, 2, 8, 96, 64), 0);
    ds[0] = folder_pipeline(dir, 1, 1);
    ds[1] = folder_pipeline(dir, 1, 2);
    ds[2] = folder_pipeline(dir, 0, 2);
    for (int i = 0; i < 3; i++)
        rows[i] = collect(ds[i], &n[i]);
    ck_assert_int_eq(n[0], 4);
    ck_assert_int_eq(n[1], 4);
    ck_assert_int_eq(n[2], 4);
    for (size_t b = 0; b < 4; b++) {
        const uint8_t *f = sl_tensor_data(rows[0][b]), *g = sl_tensor_data(rows[2][b]);
        ck_assert_int_eq(sl_tensor_shape(rows[0][b])[1], 24);
        ck_assert(memcmp(sl_tensor_data(rows[0][b]), sl_tensor_data(rows[1][b]),
                         sl_tensor_nbytes(rows[0][b])) == 0);
        for (size_t i = 0; i < sl_tensor_nbytes(rows[0][b]); i++) {
            int d = abs((int)f[i] - g[i]);
            sum += d;
            max = d > max ? d : max;
            count++;
        }
    }
    /* the same boxes (another box would be tens of levels off), and the
     * fused path ran: its float rounding differs from OpenCV's fixed point
     * somewhere */
    ck_assert_msg(sum / (double)count <= SOFT_MEAN_BOUND && max <= 12, "mean %.3f max %d",
                  sum / (double)count, max);
    ck_assert_int_gt(max, 0);
    printf("pipeline (noise images): fused vs separate mean %.3f max %d\n",
           sum / (double)count, max);
    for (int i = 0; i < 3; i++) {
        for (size_t b = 0; b < n[i]; b++)
            sl_tensor_release(rows[i][b]);
        free(rows[i]);
        sl_dataset_free(ds[i]);
    }
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* The modes of sl_dataset_set_decode_fusion on images shrunk 8x (400x320
 * to 50x40): the default (crop) decodes at full scale, the separate ops'
 * pixels within 1 level; scaled decodes at 1/8 and differs more. */
static sl_dataset *shrink_pipeline(const char *dir, int mode)
{
    sl_image_folder_options o;
    sl_dataset *ds;
    sl_op *resize;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_image_folder_options_init(&o);
    o.dataset_dir = dir;
    o.decode = 1;
    o.num_parallel_workers = 1;
    o.sampler.shuffle = 0;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&resize, 40, 50, SL_INTER_LINEAR, NULL, 0), SL_OK);
    if (mode >= 0)
        sl_dataset_set_decode_fusion(ds, mode);
    ck_assert_int_eq(sl_dataset_map(ds, &resize, 1, "image", NULL, 1), SL_OK);
    sl_op_release(resize);
    ck_assert_int_eq(sl_dataset_batch(ds, 4, 1, 1), SL_OK);
    return ds;
}

START_TEST(test_decode_fusion_modes)
{
    char *dir = tu_mkdtemp();
    sl_tensor **rows[3];
    size_t n[3];
    double mean[2];
    int max[2];
    ck_assert_int_eq(tu_make_image_folder(dir, 1, 4, 400, 320), 0);
    /* -1: the default; then scaled; then off (the separate ops) */
    {
        const int modes[3] = {-1, SL_DECODE_FUSION_SCALED, SL_DECODE_FUSION_OFF};
        for (int i = 0; i < 3; i++) {
            sl_dataset *ds = shrink_pipeline(dir, modes[i]);
            rows[i] = collect(ds, &n[i]);
            ck_assert_int_eq(n[i], 1);
            sl_dataset_free(ds);
        }
    }
    for (int i = 0; i < 2; i++) {
        const uint8_t *f = sl_tensor_data(rows[i][0]), *g = sl_tensor_data(rows[2][0]);
        double sum = 0;
        max[i] = 0;
        for (size_t k = 0; k < sl_tensor_nbytes(rows[2][0]); k++) {
            int d = abs((int)f[k] - g[k]);
            sum += d;
            max[i] = d > max[i] ? d : max[i];
        }
        mean[i] = sum / (double)sl_tensor_nbytes(rows[2][0]);
    }
    printf("decode fusion modes, 8x shrink: crop (default) mean %.3f max %d; scaled mean %.3f "
           "max %d\n", mean[0], max[0], mean[1], max[1]);
    ck_assert_msg(max[0] <= 1, "the default differs from the separate ops by %d levels", max[0]);
    ck_assert_msg(mean[1] > mean[0] && max[1] > 1, "scaled decoded at full scale too");
    for (int i = 0; i < 3; i++) {
        sl_tensor_release(rows[i][0]);
        free(rows[i]);
    }
    tu_rmtree(dir);
    free(dir);
}
END_TEST

Suite *make_decode_fused_suite(void)
{
    Suite *s = suite_create("decode_fused");
    TCase *core = tu_tcase("core", 240);
    tcase_add_test(core, test_decode_fusion_modes);
    tcase_add_test(core, test_train_transform);
    tcase_add_test(core, test_crops_at_every_border);
    tcase_add_test(core, test_eval_transforms);
    tcase_add_test(core, test_fuse_patterns);
    tcase_add_test(core, test_fused_errors);
    tcase_add_test(core, test_fused_damaged_files);
    tcase_add_test(core, test_pipeline_fuses_across_nodes);
    suite_add_tcase(s, core);
    return s;
}

int main(void)
{
    return tu_run_suite_unless_tsan(make_decode_fused_suite,
                                    "the operators run on the calling thread (the pipeline test's threads "
                                    "are check_pipeline's): nothing for ThreadSanitizer");
}
