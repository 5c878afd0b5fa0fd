/* check_decode_photos.c: Decode fused with the crop or resize after it, on
 * real photographs: Debian's mate-backgrounds (the README's test command
 * installs it; without it the test fails, naming the package), nature
 * photographs from 1280x1024 to 2560x1920, baseline and progressive, 4:2:0,
 * 4:2:2 and 4:4:4, and a line-art picture at 1920x1080 and 5640x3172.
 *
 * As in check_decode_fused.c (tests/decode_fused_ref.h): the fused result
 * equals the whole image decoded at the same N/8 scale and sampled at the
 * same positions, within 1 level; CenterCrop alone equals the separate
 * ops. Against decode-then-transform, where the fused op decodes at full
 * scale (N = 8) it stays within the bound (mean <= 1.5, max <= 12
 * levels); where it decodes at N/8 < 1 the full decode's bilinear taps
 * alias what the DCT scaling averages, so detailed pictures differ more:
 * the means seen are printed and bounded loosely (a wrong box or region is
 * tens of levels off). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/decode_fused_ref.h"
#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "tests/testutil.h"

Suite *make_decode_photos_suite(void);

#define PHOTOS "/usr/share/backgrounds/mate"
/* Mean absolute difference from decode-then-transform where decoded at
 * N/8 < 1, in levels: photographs (seen up to 5.6), line art (15.2). */
#define PHOTO_SCALED_MEAN 8.0
#define LINE_ART_SCALED_MEAN 20.0

static const struct {
    const char *name;
    int line_art;
} photos[] = {
    {"nature/Aqua.jpg", 0},        {"nature/Blinds.jpg", 0},     {"nature/Dune.jpg", 0},
    {"nature/FreshFlower.jpg", 0}, {"nature/Garden.jpg", 0},     {"nature/GreenMeadow.jpg", 0},
    {"nature/LadyBird.jpg", 0},    {"nature/RainDrops.jpg", 0},  {"nature/Storm.jpg", 0},
    {"nature/TwoWings.jpg", 0},    {"nature/Wood.jpg", 0},       {"nature/YellowFlower.jpg", 0},
    {"desktop/GreenTraditional.jpg", 0}, {"abstract/Elephants.jpg", 1},
    {"abstract/Elephants_5640x3172.jpg", 1},
};

static sl_tensor *read_photo(const char *name)
{
    char path[512];
    void *data;
    size_t n;
    int64_t shape[1];
    sl_tensor *t;
    snprintf(path, sizeof path, "%s/%s", PHOTOS, name);
    if (tu_read_file(path, &data, &n) != 0)
        ck_abort_msg("%s cannot be read: apt-get install -y mate-backgrounds (the README's test "
                     "command does)",
                     path);
    shape[0] = (int64_t)n;
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, 1, shape), SL_OK);
    memcpy(sl_tensor_data(t), data, n);
    free(data);
    return t;
}

/* Worst means and maxima of photographs at full scale [0] and reduced [1],
 * and of line art at reduced scale [2]. */
static ref_diff worst[3];

static void check_photo(const sl_tensor *jpeg, sl_op *decode, sl_op **ops, size_t n,
                        uint64_t seed, const ref_geom *g, int line_art, int exact,
                        const char *what)
{
    sl_op *fused = ref_fuse(decode, ops, n);
    sl_tensor *got, *sep = ref_separate(jpeg, decode, ops, n, seed), *same;
    /* the op's scale: the smallest of 1/8, 1/4, 1/2, 1 keeping the resized
     * size, so full scale when more than half of it is needed */
    int64_t ny = (8 * g->rh + g->bh - 1) / g->bh, nx = (8 * g->rw + g->bw - 1) / g->bw;
    int full_scale = ny > 4 || nx > 4;
    ref_diff d;
    char err[512];
    ck_assert_msg(sl_op_apply(fused, jpeg, &got, seed, err, sizeof err) == SL_OK, "%s: %s",
                  what, err);
    same = ref_same_scale(jpeg, g, 1);
    d = ref_compare(got, same, what);
    ck_assert_msg(d.max <= 1, "%s: %.3f mean, %d max from the same-scale reference", what,
                  d.mean, d.max);
    d = ref_compare(got, sep, what);
    if (exact)
        ck_assert_msg(d.max == 0, "%s: not exact (max %d)", what, d.max);
    if (full_scale)
        ck_assert_msg(d.mean <= 1.5 && d.max <= 12, "%s (full scale): mean %.3f max %d", what,
                      d.mean, d.max);
    else
        ck_assert_msg(d.mean <= (line_art ? LINE_ART_SCALED_MEAN : PHOTO_SCALED_MEAN),
                      "%s: mean %.3f max %d", what, d.mean, d.max);
    {
        int k = line_art && !full_scale ? 2 : !full_scale;
        worst[k].mean = fmax(worst[k].mean, d.mean);
        worst[k].max = d.max > worst[k].max ? d.max : worst[k].max;
    }
    sl_tensor_release(same);
    sl_tensor_release(sep);
    sl_tensor_release(got);
    sl_op_release(fused);
}

START_TEST(test_real_photographs)
{
    sl_op *decode, *rrc, *small, *shorter, *center, *ops[2];
    char what[256];
    ck_assert_int_eq(sl_op_decode_new(&decode, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_resized_crop_new(&rrc, 224, 224, SL_RRC_SCALE_MIN,
                                                   SL_RRC_SCALE_MAX, SL_RRC_RATIO_MIN,
                                                   SL_RRC_RATIO_MAX, SL_INTER_LINEAR,
                                                   SL_RRC_ATTEMPTS, NULL, 0),
                     SL_OK);
    /* boxes of 0.3% to 1% of the picture: near or below 224 pixels, so
     * mostly decoded at full scale */
    ck_assert_int_eq(sl_op_random_resized_crop_new(&small, 224, 224, 0.003, 0.01, 0.5, 2.0,
                                                   SL_INTER_LINEAR, 10, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_resize_shorter_side_new(&shorter, 256, SL_INTER_LINEAR, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_center_crop_new(&center, 224, 224, NULL, 0), SL_OK);
    ops[0] = shorter;
    ops[1] = center;
    for (size_t p = 0; p < sizeof photos / sizeof photos[0]; p++) {
        sl_tensor *jpeg = read_photo(photos[p].name);
        int64_t h, w;
        ref_geom g;
        ref_jpeg_size(jpeg, &h, &w);
        for (uint64_t seed = 0; seed < 3; seed++) {
            snprintf(what, sizeof what, "%s rrc seed %llu", photos[p].name,
                     (unsigned long long)seed);
            ref_geom_rrc(&g, rrc, h, w, seed);
            check_photo(jpeg, decode, &rrc, 1, seed, &g, photos[p].line_art, 0, what);
            snprintf(what, sizeof what, "%s small rrc seed %llu", photos[p].name,
                     (unsigned long long)seed);
            ref_geom_rrc(&g, small, h, w, seed);
            check_photo(jpeg, decode, &small, 1, seed, &g, photos[p].line_art, 0, what);
        }
        snprintf(what, sizeof what, "%s resize 256 + center 224", photos[p].name);
        ref_geom_eval(&g, h, w, 256, 0, 0, 224, 224);
        check_photo(jpeg, decode, ops, 2, 0, &g, photos[p].line_art, 0, what);
        snprintf(what, sizeof what, "%s center 224 alone", photos[p].name);
        ref_geom_eval(&g, h, w, 0, 0, 0, 224, 224);
        check_photo(jpeg, decode, &center, 1, 0, &g, photos[p].line_art, 1, what);
        sl_tensor_release(jpeg);
    }
    printf("photographs, fused against decode-then-transform (levels of 255): decoded at full "
           "scale mean %.3f max %d; at N/8 < 1 mean %.3f max %d; line art at N/8 < 1 mean "
           "%.3f max %d\n",
           worst[0].mean, worst[0].max, worst[1].mean, worst[1].max, worst[2].mean,
           worst[2].max);
    sl_op_release(center);
    sl_op_release(shorter);
    sl_op_release(small);
    sl_op_release(rrc);
    sl_op_release(decode);
}
END_TEST

Suite *make_decode_photos_suite(void)
{
    Suite *s = suite_create("decode_photos");
    TCase *core = tu_tcase("core", 240);
    tcase_add_test(core, test_real_photographs);
    suite_add_tcase(s, core);
    return s;
}

int main(void)
{
    return tu_run_suite_unless_tsan(make_decode_photos_suite,
                                    "the operators run on the calling thread only: nothing for "
                                    "ThreadSanitizer");
}
