/* check_options.c: versioned options structs (core/options.h). The helper
 * is tested with a test struct in three versions, since today every public
 * struct is still at its first. */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/options.h"
#include "sluice/sluice.h"

Suite *make_options_suite(void);

#define CANARY 0xA5

/* A struct that grew twice: a caller built against version 1, this
 * "library" at version 2, and a caller built against version 3. Each ends
 * without tail padding, as the rule in core/options.h asks. */
typedef struct opt_v1 {
    size_t size;
    int64_t a;
    int32_t b, c;
} opt_v1;
typedef struct opt_v2 {
    size_t size;
    int64_t a;
    int32_t b, c;
    int64_t d; /* appended in version 2 */
} opt_v2;
typedef struct opt_v3 {
    size_t size;
    int64_t a;
    int32_t b, c;
    int64_t d;
    int64_t e; /* appended in version 3 */
} opt_v3;

static const size_t opt_v1_size = offsetof(opt_v2, c) + sizeof(int32_t);

/* Bytes with the alignment of any struct. */
typedef union buffer {
    max_align_t align;
    unsigned char b[1024];
} buffer;

static void v2_defaults(opt_v2 *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->a = 1;
    o->b = 2;
    o->c = 3;
    o->d = 4;
}

/* Every byte of b[from, to) is v. */
static int all_bytes(const unsigned char *b, size_t from, size_t to, unsigned char v)
{
    for (size_t i = from; i < to; i++)
        if (b[i] != v)
            return 0;
    return 1;
}

/* --- the helper ------------------------------------------------------- */

START_TEST(test_read_older_gets_defaults)
{
    /* A version-1 struct followed by bytes the caller does not own: the
     * library must read only its 24 bytes and default the rest. */
    buffer buf;
    opt_v1 old = {sizeof(opt_v1), 10, 20, 30};
    opt_v2 dst;
    sl__error err = {0};
    ck_assert_uint_eq(sizeof(opt_v1), opt_v1_size);
    memset(buf.b, 0x7f, sizeof buf.b);
    memcpy(buf.b, &old, sizeof old);
    v2_defaults(&dst);
    ck_assert_int_eq(sl__options_read(&dst, sizeof dst, opt_v1_size, buf.b, "opt", &err), SL_OK);
    ck_assert_int_eq(dst.a, 10);
    ck_assert_int_eq(dst.b, 20);
    ck_assert_int_eq(dst.c, 30);
    ck_assert_int_eq(dst.d, 4);
    ck_assert_uint_eq(dst.size, sizeof(opt_v2));
}
END_TEST

START_TEST(test_read_same_version)
{
    opt_v2 src, dst;
    sl__error err = {0};
    v2_defaults(&src);
    src.a = 7;
    src.d = 9;
    v2_defaults(&dst);
    ck_assert_int_eq(sl__options_read(&dst, sizeof dst, opt_v1_size, &src, "opt", &err), SL_OK);
    ck_assert_int_eq(dst.a, 7);
    ck_assert_int_eq(dst.d, 9);
}
END_TEST

START_TEST(test_read_uninitialised_refused)
{
    opt_v2 src, dst;
    sl__error err = {0};
    memset(&src, 0, sizeof src);
    src.a = 99;
    v2_defaults(&dst);
    ck_assert_int_eq(sl__options_read(&dst, sizeof dst, opt_v1_size, &src, "opt", &err),
                     SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not initialised with opt_init"));
    ck_assert_int_eq(dst.a, 1); /* unchanged */

    /* Garbage far beyond any struct's size is not read either. */
    src.size = SL__OPTIONS_MAX_SIZE + 1;
    err.msg[0] = '\0';
    ck_assert_int_eq(sl__options_read(&dst, sizeof dst, opt_v1_size, &src, "opt", &err),
                     SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not initialised"));
    ck_assert_int_eq(dst.a, 1);
}
END_TEST

START_TEST(test_read_older_than_v1_refused)
{
    opt_v2 src, dst;
    sl__error err = {0};
    v2_defaults(&src);
    src.a = 99;
    src.size = opt_v1_size - sizeof(int32_t); /* lacks c */
    v2_defaults(&dst);
    ck_assert_int_eq(sl__options_read(&dst, sizeof dst, opt_v1_size, &src, "opt", &err),
                     SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "older than any this library knows"));
    ck_assert_int_eq(dst.a, 1);
}
END_TEST

START_TEST(test_read_newer_zero_tail_accepted)
{
    opt_v3 src = {sizeof(opt_v3), 11, 12, 13, 14, 0};
    opt_v2 dst;
    sl__error err = {0};
    v2_defaults(&dst);
    ck_assert_int_eq(sl__options_read(&dst, sizeof dst, opt_v1_size, &src, "opt", &err), SL_OK);
    ck_assert_int_eq(dst.a, 11);
    ck_assert_int_eq(dst.d, 14);
    ck_assert_uint_eq(dst.size, sizeof(opt_v2));
}
END_TEST

START_TEST(test_read_newer_nonzero_tail_refused)
{
    opt_v3 src = {sizeof(opt_v3), 11, 12, 13, 14, 1};
    opt_v2 dst;
    sl__error err = {0};
    v2_defaults(&dst);
    ck_assert_int_eq(sl__options_read(&dst, sizeof dst, opt_v1_size, &src, "opt", &err),
                     SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "newer than this library"));
    ck_assert_ptr_nonnull(strstr(err.msg, "upgrade libsluice"));
    ck_assert_int_eq(dst.a, 1);
}
END_TEST

START_TEST(test_read_null_keeps_defaults)
{
    opt_v2 dst;
    v2_defaults(&dst);
    ck_assert_int_eq(sl__options_read(&dst, sizeof dst, opt_v1_size, NULL, "opt", NULL), SL_OK);
    ck_assert_int_eq(dst.a, 1);
    ck_assert_int_eq(dst.d, 4);
}
END_TEST

START_TEST(test_init_writes_at_most_size)
{
    buffer buf;
    opt_v2 d;
    size_t size;
    v2_defaults(&d);
    d.a = 0x1122334455667788;

    /* An older caller's struct (version 1): the fields it has, nothing past. */
    memset(buf.b, CANARY, sizeof buf.b);
    sl__options_init(buf.b, opt_v1_size, &d, sizeof d);
    memcpy(&size, buf.b, sizeof size);
    ck_assert_uint_eq(size, opt_v1_size);
    ck_assert_mem_eq(buf.b + sizeof size, (unsigned char *)&d + sizeof size,
                     opt_v1_size - sizeof size);
    ck_assert_msg(all_bytes(buf.b, opt_v1_size, sizeof buf.b, CANARY),
                  "init wrote past the caller's size");

    /* A newer caller's (version 3): defaults, then zeros to its size. */
    memset(buf.b, CANARY, sizeof buf.b);
    sl__options_init(buf.b, sizeof(opt_v3), &d, sizeof d);
    memcpy(&size, buf.b, sizeof size);
    ck_assert_uint_eq(size, sizeof(opt_v3));
    ck_assert_mem_eq(buf.b + sizeof size, (unsigned char *)&d + sizeof size,
                     sizeof d - sizeof size);
    ck_assert_msg(all_bytes(buf.b, sizeof(opt_v2), sizeof(opt_v3), 0),
                  "the fields the library does not know are not zeroed");
    ck_assert_msg(all_bytes(buf.b, sizeof(opt_v3), sizeof buf.b, CANARY),
                  "init wrote past the caller's size");

    /* Too small to hold its size: nothing at all. */
    memset(buf.b, CANARY, sizeof buf.b);
    sl__options_init(buf.b, sizeof size - 1, &d, sizeof d);
    ck_assert_msg(all_bytes(buf.b, 0, sizeof buf.b, CANARY), "init wrote into a tiny struct");
}
END_TEST

START_TEST(test_embedded_exact_size)
{
    sl__error err = {0};
    ck_assert_int_eq(sl__options_check_embedded(48, 48, "inner", "outer.inner", &err), SL_OK);
    ck_assert_int_eq(sl__options_check_embedded(0, 48, "inner", "outer.inner", &err), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "outer.inner"));
    ck_assert_ptr_nonnull(strstr(err.msg, "inner_init"));
    ck_assert_int_eq(sl__options_check_embedded(56, 48, "inner", "outer.inner", &err),
                     SL_EINVAL);
    ck_assert_int_eq(sl__options_check_embedded(40, 48, "inner", "outer.inner", &err),
                     SL_EINVAL);
}
END_TEST

Suite *make_options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc;

    tc = tcase_create("helper");
    tcase_add_test(tc, test_read_older_gets_defaults);
    tcase_add_test(tc, test_read_same_version);
    tcase_add_test(tc, test_read_uninitialised_refused);
    tcase_add_test(tc, test_read_older_than_v1_refused);
    tcase_add_test(tc, test_read_newer_zero_tail_accepted);
    tcase_add_test(tc, test_read_newer_nonzero_tail_refused);
    tcase_add_test(tc, test_read_null_keeps_defaults);
    tcase_add_test(tc, test_init_writes_at_most_size);
    tcase_add_test(tc, test_embedded_exact_size);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(make_options_suite());
    int failed;
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
