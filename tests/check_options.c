/* check_options.c: versioned options structs (core/options.h). The helper
 * is tested with a test struct in three versions, since today every public
 * struct is still at its first; then every public struct's init_sized and
 * every function that reads options. */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/error.h"
#include "core/options.h"
#include "exec/model_impl.h"
#include "exec/step_impl.h"
#include "sluice/sluice.h"
#include "testutil.h"

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

/* --- every public struct ------------------------------------------------ */

static void init_sampler(void *o, size_t n) { sl_sampler_options_init_sized(o, n); }
static void init_mnist(void *o, size_t n) { sl_mnist_options_init_sized(o, n); }
static void init_folder(void *o, size_t n) { sl_image_folder_options_init_sized(o, n); }
static void init_cifar(void *o, size_t n) { sl_cifar_options_init_sized(o, n); }
static void init_slices(void *o, size_t n) { sl_slices_options_init_sized(o, n); }
static void init_generator(void *o, size_t n) { sl_generator_options_init_sized(o, n); }
static void init_iterator(void *o, size_t n) { sl_iterator_options_init_sized(o, n); }
static void init_network(void *o, size_t n) { sl_network_options_init_sized(o, n); }
static void init_executor(void *o, size_t n) { sl_executor_options_init_sized(o, n); }
static void init_context(void *o, size_t n) { sl_context_init_sized(o, n); }
static void init_model(void *o, size_t n) { sl_model_options_init_sized(o, n); }
static void init_device(void *o, size_t n) { sl_device_options_init_sized(o, n); }
static void init_train(void *o, size_t n) { sl_train_options_init_sized(o, n); }
static void init_error_samples(void *o, size_t n) { sl_error_samples_options_init_sized(o, n); }

typedef struct public_struct {
    const char *name;
    size_t size;
    void (*init_sized)(void *o, size_t size);
    void (*init_inline)(void *o); /* the header's _init, into a struct of size bytes */
} public_struct;

static void inline_sampler(void *o) { sl_sampler_options_init(o); }
static void inline_mnist(void *o) { sl_mnist_options_init(o); }
static void inline_folder(void *o) { sl_image_folder_options_init(o); }
static void inline_cifar(void *o) { sl_cifar_options_init(o); }
static void inline_slices(void *o) { sl_slices_options_init(o); }
static void inline_generator(void *o) { sl_generator_options_init(o); }
static void inline_iterator(void *o) { sl_iterator_options_init(o); }
static void inline_network(void *o) { sl_network_options_init(o); }
static void inline_executor(void *o) { sl_executor_options_init(o); }
static void inline_context(void *o) { sl_context_init(o); }
static void inline_model(void *o) { sl_model_options_init(o); }
static void inline_device(void *o) { sl_device_options_init(o); }
static void inline_train(void *o) { sl_train_options_init(o); }
static void inline_error_samples(void *o) { sl_error_samples_options_init(o); }

static const public_struct publics[] = {
    {"sl_sampler_options", sizeof(sl_sampler_options), init_sampler, inline_sampler},
    {"sl_mnist_options", sizeof(sl_mnist_options), init_mnist, inline_mnist},
    {"sl_image_folder_options", sizeof(sl_image_folder_options), init_folder, inline_folder},
    {"sl_cifar_options", sizeof(sl_cifar_options), init_cifar, inline_cifar},
    {"sl_slices_options", sizeof(sl_slices_options), init_slices, inline_slices},
    {"sl_generator_options", sizeof(sl_generator_options), init_generator, inline_generator},
    {"sl_iterator_options", sizeof(sl_iterator_options), init_iterator, inline_iterator},
    {"sl_network_options", sizeof(sl_network_options), init_network, inline_network},
    {"sl_executor_options", sizeof(sl_executor_options), init_executor, inline_executor},
    {"sl_context", sizeof(sl_context), init_context, inline_context},
    {"sl_model_options", sizeof(sl_model_options), init_model, inline_model},
    {"sl_device_options", sizeof(sl_device_options), init_device, inline_device},
    {"sl_train_options", sizeof(sl_train_options), init_train, inline_train},
    {"sl_error_samples_options", sizeof(sl_error_samples_options), init_error_samples,
     inline_error_samples},
};

START_TEST(test_public_init_sized)
{
    const public_struct *p = &publics[_i];
    buffer buf, ref;
    size_t size, small = sizeof(size_t) + 4;
    ck_assert_uint_le(p->size + 64, sizeof buf.b);

    /* The inline _init records the size the caller was compiled with. */
    memset(ref.b, CANARY, sizeof ref.b);
    p->init_inline(ref.b);
    memcpy(&size, ref.b, sizeof size);
    ck_assert_msg(size == p->size, "%s: _init recorded %zu, not %zu", p->name, size, p->size);
    ck_assert_msg(all_bytes(ref.b, p->size, sizeof ref.b, CANARY), "%s: _init overran",
                  p->name);

    /* A smaller (older) caller's struct: nothing written past its size. */
    memset(buf.b, CANARY, sizeof buf.b);
    p->init_sized(buf.b, small);
    memcpy(&size, buf.b, sizeof size);
    ck_assert_msg(size == small, "%s: recorded %zu, not %zu", p->name, size, small);
    ck_assert_msg(memcmp(buf.b + sizeof size, ref.b + sizeof size, small - sizeof size) == 0,
                  "%s: the first fields are not the defaults", p->name);
    ck_assert_msg(all_bytes(buf.b, small, sizeof buf.b, CANARY),
                  "%s: init_sized wrote past %zu bytes", p->name, small);

    /* A bigger (newer) caller's struct: defaults, zeros to its size. */
    memset(buf.b, CANARY, sizeof buf.b);
    p->init_sized(buf.b, p->size + 16);
    ck_assert_msg(memcmp(buf.b + sizeof size, ref.b + sizeof size, p->size - sizeof size) == 0,
                  "%s: not the defaults", p->name);
    ck_assert_msg(all_bytes(buf.b, p->size, p->size + 16, 0), "%s: unknown tail not zeroed",
                  p->name);
    ck_assert_msg(all_bytes(buf.b, p->size + 16, sizeof buf.b, CANARY),
                  "%s: init_sized wrote past %zu bytes", p->name, p->size + 16);
}
END_TEST

/* --- the functions that read options ----------------------------------- */

static char *tmp_dir;

static void tmp_setup(void)
{
    tmp_dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmp_dir);
    ck_assert_int_eq(tu_make_mnist(tmp_dir, 6, 2, 0), 0);
}

static void tmp_teardown(void)
{
    tu_rmtree(tmp_dir);
    free(tmp_dir);
    tmp_dir = NULL;
}

START_TEST(test_dataset_refuses_bad_options)
{
    sl_dataset *ds;
    sl_mnist_options mo;
    sl_image_folder_options fo;
    int64_t size;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);

    /* Never initialised. */
    memset(&mo, 0, sizeof mo);
    mo.dataset_dir = tmp_dir;
    ck_assert_int_eq(sl_dataset_mnist(ds, &mo), SL_EINVAL);
    ck_assert_ptr_nonnull(
        strstr(sl_dataset_last_error(ds), "not initialised with sl_mnist_options_init"));

    /* From a sluice older than any: too small. */
    sl_mnist_options_init_sized(&mo, sizeof(size_t) + 4);
    mo.dataset_dir = tmp_dir;
    ck_assert_int_eq(sl_dataset_mnist(ds, &mo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "older than any"));

    /* An embedded sampler that was never initialised. */
    sl_mnist_options_init(&mo);
    mo.dataset_dir = tmp_dir;
    memset(&mo.sampler, 0, sizeof mo.sampler);
    mo.sampler.num_shards = 1;
    ck_assert_int_eq(sl_dataset_mnist(ds, &mo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "sl_mnist_options.sampler"));

    memset(&fo, 0, sizeof fo);
    fo.dataset_dir = tmp_dir;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &fo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds),
                                 "not initialised with sl_image_folder_options_init"));
    sl_image_folder_options_init(&fo);
    fo.dataset_dir = tmp_dir;
    memset(&fo.sampler, 0, sizeof fo.sampler);
    fo.sampler.num_shards = 1;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &fo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "sl_image_folder_options.sampler"));

    /* Nothing was set. */
    ck_assert_int_eq(sl_dataset_get_dataset_size(ds, &size), SL_ESTATE);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_dataset_newer_options)
{
    buffer buf;
    sl_mnist_options *mo = (sl_mnist_options *)buf.b;
    sl_dataset *ds;
    int64_t size;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);

    /* A caller built against a sluice with one more field, left alone. */
    memset(buf.b, CANARY, sizeof buf.b);
    sl_mnist_options_init_sized(mo, sizeof *mo + 8);
    mo->dataset_dir = tmp_dir;
    mo->usage = SL_MNIST_TRAIN;
    mo->sampler.num_samples = 4;
    ck_assert_int_eq(sl_dataset_mnist(ds, mo), SL_OK);
    ck_assert_int_eq(sl_dataset_get_dataset_size(ds, &size), SL_OK);
    ck_assert_int_eq(size, 4);

    /* ... and set. */
    buf.b[sizeof *mo + 3] = 1;
    ck_assert_int_eq(sl_dataset_mnist(ds, mo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "upgrade libsluice"));

    /* NULL means the defaults, which lack a folder. */
    ck_assert_int_eq(sl_dataset_mnist(ds, NULL), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "dataset_dir is not set"));
    sl_dataset_free(ds);
}
END_TEST

/* Rows until the end of data, or a negative status. */
static int64_t count_rows(sl_iterator *it)
{
    sl_row row = {0};
    int64_t n = 0;
    int rc;
    while ((rc = sl_iterator_next(it, &row)) == SL_OK || rc == SL_END_OF_EPOCH) {
        n += rc == SL_OK;
        sl_row_clear(&row);
    }
    return rc == SL_END_OF_DATA ? n : rc;
}

START_TEST(test_iterator_options)
{
    buffer buf;
    sl_iterator_options *io = (sl_iterator_options *)buf.b;
    sl_mnist_options mo;
    sl_dataset *ds;
    sl_iterator *it = NULL;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&mo);
    mo.dataset_dir = tmp_dir;
    mo.usage = SL_MNIST_TRAIN;
    ck_assert_int_eq(sl_dataset_mnist(ds, &mo), SL_OK);

    memset(buf.b, 0, sizeof buf.b);
    io->num_epochs = 1;
    io->queue_chunks = io->chunk_rows = 4;
    ck_assert_int_eq(sl_iterator_new(&it, ds, io), SL_EINVAL);
    ck_assert_ptr_null(it);
    ck_assert_ptr_nonnull(
        strstr(sl_dataset_last_error(ds), "not initialised with sl_iterator_options_init"));

    sl_iterator_options_init_sized(io, sizeof(size_t) + 4);
    ck_assert_int_eq(sl_iterator_new(&it, ds, io), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "older than any"));

    /* A newer caller's struct: its unknown field set, then left alone. */
    sl_iterator_options_init_sized(io, sizeof *io + 8);
    io->num_epochs = 2;
    buf.b[sizeof *io] = 1;
    ck_assert_int_eq(sl_iterator_new(&it, ds, io), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "upgrade libsluice"));
    ck_assert_ptr_null(it);
    buf.b[sizeof *io] = 0;
    ck_assert_int_eq(sl_iterator_new(&it, ds, io), SL_OK);
    ck_assert_int_eq(count_rows(it), 2 * 6);
    sl_iterator_free(it);

    /* NULL: one epoch. */
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    ck_assert_int_eq(count_rows(it), 6);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

/* sl_dataset_set_error_samples reads its options by the same rules. */
START_TEST(test_error_samples_options)
{
    buffer buf;
    sl_error_samples_options *eo = (sl_error_samples_options *)buf.b;
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    memset(buf.b, 0, sizeof buf.b);
    eo->mode = SL_ERROR_SAMPLES_SKIP;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds),
                                 "not initialised with sl_error_samples_options_init"));
    sl_error_samples_options_init_sized(eo, sizeof(size_t) + 4);
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "older than any"));
    sl_error_samples_options_init_sized(eo, sizeof *eo + 8);
    eo->mode = SL_ERROR_SAMPLES_SKIP;
    buf.b[sizeof *eo] = 1;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "upgrade libsluice"));
    buf.b[sizeof *eo] = 0;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_OK);
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, NULL), SL_OK);
    /* values out of range */
    sl_error_samples_options_init(eo);
    eo->mode = (sl_error_samples)3;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "mode 3"));
    eo->mode = SL_ERROR_SAMPLES_SKIP;
    eo->max_bad_samples = -2;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "max_bad_samples"));
    eo->max_bad_samples = -1;
    eo->max_bad_fraction = 1.5;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_EINVAL);
    eo->max_bad_fraction = NAN;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "max_bad_fraction"));
    eo->max_bad_fraction = 0.5;
    eo->unused0 = 1;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_EINVAL);
    eo->unused0 = 0;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, eo), SL_OK);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_network_build_options)
{
    sl_graph *g;
    sl_network_options no;
    sl_network net;
    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    memset(&no, 0, sizeof no);
    no.batch = 4;
    ck_assert_int_eq(sl_network_build(g, &no, &net), SL_EINVAL);
    ck_assert_ptr_nonnull(
        strstr(sl_graph_last_error(g), "not initialised with sl_network_options_init"));
    sl_network_options_init_sized(&no, sizeof(size_t) + 4);
    ck_assert_int_eq(sl_network_build(g, &no, &net), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_graph_last_error(g), "older than any"));
    /* NULL: LeNet5's defaults. */
    ck_assert_int_eq(sl_network_build(g, NULL, &net), SL_OK);
    sl_graph_free(g);
}
END_TEST

START_TEST(test_executor_options)
{
    buffer buf;
    sl_executor_options *eo = (sl_executor_options *)buf.b;
    sl_executor *ex = NULL;

    memset(buf.b, 0, sizeof buf.b);
    eo->threads = 1;
    eo->blas_threads = 1;
    ck_assert_int_eq(sl_executor_new(&ex, eo), SL_EINVAL);
    ck_assert_ptr_null(ex);

    sl_executor_options_init_sized(eo, sizeof(size_t) + 4);
    ck_assert_int_eq(sl_executor_new(&ex, eo), SL_EINVAL);
    ck_assert_ptr_null(ex);

    sl_executor_options_init_sized(eo, sizeof *eo + 8);
    eo->threads = 1;
    buf.b[sizeof *eo] = 1;
    ck_assert_int_eq(sl_executor_new(&ex, eo), SL_EINVAL);
    ck_assert_ptr_null(ex);
    buf.b[sizeof *eo] = 0;
    ck_assert_int_eq(sl_executor_new(&ex, eo), SL_OK);
    ck_assert_int_eq(sl_executor_threads(ex), 1);
    sl_executor_free(ex);
}
END_TEST

START_TEST(test_model_refuses_bad_options)
{
    buffer buf;
    sl_model_options *mo = (sl_model_options *)buf.b;
    sl_model *m = NULL;
    char err[512];

    memset(buf.b, 0, sizeof buf.b);
    ck_assert_int_eq(sl_model_new(&m, mo, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err, "not initialised with sl_model_options_init"));

    sl_model_options_init_sized(mo, sizeof(size_t) + 4);
    ck_assert_int_eq(sl_model_new(&m, mo, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "older than any"));

    sl_model_options_init_sized(mo, sizeof *mo + 8);
    buf.b[sizeof *mo + 7] = 1;
    ck_assert_int_eq(sl_model_new(&m, mo, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "newer than this library"));

    sl_model_options_init(mo);
    mo->network.size = 0;
    ck_assert_int_eq(sl_model_new(&m, mo, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "sl_model_options.network"));

    sl_model_options_init(mo);
    memset(&mo->context, 0, sizeof mo->context);
    mo->context.threads = mo->context.blas_threads = 1;
    ck_assert_int_eq(sl_model_new(&m, mo, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "sl_model_options.context"));
    ck_assert_ptr_null(m);
}
END_TEST

/* Callers compiled before the fields issue 7 appended (the executor's
 * spin_ns; the model's data_timeout_ms and compute_spin_ns) pass the first
 * version's size: they get those fields' defaults, whatever the memory
 * after their struct holds. */
START_TEST(test_first_version_callers_get_appended_defaults)
{
    buffer buf;
    sl_executor_options *eo = (sl_executor_options *)buf.b;
    sl_model_options *mo = (sl_model_options *)buf.b;
    sl_executor *ex = NULL;
    sl_model *m = NULL;
    char err[512];

    memset(buf.b, 0x7f, sizeof buf.b); /* what an old caller's stack might hold */
    sl_executor_options_init_sized(eo, offsetof(sl_executor_options, spin_ns));
    ck_assert_int_eq(sl_executor_new(&ex, eo), SL_OK);
    ck_assert_int_eq(ex->spin_ns, -1);
    sl_executor_free(ex);

    memset(buf.b, 0x7f, sizeof buf.b);
    sl_model_options_init_sized(mo, offsetof(sl_model_options, data_timeout_ms));
    mo->context.threads = 1;
    ck_assert_msg(sl_model_new(&m, mo, err, sizeof err) == SL_OK, "%s", err);
    ck_assert_int_eq(m->opts.data_timeout_ms, 300000);
    ck_assert_int_eq(m->opts.compute_spin_ns, -1);
    sl_model_free(m);
}
END_TEST

Suite *make_options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc;

    tc = tu_tcase("helper", 60);
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

    tc = tu_tcase("init", 60);
    tcase_add_loop_test(tc, test_public_init_sized, 0,
                        (int)(sizeof publics / sizeof publics[0]));
    suite_add_tcase(s, tc);

    tc = tu_tcase("readers", 60);
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, test_dataset_refuses_bad_options);
    tcase_add_test(tc, test_dataset_newer_options);
    tcase_add_test(tc, test_iterator_options);
    tcase_add_test(tc, test_error_samples_options);
    tcase_add_test(tc, test_network_build_options);
    tcase_add_test(tc, test_executor_options);
    tcase_add_test(tc, test_model_refuses_bad_options);
    tcase_add_test(tc, test_first_version_callers_get_appended_defaults);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_options_suite);
}
