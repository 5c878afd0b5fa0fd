/* check_exec.c: the executor layer: graph building and its errors,
 * autodiff (whole graphs against finite differences), the memory plan,
 * GRAPH against PYNATIVE and 1 against 2 threads (bit for bit), runtime
 * errors, checkpoints and graph dumps. */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/rng.h"
#include "exec/model_impl.h"
#include "exec/step_impl.h"
#include "sluice/sluice.h"
#include "testutil.h"

Suite *make_exec_suite(void);

/* Every allocation in this process is counted (glibc's own allocator does
 * the work), so a test can say that running steps allocates nothing. The
 * sanitizers bring their own malloc, so there nothing is counted. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define COUNTS_ALLOCATIONS 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
static atomic_long allocations;

void *malloc(size_t n)
{
    atomic_fetch_add(&allocations, 1);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    atomic_fetch_add(&allocations, 1);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    atomic_fetch_add(&allocations, 1);
    return __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    atomic_fetch_add(&allocations, 1);
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    atomic_fetch_add(&allocations, 1);
    *out = __libc_memalign(align, n);
    return *out ? 0 : ENOMEM;
}
#endif

/* --- helpers ---------------------------------------------------------- */

static sl_tensor *tensor_f32(int ndim, const int64_t *shape, uint64_t seed, float spread)
{
    sl_tensor *t = NULL;
    sl_rng rng;
    ck_assert_int_eq(sl_tensor_new(&t, SL_FLOAT32, ndim, shape), SL_OK);
    sl__rng_seed(&rng, seed, 1, 2, 3);
    for (size_t i = 0; i < sl_tensor_numel(t); i++)
        ((float *)sl_tensor_data(t))[i] = (float)((sl__rng_uniform(&rng) * 2.0 - 1.0) * spread);
    return t;
}

static sl_tensor *labels_i32(int64_t n, int classes)
{
    sl_tensor *t = NULL;
    ck_assert_int_eq(sl_tensor_new(&t, SL_INT32, 1, &n), SL_OK);
    for (int64_t i = 0; i < n; i++)
        ((int32_t *)sl_tensor_data(t))[i] = (int32_t)((i * 7 + 3) % classes);
    return t;
}

static sl_executor *executor(int threads)
{
    sl_executor_options o;
    sl_executor *ex = NULL;
    sl_executor_options_init(&o);
    o.threads = threads;
    ck_assert_int_eq(sl_executor_new(&ex, &o), SL_OK);
    return ex;
}

/* A small network touching every op: conv (stride 1, pad 1), relu,
 * max-pool, a second conv (stride 2), a value used twice (relu and add),
 * flatten, dense with and without bias, and the loss. */
typedef struct small_net {
    int image, label, logits, loss;
} small_net;

static sl_graph *small_graph(small_net *n, uint64_t seed)
{
    sl_graph *g;
    sl_init tn = {SL_INIT_TRUNCATED_NORMAL, 0.3f};
    int64_t is[4] = {3, 2, 9, 9}, ls[1] = {3};
    int64_t w1s[4] = {4, 2, 3, 3}, w2s[4] = {3, 4, 2, 2}, d1s[2] = {5, 12}, b1s[1] = {5},
            d2s[2] = {4, 5};
    int x, w1, w2, d1, b1, d2, r;
    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    sl_graph_set_seed(g, seed);
    n->image = sl_graph_input(g, "image", SL_FLOAT32, 4, is);
    n->label = sl_graph_input(g, "label", SL_INT32, 1, ls);
    w1 = sl_graph_param(g, "c1.weight", 4, w1s, tn);
    x = sl_graph_conv2d(g, "c1", n->image, w1, 1, 1);   /* (3, 4, 9, 9) */
    r = sl_graph_relu(g, "r1", x);
    x = sl_graph_add(g, "skip", r, x);                  /* x read twice */
    x = sl_graph_max_pool2d(g, "p1", x, 2, 2);          /* (3, 4, 4, 4) */
    w2 = sl_graph_param(g, "c2.weight", 4, w2s, tn);
    x = sl_graph_conv2d(g, "c2", x, w2, 2, 0);          /* (3, 3, 2, 2) */
    x = sl_graph_flatten(g, NULL, x);                   /* (3, 12) */
    d1 = sl_graph_param(g, "d1.weight", 2, d1s, tn);
    b1 = sl_graph_param(g, "d1.bias", 1, b1s, tn);
    x = sl_graph_dense(g, "d1", x, d1, b1);
    x = sl_graph_relu(g, NULL, x);
    d2 = sl_graph_param(g, "d2.weight", 2, d2s, tn);
    n->logits = sl_graph_dense(g, "d2", x, d2, -1);
    n->loss = sl_graph_softmax_cross_entropy(g, "loss", n->logits, n->label);
    ck_assert_msg(n->loss >= 0, "%s", sl_graph_last_error(g));
    return g;
}

static float run_loss(sl_step *s, sl_tensor *image, sl_tensor *label)
{
    sl_tensor *feed[2] = {image, label};
    ck_assert_int_eq(sl_step_run(s, feed, 2), SL_OK);
    return *(const float *)sl_step_output(s, 0, NULL);
}

static sl_model *lenet_model(sl_mode mode, int threads, uint64_t seed, char *err)
{
    sl_model_options o;
    sl_model *m = NULL;
    sl_model_options_init(&o);
    o.context.mode = mode;
    o.context.threads = threads;
    o.seed = seed;
    ck_assert_msg(sl_model_new(&m, &o, err, 512) == SL_OK, "%s", err);
    return m;
}

/* Every parameter's bytes, concatenated (malloc'd). */
static unsigned char *param_bytes(sl_graph *g, size_t *len)
{
    size_t total = 0, at = 0;
    unsigned char *out;
    for (size_t i = 0; i < sl_graph_num_params(g); i++) {
        size_t n;
        sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        total += n * sizeof(float);
    }
    out = malloc(total ? total : 1);
    for (size_t i = 0; i < sl_graph_num_params(g); i++) {
        size_t n;
        float *d = sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        memcpy(out + at, d, n * sizeof(float));
        at += n * sizeof(float);
    }
    *len = total;
    return out;
}

/* A whole file as a NUL-terminated string (malloc'd). */
static char *read_text(const char *path)
{
    void *data;
    size_t n;
    char *text;
    ck_assert_msg(tu_read_file(path, &data, &n) == 0, "cannot read %s", path);
    text = malloc(n + 1);
    memcpy(text, data, n);
    text[n] = '\0';
    free(data);
    return text;
}

/* --- building --------------------------------------------------------- */

START_TEST(test_build_shapes)
{
    small_net n;
    sl_graph *g = small_graph(&n, 1);
    sl_tensor_spec spec;
    ck_assert_int_eq(sl_graph_node_spec(g, n.logits, &spec), SL_OK);
    ck_assert_int_eq(spec.ndim, 2);
    ck_assert_int_eq(spec.shape[0], 3);
    ck_assert_int_eq(spec.shape[1], 4);
    ck_assert_int_eq(sl_graph_node_spec(g, sl_graph_find(g, "c2"), &spec), SL_OK);
    ck_assert_int_eq(spec.shape[1], 3);
    ck_assert_int_eq(spec.shape[2], 2);
    ck_assert_int_eq(spec.shape[3], 2);
    ck_assert_str_eq(sl_graph_node_op(g, n.loss), "softmax_cross_entropy");
    ck_assert_int_eq(sl_graph_num_params(g), 5);
    sl_graph_free(g);
}
END_TEST

/* sl_graph_new(&g): SL_OK and an empty graph in *out. (Its calloc cannot be
 * made to fail here; SL_ENOMEM leaves *out NULL, as sl_dataset_new's test in
 * check_threads shows for the dataset.) */
START_TEST(test_graph_new_sets_out)
{
    sl_graph *g = (sl_graph *)&g; /* not NULL, not a graph */
    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_ne(g, (sl_graph *)&g);
    ck_assert_uint_eq(sl_graph_num_nodes(g), 0);
    ck_assert_str_eq(sl_graph_last_error(g), "");
    sl_graph_free(g);
}
END_TEST

START_TEST(test_build_errors)
{
    sl_graph *g;
    sl_init z = {SL_INIT_ZEROS, 0};
    int64_t is[4] = {32, 3, 32, 32}, ws[4] = {6, 1, 5, 5}, big[4] = {6, 3, 40, 40};
    int64_t ls[1] = {32}, fl[2] = {32, 3072}, dw[2] = {10, 100};
    int x, w, c, k;
    const char *msg;

    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    x = sl_graph_input(g, "image", SL_FLOAT32, 4, is);
    w = sl_graph_param(g, "conv1.weight", 4, ws, z);
    /* conv channel mismatch: names the op, the nodes and both shapes */
    c = sl_graph_conv2d(g, "conv1", x, w, 1, 0);
    ck_assert_int_eq(c, SL_ESHAPE);
    msg = sl_graph_last_error(g);
    ck_assert_msg(strstr(msg, "conv2d 'conv1'") && strstr(msg, "(32, 3, 32, 32)") &&
                      strstr(msg, "(6, 1, 5, 5)"),
                  "%s", msg);
    /* a failed builder's result passed on keeps the first message */
    k = sl_graph_relu(g, "r", c);
    ck_assert_int_lt(k, 0);
    ck_assert_str_eq(sl_graph_last_error(g), msg);
    /* kernel larger than the input */
    w = sl_graph_param(g, "big", 4, big, z);
    ck_assert_int_eq(sl_graph_conv2d(g, NULL, x, w, 1, 0), SL_ESHAPE);
    ck_assert_ptr_nonnull(strstr(sl_graph_last_error(g), "does not fit"));
    /* dense needs (N, IN) matching the weight */
    x = sl_graph_reshape(g, "flat", x, 2, fl);
    ck_assert_int_ge(x, 0);
    w = sl_graph_param(g, "fc.weight", 2, dw, z);
    ck_assert_int_eq(sl_graph_dense(g, "fc", x, w, -1), SL_ESHAPE);
    ck_assert_ptr_nonnull(strstr(sl_graph_last_error(g), "dense 'fc'"));
    /* reshape to a different count */
    ck_assert_int_eq(sl_graph_reshape(g, NULL, x, 2, dw), SL_ESHAPE);
    /* duplicate names, unnamed params, bad ids */
    ck_assert_int_eq(sl_graph_param(g, "fc.weight", 2, dw, z), SL_EINVAL);
    ck_assert_int_eq(sl_graph_param(g, NULL, 2, dw, z), SL_EINVAL);
    ck_assert_int_eq(sl_graph_relu(g, NULL, 9999), SL_EINVAL);
    /* labels must be int32 of the batch */
    k = sl_graph_input(g, "flabel", SL_FLOAT32, 1, ls);
    ck_assert_int_eq(sl_graph_softmax_cross_entropy(g, NULL, x, k), SL_ESHAPE);
    ck_assert_ptr_nonnull(strstr(sl_graph_last_error(g), "int32"));
    /* backward needs a loss node */
    ck_assert_int_eq(sl_graph_backward(g, x), SL_EINVAL);
    /* an optimizer needs gradients */
    ck_assert_int_eq(sl_graph_momentum(g, 0.01f, 0.9f), SL_ESTATE);
    sl_graph_free(g);
}
END_TEST

/* --- autodiff ---------------------------------------------------------- */

/* Every gradient of g's first nparams parameters against central
 * differences of the loss, computed through a forward-only step. */
static void check_finite_differences(sl_graph *g, int loss, sl_tensor *image, sl_tensor *label,
                                     size_t nparams)
{
    sl_executor *ex = executor(1);
    int outs[8];
    size_t nouts = 0;
    sl_step *grads = NULL, *fwd = NULL;
    sl_tensor *feed[2] = {image, label};
    int params[7], checked = 0, skipped = 0;

    ck_assert_uint_le(nparams, 7);
    ck_assert_int_eq(sl_graph_backward(g, loss), SL_OK);
    outs[nouts++] = loss;
    for (size_t i = 0; i < nparams; i++) {
        params[i] = sl_graph_param_at(g, i);
        outs[nouts++] = sl_graph_grad(g, params[i]);
        ck_assert_int_ge(outs[nouts - 1], 0);
    }
    ck_assert_int_eq(sl_step_new(&grads, g, ex, SL_GRAPH_MODE, outs, nouts, 0), SL_OK);
    ck_assert_int_eq(sl_step_new(&fwd, g, ex, SL_GRAPH_MODE, &loss, 1, 0), SL_OK);
    ck_assert_int_eq(sl_step_run(grads, feed, 2), SL_OK);
    for (size_t p = 0; p < nparams; p++) {
        size_t numel;
        float *w = sl_graph_param_data(g, params[p], &numel);
        const float *dw = sl_step_output(grads, p + 1, NULL);
        for (size_t i = 0; i < numel; i++) {
            float keep = w[i];
            double base, up, down, fd, left, right, eps = 1e-3;
            base = run_loss(fwd, image, label);
            w[i] = keep + (float)eps;
            up = run_loss(fwd, image, label);
            w[i] = keep - (float)eps;
            down = run_loss(fwd, image, label);
            w[i] = keep;
            fd = (up - down) / (2 * eps);
            /* At a ReLU or max-pool kink the slopes either side differ and
             * no difference quotient is the derivative: skip those. */
            left = (base - down) / eps;
            right = (up - base) / eps;
            if (fabs(left - right) > 2e-3 + 0.1 * fabs(fd)) {
                skipped++;
                continue;
            }
            checked++;
            ck_assert_msg(fabs(fd - dw[i]) <= 2e-3 + 2e-2 * fabs(fd),
                          "%s[%zu]: autodiff %g, finite difference %g",
                          sl_graph_node_name(g, params[p]), i, (double)dw[i], fd);
        }
    }
    ck_assert_msg(skipped * 10 < checked, "%d kinks skipped, %d values checked", skipped,
                  checked);
    sl_step_free(grads);
    sl_step_free(fwd);
    sl_executor_free(ex);
}

START_TEST(test_autodiff_finite_differences)
{
    small_net n;
    sl_graph *g = small_graph(&n, 7);
    int64_t is[4] = {3, 2, 9, 9};
    sl_tensor *image = tensor_f32(4, is, 3, 1.0f), *label = labels_i32(3, 4);

    check_finite_differences(g, n.loss, image, label, 5);
    sl_graph_free(g);
    sl_tensor_release(image);
    sl_tensor_release(label);
}
END_TEST

/* ReduceMean over (H, W) (seed 004's ReLUReduceMeanDense): its shapes, its
 * values against a plain sum, its gradient against finite differences,
 * and the axis it refuses. */
START_TEST(test_reduce_mean)
{
    sl_graph *g;
    sl_init tn = {SL_INIT_TRUNCATED_NORMAL, 0.3f};
    int64_t is[4] = {3, 2, 5, 5}, ws[4] = {4, 2, 3, 3}, ds[2] = {4, 4}, bs[1] = {4};
    sl_tensor *image = tensor_f32(4, is, 5, 1.0f), *label = labels_i32(3, 4);
    sl_tensor_spec spec;
    sl_executor *ex = executor(2);
    sl_step *fwd = NULL;
    int x, c, r, m, k, w, d, b, loss, label_in;
    const float *mean, *relu;

    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    sl_graph_set_seed(g, 3);
    x = sl_graph_input(g, "image", SL_FLOAT32, 4, is);
    label_in = sl_graph_input(g, "label", SL_INT32, 1, is);
    w = sl_graph_param(g, "c.weight", 4, ws, tn);
    c = sl_graph_conv2d(g, "c", x, w, 1, 1);            /* (3, 4, 5, 5) */
    r = sl_graph_relu(g, "r", c);
    m = sl_graph_reduce_mean(g, "mean", r, 2, 0);       /* (3, 4) */
    k = sl_graph_reduce_mean(g, "kept", r, 1, 1);       /* (3, 1, 1, 1) */
    ck_assert_msg(m >= 0 && k >= 0, "%s", sl_graph_last_error(g));
    ck_assert_int_eq(sl_graph_node_spec(g, m, &spec), SL_OK);
    ck_assert_int_eq(spec.ndim, 2);
    ck_assert_int_eq(spec.shape[0], 3);
    ck_assert_int_eq(spec.shape[1], 4);
    ck_assert_int_eq(sl_graph_node_spec(g, k, &spec), SL_OK);
    ck_assert_int_eq(spec.ndim, 4);
    ck_assert_int_eq(spec.shape[1] * spec.shape[2] * spec.shape[3], 1);
    ck_assert_str_eq(sl_graph_node_op(g, m), "reduce_mean");
    ck_assert_int_eq(sl_graph_reduce_mean(g, NULL, r, 4, 0), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_graph_last_error(g), "axis 4 of input 'r'"));
    ck_assert_int_lt(sl_graph_reduce_mean(g, NULL, label_in, 0, 0), 0);   /* int32 */

    /* the mean of each (sample, channel) plane of the ReLU's output, on two
     * threads */
    {
        int outs[2] = {m, r};
        ck_assert_int_eq(sl_step_new(&fwd, g, ex, SL_GRAPH_MODE, outs, 2, 0), SL_OK);
        ck_assert_int_eq(sl_step_num_inputs(fwd), 1);
        ck_assert_int_eq(sl_step_run(fwd, &image, 1), SL_OK);
        mean = sl_step_output(fwd, 0, NULL);
        relu = sl_step_output(fwd, 1, NULL);
        for (size_t p = 0; p < 12; p++) {
            float sum = 0.0f;
            for (size_t i = 0; i < 25; i++)
                sum += relu[p * 25 + i];
            ck_assert_float_eq(mean[p], sum / 25.0f);
        }
        sl_step_free(fwd);
    }
    sl_executor_free(ex);
    sl_graph_free(g);

    /* the gradients through it, on a graph with the loss's label input */
    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    sl_graph_set_seed(g, 3);
    x = sl_graph_input(g, "image", SL_FLOAT32, 4, is);
    label_in = sl_graph_input(g, "label", SL_INT32, 1, is);
    w = sl_graph_param(g, "c.weight", 4, ws, tn);
    r = sl_graph_relu(g, "r", sl_graph_conv2d(g, "c", x, w, 1, 1));
    m = sl_graph_reduce_mean(g, "mean", r, 2, 0);
    d = sl_graph_param(g, "d.weight", 2, ds, tn);
    b = sl_graph_param(g, "d.bias", 1, bs, tn);
    loss = sl_graph_softmax_cross_entropy(g, "loss", sl_graph_dense(g, "d", m, d, b), label_in);
    ck_assert_msg(loss >= 0, "%s", sl_graph_last_error(g));
    check_finite_differences(g, loss, image, label, 3);
    sl_graph_free(g);
    sl_tensor_release(image);
    sl_tensor_release(label);
}
END_TEST

/* A conv, ReLU, mean over (H, W) and dense network of (4, 2, 5, 5) images
 * with the given loss: 0 sparse mean (labels int32 (4)), 1 dense mean,
 * 2 dense per sample (labels float32 (4, 4)). */
static sl_graph *gap_graph(int loss_kind, int *loss)
{
    sl_graph *g;
    sl_init tn = {SL_INIT_TRUNCATED_NORMAL, 0.3f};
    int64_t is[4] = {4, 2, 5, 5}, ws[4] = {4, 2, 3, 3}, ds[2] = {4, 4}, bs[1] = {4};
    int x, y, w, d, b, logits;
    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    sl_graph_set_seed(g, 11);
    x = sl_graph_input(g, "image", SL_FLOAT32, 4, is);
    y = loss_kind == 0 ? sl_graph_input(g, "label", SL_INT32, 1, is)
                       : sl_graph_input(g, "label", SL_FLOAT32, 2, ds);
    w = sl_graph_param(g, "c.weight", 4, ws, tn);
    x = sl_graph_relu(g, "r", sl_graph_conv2d(g, "c", x, w, 1, 1));
    x = sl_graph_reduce_mean(g, "mean", x, 2, 0);
    d = sl_graph_param(g, "d.weight", 2, ds, tn);
    b = sl_graph_param(g, "d.bias", 1, bs, tn);
    logits = sl_graph_dense(g, "d", x, d, b);
    *loss = loss_kind == 0 ? sl_graph_softmax_cross_entropy(g, "loss", logits, y)
                           : sl_graph_softmax_cross_entropy_dense(g, "loss", logits, y,
                                                                  loss_kind == 1);
    ck_assert_msg(*loss >= 0, "%s", sl_graph_last_error(g));
    return g;
}

/* The gradient of every parameter after one run of g's loss. */
static float *grads_of(sl_graph *g, int loss, sl_tensor *image, sl_tensor *label, size_t *len)
{
    sl_executor *ex = executor(2);
    sl_step *st = NULL;
    sl_tensor *feed[2] = {image, label};
    int outs[3];
    size_t at = 0, total = 0;
    float *out;
    ck_assert_int_eq(sl_graph_backward(g, loss), SL_OK);
    for (size_t i = 0; i < 3; i++) {
        size_t n;
        sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        outs[i] = sl_graph_grad(g, sl_graph_param_at(g, i));
        total += n;
    }
    ck_assert_int_eq(sl_step_new(&st, g, ex, SL_GRAPH_MODE, outs, 3, 0), SL_OK);
    ck_assert_int_eq(sl_step_run(st, feed, 2), SL_OK);
    out = malloc(total * sizeof *out);
    for (size_t i = 0; i < 3; i++) {
        const float *v = sl_step_output(st, i, NULL);
        size_t n;
        sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        memcpy(out + at, v, n * sizeof *out);
        at += n;
    }
    sl_step_free(st);
    sl_executor_free(ex);
    *len = total;
    return out;
}

/* Softmax cross-entropy against dense labels (seed 004's
 * SoftmaxCrossEntropyWithLogits(sparse=False)): with one-hot labels its
 * mean is the sparse loss and gradient bit for bit; per sample, its
 * gradients are N times the mean's (exactly: N is 4); against a spread of
 * labels, its gradients match finite differences; a label shape that is
 * not the logits' is refused. */
START_TEST(test_softmax_xent_dense)
{
    int64_t is[4] = {4, 2, 5, 5}, ls[2] = {4, 4};
    sl_tensor *image = tensor_f32(4, is, 9, 1.0f), *sparse = labels_i32(4, 4), *onehot = NULL,
              *spread = NULL;
    sl_graph *g;
    float *gs, *gm, *gn, *yl;
    size_t ns, nm, nn;
    int loss;

    ck_assert_int_eq(sl_tensor_new(&onehot, SL_FLOAT32, 2, ls), SL_OK);
    ck_assert_int_eq(sl_tensor_new(&spread, SL_FLOAT32, 2, ls), SL_OK);
    yl = sl_tensor_data(onehot);
    for (int i = 0; i < 16; i++)
        yl[i] = (i % 4) == ((int32_t *)sl_tensor_data(sparse))[i / 4] ? 1.0f : 0.0f;
    yl = sl_tensor_data(spread);
    for (int i = 0; i < 16; i++)
        yl[i] = 0.1f + 0.1f * (float)((i * 5) % 4);   /* rows need not sum to 1 */

    g = gap_graph(0, &loss);
    gs = grads_of(g, loss, image, sparse, &ns);
    sl_graph_free(g);
    g = gap_graph(1, &loss);
    gm = grads_of(g, loss, image, onehot, &nm);
    sl_graph_free(g);
    g = gap_graph(2, &loss);
    {
        sl_tensor_spec spec;
        ck_assert_int_eq(sl_graph_node_spec(g, loss, &spec), SL_OK);
        ck_assert_int_eq(spec.ndim, 1);
        ck_assert_int_eq(spec.shape[0], 4);
    }
    gn = grads_of(g, loss, image, onehot, &nn);
    sl_graph_free(g);
    ck_assert_uint_eq(ns, nm);
    ck_assert_uint_eq(ns, nn);
    ck_assert_int_eq(memcmp(gs, gm, ns * sizeof *gs), 0);
    for (size_t i = 0; i < ns; i++)
        ck_assert_msg(gn[i] == 4.0f * gm[i], "grad %zu: per sample %g, mean %g", i,
                      (double)gn[i], (double)gm[i]);
    free(gs);
    free(gm);
    free(gn);

    g = gap_graph(1, &loss);
    check_finite_differences(g, loss, image, spread, 3);
    sl_graph_free(g);

    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    {
        int64_t bad[2] = {4, 3};
        int x = sl_graph_input(g, "x", SL_FLOAT32, 2, ls);
        int y = sl_graph_input(g, "y", SL_FLOAT32, 2, bad);
        ck_assert_int_eq(sl_graph_softmax_cross_entropy_dense(g, "l", x, y, 0), SL_ESHAPE);
        ck_assert_ptr_nonnull(strstr(sl_graph_last_error(g), "must have the shape of logits"));
    }
    sl_graph_free(g);
    sl_tensor_release(image);
    sl_tensor_release(sparse);
    sl_tensor_release(onehot);
    sl_tensor_release(spread);
}
END_TEST

/* --- the memory plan --------------------------------------------------- */

START_TEST(test_plan_no_overlap)
{
    small_net n;
    sl_graph *g = small_graph(&n, 2);
    sl_executor *ex = executor(2);
    sl_step *s = NULL;
    size_t sum = 0;

    ck_assert_int_eq(sl_graph_backward(g, n.loss), SL_OK);
    ck_assert_int_eq(sl_graph_momentum(g, 0.01f, 0.9f), SL_OK);
    ck_assert_int_eq(sl_step_new(&s, g, ex, SL_GRAPH_MODE, &n.loss, 1, 1), SL_OK);
    /* Two values alive at the same node never share bytes; a node's
     * scratch overlaps nothing alive at it. */
    for (int a = 0; a < s->nslots; a++) {
        const sl__slot *x = &s->slots[a];
        if (x->storage != SL__STORE_TEMP)
            continue;
        sum += x->bytes;
        ck_assert_uint_le(x->offset + x->bytes, s->arena_bytes);
        for (int b = a + 1; b < s->nslots; b++) {
            const sl__slot *y = &s->slots[b];
            int alive_together = b <= x->last_use;
            if (alive_together && y->storage == SL__STORE_TEMP)
                ck_assert_msg(x->offset + x->bytes <= y->offset ||
                                  y->offset + y->bytes <= x->offset,
                              "slots %d and %d overlap", a, b);
            if (alive_together && y->scratch > 0)
                ck_assert(x->offset + x->bytes <= y->scratch_offset ||
                          y->scratch_offset + y->scratch * 2 <= x->offset);
        }
    }
    /* ... and the arena reuses memory: smaller than every value at once */
    ck_assert_uint_lt(s->arena_bytes, sum);
    sl_step_free(s);
    sl_executor_free(ex);
    sl_graph_free(g);
}
END_TEST

/* --- same numbers, whatever the mode or the threads ----------------------- */

/* Trains LeNet 20 steps on a fixed batch in the given mode and threads;
 * returns the losses and the final parameters. */
static unsigned char *lenet_20_steps(sl_mode mode, int threads, float *losses, size_t *len)
{
    char err[512];
    sl_model *m = lenet_model(mode, threads, 5, err);
    int64_t is[4] = {32, 1, 32, 32};
    sl_tensor *image = tensor_f32(4, is, 11, 1.5f), *label = labels_i32(32, 10);
    unsigned char *bytes;
    for (int i = 0; i < 20; i++)
        losses[i] = run_loss(sl_model_train_step(m), image, label);
    bytes = param_bytes(sl_model_graph(m), len);
    sl_tensor_release(image);
    sl_tensor_release(label);
    sl_model_free(m);
    return bytes;
}

START_TEST(test_graph_equals_pynative)
{
    float lg[20], lp[20], l2[20];
    size_t ng, np, n2;
    unsigned char *g = lenet_20_steps(SL_GRAPH_MODE, 1, lg, &ng);
    unsigned char *p = lenet_20_steps(SL_PYNATIVE_MODE, 1, lp, &np);
    unsigned char *t2 = lenet_20_steps(SL_GRAPH_MODE, 2, l2, &n2);
    for (int i = 0; i < 20; i++) {
        ck_assert_msg(fabsf(lg[i] - lp[i]) <= 1e-6f * fabsf(lg[i]),
                      "step %d: GRAPH %.9g, PYNATIVE %.9g", i + 1, (double)lg[i], (double)lp[i]);
        ck_assert_msg(lg[i] == l2[i], "step %d: 1 thread %.9g, 2 threads %.9g", i + 1,
                      (double)lg[i], (double)l2[i]);
    }
    /* the loss moved: the steps trained */
    ck_assert_float_lt(lg[19], lg[0]);
    /* bit for bit, in fact */
    ck_assert_uint_eq(ng, np);
    ck_assert_int_eq(memcmp(g, p, ng), 0);
    ck_assert_int_eq(memcmp(g, t2, ng), 0);
    free(g);
    free(p);
    free(t2);
}
END_TEST

START_TEST(test_memory_figures)
{
    char err[512];
    sl_model *g = lenet_model(SL_GRAPH_MODE, 1, 0, err);
    sl_model *p = lenet_model(SL_PYNATIVE_MODE, 1, 0, err);
    double sps;
    size_t fused_away = 0;
    const sl_step *gs = sl_model_train_step(g), *ps = sl_model_train_step(p);
    ck_assert_int_eq(sl_model_bench_steps(p, 2, &sps), SL_OK);
    /* The arena holds at least what PYNATIVE holds at its peak (the same
     * values live at once) but for the values GRAPH's fusions never write
     * (test_relu_pool_fused_in_graph), and first-fit wastes little beyond. */
    for (int j = 0; j < gs->nslots; j++)
        if (gs->slots[j].fused == SL__FUSED_AWAY)
            fused_away += ps->slots[j].bytes;
    ck_assert_uint_gt(fused_away, 0);
    ck_assert_uint_gt(sl_step_memory_bytes(sl_model_train_step(p)), 0);
    ck_assert_uint_ge(sl_step_memory_bytes(sl_model_train_step(g)) + fused_away,
                      sl_step_memory_bytes(sl_model_train_step(p)));
    ck_assert_uint_le(sl_step_memory_bytes(sl_model_train_step(g)),
                      sl_step_memory_bytes(sl_model_train_step(p)) * 2);
    sl_model_free(g);
    sl_model_free(p);
}
END_TEST

/* GRAPH mode allocates nothing per step; PYNATIVE takes its values from a
 * pool, which after a warm-up step has every size it needs. */
START_TEST(test_steps_do_not_allocate)
{
#ifdef COUNTS_ALLOCATIONS
    char err[512];
    sl_model *g = lenet_model(SL_GRAPH_MODE, 2, 0, err);
    sl_model *p = lenet_model(SL_PYNATIVE_MODE, 2, 0, err);
    int64_t is[4] = {32, 1, 32, 32};
    sl_tensor *image = tensor_f32(4, is, 1, 1.0f), *label = labels_i32(32, 10);
    sl_tensor *feed[2] = {image, label};
    long before, after;
    int rc = SL_OK;
    run_loss(sl_model_train_step(g), image, label);
    run_loss(sl_model_train_step(p), image, label);
    /* no ck_assert in the loop: Check allocates to record each one */
    before = atomic_load(&allocations);
    for (int i = 0; i < 20 && rc == SL_OK; i++) {
        rc = sl_step_run(sl_model_train_step(g), feed, 2);
        if (rc == SL_OK)
            rc = sl_step_run(sl_model_train_step(p), feed, 2);
    }
    after = atomic_load(&allocations);
    ck_assert_int_eq(rc, SL_OK);
    ck_assert_int_eq(after, before);
    sl_tensor_release(image);
    sl_tensor_release(label);
    sl_model_free(g);
    sl_model_free(p);
#endif
}
END_TEST

/* --- runtime errors ---------------------------------------------------- */

START_TEST(test_wrong_input_shape)
{
    char err[512];
    sl_model *m = lenet_model(SL_GRAPH_MODE, 1, 0, err);
    int64_t is[4] = {32, 1, 28, 28};
    sl_tensor *image = tensor_f32(4, is, 1, 1.0f), *label = labels_i32(32, 10);
    sl_tensor *feed[2] = {image, label};
    const char *msg;
    ck_assert_int_eq(sl_step_run(sl_model_train_step(m), feed, 2), SL_ESHAPE);
    msg = sl_step_last_error(sl_model_train_step(m));
    ck_assert_msg(strstr(msg, "conv2d 'conv1'") && strstr(msg, "(32, 1, 28, 28)") &&
                      strstr(msg, "(32, 1, 32, 32)"),
                  "%s", msg);
    sl_tensor_release(image);
    sl_tensor_release(label);
    sl_model_free(m);
}
END_TEST

START_TEST(test_label_out_of_range)
{
    char err[512];
    sl_model *m = lenet_model(SL_PYNATIVE_MODE, 2, 0, err);
    int64_t is[4] = {32, 1, 32, 32};
    sl_tensor *image = tensor_f32(4, is, 1, 1.0f), *label = labels_i32(32, 10);
    sl_tensor *feed[2] = {image, label};
    size_t before_len, after_len;
    unsigned char *before = param_bytes(sl_model_graph(m), &before_len), *after;
    ((int32_t *)sl_tensor_data(label))[5] = 12;
    ck_assert_int_eq(sl_step_run(sl_model_train_step(m), feed, 2), SL_EINVAL);
    ck_assert_msg(strstr(sl_step_last_error(sl_model_train_step(m)), "label 12 of sample 5"),
                  "%s", sl_step_last_error(sl_model_train_step(m)));
    /* the step stopped before any update */
    after = param_bytes(sl_model_graph(m), &after_len);
    ck_assert_int_eq(memcmp(before, after, before_len), 0);
    ((int32_t *)sl_tensor_data(label))[5] = -1;
    ck_assert_int_eq(sl_step_run(sl_model_train_step(m), feed, 2), SL_EINVAL);
    /* and the step still works with good labels */
    ((int32_t *)sl_tensor_data(label))[5] = 1;
    ck_assert_int_eq(sl_step_run(sl_model_train_step(m), feed, 2), SL_OK);
    free(before);
    free(after);
    sl_tensor_release(image);
    sl_tensor_release(label);
    sl_model_free(m);
}
END_TEST

START_TEST(test_context_errors)
{
    sl_model_options o;
    sl_model *m = NULL;
    char err[512];
    sl_model_options_init(&o);
    o.context.device_target = "GPU";
    ck_assert_int_eq(sl_model_new(&m, &o, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err, "GPU"));
    sl_model_options_init(&o);
    o.network.height = 28;
    ck_assert_int_eq(sl_model_new(&m, &o, err, sizeof err), SL_ESHAPE);
    ck_assert_ptr_nonnull(strstr(err, "32x32"));
    sl_model_options_init(&o);
    o.learning_rate = -1.0f;
    ck_assert_int_eq(sl_model_new(&m, &o, err, sizeof err), SL_EINVAL);
}
END_TEST

/* --- checkpoints ------------------------------------------------------- */

START_TEST(test_checkpoint_roundtrip_and_damage)
{
    char err[512], *dir = tu_mkdtemp(), *path = tu_path(dir, "m.ckpt");
    char *bad = tu_path(dir, "bad.ckpt");
    sl_model *a = lenet_model(SL_GRAPH_MODE, 1, 1, err), *b = lenet_model(SL_GRAPH_MODE, 1, 2, err);
    size_t la, lb, n;
    unsigned char *pa, *pb, *file;
    double sps;
    ck_assert_int_eq(sl_model_bench_steps(a, 3, &sps), SL_OK); /* moments non-zero */
    ck_assert_int_eq(sl_model_save(a, path), SL_OK);
    /* no temporary file is left beside it */
    {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 1", dir);
        ck_assert_int_eq(system(cmd), 0);
    }
    ck_assert_int_eq(sl_model_load(b, path), SL_OK);
    ck_assert_int_eq(sl_model_global_step(b), 3);
    pa = param_bytes(sl_model_graph(a), &la);
    pb = param_bytes(sl_model_graph(b), &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(pa, pb, la), 0);
    free(pb);

    ck_assert_int_eq(tu_read_file(path, (void **)&file, &n), 0);
    /* a flipped byte in the values: corrupt, and nothing changes */
    file[n / 2] ^= 0x40;
    ck_assert_int_eq(tu_write_bytes(bad, file, n, 0), 0);
    ck_assert_int_eq(sl_model_load(b, bad), SL_EFORMAT);
    ck_assert_msg(strstr(sl_model_last_error(b), "corrupt") && strstr(sl_model_last_error(b), bad),
                  "%s", sl_model_last_error(b));
    pb = param_bytes(sl_model_graph(b), &lb);
    ck_assert_int_eq(memcmp(pa, pb, la), 0);
    free(pb);
    file[n / 2] ^= 0x40;
    /* truncated */
    ck_assert_int_eq(tu_write_bytes(bad, file, n - 100, 0), 0);
    ck_assert_int_eq(sl_model_load(b, bad), SL_EFORMAT);
    ck_assert_msg(strstr(sl_model_last_error(b), "truncated"), "%s", sl_model_last_error(b));
    ck_assert_int_eq(tu_write_bytes(bad, file, 10, 0), 0);
    ck_assert_int_eq(sl_model_load(b, bad), SL_EFORMAT);
    /* not a checkpoint at all */
    ck_assert_int_eq(tu_write_bytes(bad, "hello, world, this is text", 26, 0), 0);
    ck_assert_int_eq(sl_model_load(b, bad), SL_EFORMAT);
    ck_assert_ptr_nonnull(strstr(sl_model_last_error(b), "not a sluice checkpoint"));
    /* missing */
    ck_assert_int_eq(sl_model_load(b, "/nonexistent/x.ckpt"), SL_EIO);
    /* another network's checkpoint */
    {
        sl_model_options o;
        sl_model *mlp = NULL;
        sl_model_options_init(&o);
        o.network.kind = SL_NETWORK_MLP;
        o.context.threads = 1;
        ck_assert_int_eq(sl_model_new(&mlp, &o, err, sizeof err), SL_OK);
        ck_assert_int_eq(sl_model_load(mlp, path), SL_EFORMAT);
        ck_assert_msg(strstr(sl_model_last_error(mlp), "in the file but") ||
                          strstr(sl_model_last_error(mlp), "another network"),
                      "%s", sl_model_last_error(mlp));
        sl_model_free(mlp);
    }
    /* an unwritable place */
    ck_assert_int_eq(sl_model_save(a, "/nonexistent/dir/m.ckpt"), SL_EIO);
    ck_assert_ptr_nonnull(strstr(sl_model_last_error(a), "/nonexistent/dir/m.ckpt"));
    free(pa);
    free(file);
    sl_model_free(a);
    sl_model_free(b);
    tu_rmtree(dir);
    free(dir);
    free(path);
    free(bad);
}
END_TEST

/* Trains 20 steps with the given optimizer and mode on 2 threads; returns
 * the final parameters. */
static unsigned char *trained_with(sl_optimizer_kind opt, sl_mode mode, size_t *len)
{
    char err[512];
    sl_model_options o;
    sl_model *m = NULL;
    int64_t is[4] = {32, 1, 32, 32};
    sl_tensor *image = tensor_f32(4, is, 11, 1.5f), *label = labels_i32(32, 10);
    unsigned char *bytes;
    sl_model_options_init(&o);
    o.context.mode = mode;
    o.context.threads = 2;
    o.optimizer = opt;
    o.seed = 7;
    ck_assert_msg(sl_model_new(&m, &o, err, sizeof err) == SL_OK, "%s", err);
    for (int i = 0; i < 20; i++)
        run_loss(sl_model_train_step(m), image, label);
    bytes = param_bytes(sl_model_graph(m), len);
    sl_tensor_release(image);
    sl_tensor_release(label);
    sl_model_free(m);
    return bytes;
}

/* GRAPH runs LeNet's eight parameter updates as one job over all of them
 * (the accumulators between them do not break the run), each member at a
 * multiple of 16 units so that a split never lands inside a vector; the
 * per-node report says so and shares the pass's time among them; PYNATIVE
 * runs them one by one. The numbers are the same either way, for Momentum
 * (test_graph_equals_pynative) and for SGD. */
START_TEST(test_updates_run_in_one_pass)
{
    char err[512];
    sl_model *m = lenet_model(SL_GRAPH_MODE, 2, 0, err);
    sl_model *p = lenet_model(SL_PYNATIVE_MODE, 2, 0, err);
    sl_step *s = sl_model_train_step(m);
    int64_t is[4] = {32, 1, 32, 32};
    sl_tensor *image = tensor_f32(4, is, 11, 1.5f), *label = labels_i32(32, 10);
    int first = -1, last = -1, updates = 0;
    size_t next = 0, ng, np;
    unsigned char *g, *q;

    for (int j = 0; j < s->nslots; j++) {
        const sl__slot *sl = &s->slots[j];
        if (!sl__graph_op_is_update(s->g->nodes[sl->node].op)) {
            ck_assert_int_eq(sl->group_first, -1);
            continue;
        }
        if (first < 0)
            first = j;
        last = j;
        updates++;
        ck_assert_int_eq(sl->group_first, first);
        ck_assert_uint_eq(sl->group_offset % 16, 0);
        ck_assert_uint_ge(sl->group_offset, next);
        next = sl->group_offset + sl__update_numel(s, j);
    }
    ck_assert_int_eq(updates, 8);
    for (int j = first; j <= last; j++)
        if (s->slots[j].group_first == first)
            ck_assert_int_eq(s->slots[j].group_last, last);
    run_loss(s, image, label);
    for (size_t i = 0; i < sl_step_num_nodes(s); i++) {
        const char *name, *op;
        double ms;
        ck_assert_int_eq(sl_step_node_time(s, i, &name, &op, &ms), SL_OK);
        if (strncmp(name, "momentum.", 9) == 0) {
            ck_assert_str_eq(op, "momentum, one pass");
            ck_assert_msg(ms > 0.0, "%s: %g ms", name, ms);
        }
    }
    s = sl_model_train_step(p);
    for (int j = 0; j < s->nslots; j++)
        ck_assert_int_eq(s->slots[j].group_first, -1);
    for (size_t i = 0; i < sl_step_num_nodes(s); i++) {
        const char *name, *op;
        ck_assert_int_eq(sl_step_node_time(s, i, &name, &op, NULL), SL_OK);
        if (strncmp(name, "momentum.", 9) == 0)
            ck_assert_str_eq(op, "momentum");
    }
    sl_tensor_release(image);
    sl_tensor_release(label);
    sl_model_free(m);
    sl_model_free(p);

    g = trained_with(SL_OPTIMIZER_SGD, SL_GRAPH_MODE, &ng);
    q = trained_with(SL_OPTIMIZER_SGD, SL_PYNATIVE_MODE, &np);
    ck_assert_uint_eq(ng, np);
    ck_assert_int_eq(memcmp(g, q, ng), 0);
    free(g);
    free(q);
}
END_TEST

/* The fusion of ReLU and max-pool in a GRAPH step: LeNet's two conv
 * layers fuse forward and backward (the dense layers' ReLUs, with no pool
 * after them, do not); PYNATIVE does not fuse; a ReLU the caller asks to
 * see as an output stays. GRAPH equals PYNATIVE bit for bit with it
 * (test_graph_equals_pynative); here, the plan. */
static const sl__slot *slot_named(const sl_step *s, const char *name)
{
    for (int j = 0; j < s->nslots; j++)
        if (strcmp(s->g->nodes[s->slots[j].node].name, name) == 0)
            return &s->slots[j];
    ck_abort_msg("no slot '%s'", name);
    return NULL;
}

START_TEST(test_relu_pool_fused_in_graph)
{
    char err[512];
    sl_model *m = lenet_model(SL_GRAPH_MODE, 2, 0, err);
    sl_model *p = lenet_model(SL_PYNATIVE_MODE, 2, 0, err);
    sl_step *s = sl_model_train_step(m), *one = NULL;
    sl_graph *g = sl_model_graph(m);
    sl_executor *ex = NULL;
    int outs[2];
    const char *names[2] = {"relu1", "relu2"}, *pools[2] = {"pool1", "pool2"};
    const char *grads[2] = {"grad.conv1", "grad.conv2"}, *pgrads[2] = {"grad.relu1", "grad.relu2"};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(slot_named(s, names[k])->fused, SL__FUSED_AWAY);
        ck_assert_int_eq(slot_named(s, names[k])->storage, SL__STORE_NONE);
        ck_assert_int_eq(slot_named(s, pools[k])->fused, SL__FUSED_RELU_POOL);
        ck_assert_int_eq(slot_named(s, grads[k])->fused, SL__FUSED_RELU_POOL_DX);
        ck_assert_int_eq(slot_named(s, pgrads[k])->fused, SL__FUSED_AWAY);
    }
    ck_assert_int_eq(slot_named(s, "relu3")->fused, SL__FUSED_NONE);
    ck_assert_int_eq(slot_named(s, "grad.fc1")->fused, SL__FUSED_NONE);
    for (size_t i = 0; i < sl_step_num_nodes(s); i++) {
        const char *name, *op;
        ck_assert_int_eq(sl_step_node_time(s, i, &name, &op, NULL), SL_OK);
        if (strcmp(name, "pool1") == 0)
            ck_assert_str_eq(op, "relu+max_pool2d");
        if (strcmp(name, "grad.conv1") == 0)
            ck_assert_str_eq(op, "relu+max_pool2d_grad");
        if (strcmp(name, "relu1") == 0)
            ck_assert_str_eq(op, "relu (in relu+max_pool2d)");
    }
    /* forward only: the pool fuses with nothing to fuse backward */
    s = m->eval_step;
    ck_assert_int_eq(slot_named(s, "pool2")->fused, SL__FUSED_RELU_POOL);
    s = sl_model_train_step(p);
    for (int j = 0; j < s->nslots; j++)
        ck_assert_int_eq(s->slots[j].fused, SL__FUSED_NONE);
    /* relu1 as an output: it must be written, so it stays */
    ck_assert_int_eq(sl_executor_new(&ex, NULL), SL_OK);
    outs[0] = sl_graph_find(g, "relu1");
    outs[1] = sl_graph_find(g, "pool2");
    ck_assert_int_ge(outs[0], 0);
    ck_assert_int_eq(sl_step_new(&one, g, ex, SL_GRAPH_MODE, outs, 2, 0), SL_OK);
    ck_assert_int_eq(slot_named(one, "relu1")->fused, SL__FUSED_NONE);
    ck_assert_int_eq(slot_named(one, "pool1")->fused, SL__FUSED_NONE);
    /* (one thread: a share is the whole batch, so conv2 fuses in too) */
    ck_assert_int_eq(slot_named(one, "pool2")->fused, SL__FUSED_CONV_RELU_POOL);
    ck_assert_int_eq(slot_named(one, "conv1")->fused, SL__FUSED_NONE);
    sl_step_free(one);
    sl_executor_free(ex);
    sl_model_free(m);
    sl_model_free(p);
}
END_TEST

/* The conv before a fused relu + max_pool2d fuses in too when a share of
 * the batch holds more than SL__CONV_POOL_CHUNK samples: on one thread at
 * batch 32 (the whole batch is one share), not on two (8 shares of 4).
 * test_graph_equals_pynative trains LeNet in GRAPH mode on one thread,
 * so with this fusion, and on two, without it: the same bits as PYNATIVE
 * both times. */
START_TEST(test_conv_relu_pool_fused_in_graph)
{
    char err[512];
    sl_model *one = lenet_model(SL_GRAPH_MODE, 1, 0, err);
    sl_model *two = lenet_model(SL_GRAPH_MODE, 2, 0, err);
    const char *convs[2] = {"conv1", "conv2"}, *relus[2] = {"relu1", "relu2"};
    const char *pools[2] = {"pool1", "pool2"};
    const sl_step *steps[2] = {sl_model_train_step(one), one->eval_step};
    for (int t = 0; t < 2; t++) {
        const sl_step *s = steps[t];
        for (int k = 0; k < 2; k++) {
            const sl__slot *conv = slot_named(s, convs[k]), *pool = slot_named(s, pools[k]);
            ck_assert_int_eq(pool->fused, SL__FUSED_CONV_RELU_POOL);
            ck_assert_int_eq(conv->fused, SL__FUSED_AWAY);
            ck_assert_int_eq(conv->storage, SL__STORE_NONE);
            ck_assert_int_eq(slot_named(s, relus[k])->fused, SL__FUSED_AWAY);
            /* the pool reads the conv's input and weight, and has scratch
             * for a chunk of the conv's output per thread */
            ck_assert_int_eq(pool->in[0], conv->in[0]);
            ck_assert_int_eq(pool->in[1], conv->in[1]);
            ck_assert_uint_ge(pool->scratch, SL__CONV_POOL_CHUNK *
                                                 s->g->nodes[conv->node].numel / 32 *
                                                 sizeof(float));
        }
        for (size_t i = 0; i < sl_step_num_nodes(s); i++) {
            const char *name, *op;
            ck_assert_int_eq(sl_step_node_time(s, i, &name, &op, NULL), SL_OK);
            if (strcmp(name, "pool1") == 0) {
                const sl__conv2d_dims *d = &s->g->nodes[slot_named(s, "conv1")->node].attr.conv;
                ck_assert_str_eq(op, "conv2d+relu+max_pool2d");
                /* the conv's work is counted where it runs */
                ck_assert_double_eq(sl_step_node_flops(s, i),
                                    2.0 * (double)(d->n * d->oh * d->ow) *
                                        (double)(d->c * d->kh * d->kw) * (double)d->oc);
            }
            if (strcmp(name, "conv1") == 0) {
                ck_assert_str_eq(op, "conv2d (in conv2d+relu+max_pool2d)");
                ck_assert_double_eq(sl_step_node_flops(s, i), 0.0);
            }
            if (strcmp(name, "relu1") == 0)
                ck_assert_str_eq(op, "relu (in conv2d+relu+max_pool2d)");
        }
    }
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(slot_named(sl_model_train_step(two), pools[k])->fused,
                         SL__FUSED_RELU_POOL);
        ck_assert_int_eq(slot_named(sl_model_train_step(two), convs[k])->fused,
                         SL__FUSED_NONE);
    }
    sl_model_free(one);
    sl_model_free(two);
}
END_TEST

/* A pool writes its argmax only where a gradient reads it: in training
 * steps, not in forward-only ones (GRAPH or PYNATIVE, fused or not). The
 * values without argmax are the same bits (check_nn's pool tests). */
START_TEST(test_pool_argmax_only_when_read)
{
    char err[512];
    const sl_mode modes[2] = {SL_GRAPH_MODE, SL_PYNATIVE_MODE};
    for (int mi = 0; mi < 2; mi++)
        for (int threads = 1; threads <= 2; threads++) {
            sl_model *m = lenet_model(modes[mi], threads, 0, err);
            const sl_step *train = sl_model_train_step(m), *eval = m->eval_step;
            ck_assert_int_eq(slot_named(train, "pool1")->argmax_unread, 0);
            ck_assert_int_eq(slot_named(train, "pool2")->argmax_unread, 0);
            ck_assert_int_eq(slot_named(eval, "pool1")->argmax_unread, 1);
            ck_assert_int_eq(slot_named(eval, "pool2")->argmax_unread, 1);
            sl_model_free(m);
        }
}
END_TEST

START_TEST(test_save_graphs)
{
    sl_model_options o;
    sl_model *m = NULL;
    char err[512], *dir = tu_mkdtemp(), *ir = tu_path(dir, "train_step.ir");
    char *dot = tu_path(dir, "train_step.dot"), *eval_ir = tu_path(dir, "eval_step.ir");
    char *text;
    sl_model_options_init(&o);
    o.context.save_graphs = 1;
    o.context.save_graphs_path = dir;
    o.context.threads = 1;
    ck_assert_int_eq(sl_model_new(&m, &o, err, sizeof err), SL_OK);
    text = read_text(ir);
    ck_assert_ptr_nonnull(strstr(text, "conv2d \"conv1\""));
    ck_assert_ptr_nonnull(strstr(text, "momentum"));
    ck_assert_ptr_nonnull(strstr(text, "one pass over"));
    ck_assert_ptr_nonnull(strstr(text, "relu+max_pool2d \"pool1\""));
    ck_assert_ptr_nonnull(strstr(text, "runs in"));
    ck_assert_ptr_nonnull(strstr(text, "arena"));
    free(text);
    text = read_text(dot);
    ck_assert_ptr_nonnull(strstr(text, "digraph"));
    free(text);
    text = read_text(eval_ir);
    ck_assert_ptr_null(strstr(text, "momentum")); /* forward only */
    free(text);
    sl_model_free(m);
    /* a folder that cannot be made (a file is in the way) fails the model
     * with a message naming it */
    {
        char *file = tu_path(dir, "a-file"), *under = tu_path(file, "graphs");
        ck_assert_int_eq(tu_write_bytes(file, "x", 1, 0), 0);
        o.context.save_graphs_path = under;
        ck_assert_int_eq(sl_model_new(&m, &o, err, sizeof err), SL_EIO);
        ck_assert_msg(strstr(err, "a-file"), "%s", err);
        free(file);
        free(under);
    }
    tu_rmtree(dir);
    free(dir);
    free(ir);
    free(dot);
    free(eval_ir);
}
END_TEST

/* --- threads ----------------------------------------------------------- */

START_TEST(test_executors_start_and_stop)
{
    for (int t = 1; t <= 4; t++) {
        sl_executor *ex = executor(t);
        ck_assert_int_eq(sl_executor_threads(ex), t);
        sl_executor_free(ex);
    }
    {
        sl_executor_options o;
        sl_executor *ex = NULL;
        sl_executor_options_init(&o);
        o.threads = 0;
        ck_assert_int_eq(sl_executor_new(&ex, &o), SL_EINVAL);
        ck_assert_ptr_null(ex);
    }
}
END_TEST

/* Many short steps on 3 threads: the team's hand-offs under load. */
START_TEST(test_many_small_steps)
{
    small_net n;
    sl_graph *g = small_graph(&n, 3);
    sl_executor *ex = executor(3);
    sl_step *s = NULL;
    int64_t is[4] = {3, 2, 9, 9};
    sl_tensor *image = tensor_f32(4, is, 3, 1.0f), *label = labels_i32(3, 4);
    float first, last = 0;
    ck_assert_int_eq(sl_graph_backward(g, n.loss), SL_OK);
    ck_assert_int_eq(sl_graph_sgd(g, 0.05f), SL_OK);
    ck_assert_int_eq(sl_step_new(&s, g, ex, SL_GRAPH_MODE, &n.loss, 1, 1), SL_OK);
    first = run_loss(s, image, label);
    for (int i = 0; i < 300; i++)
        last = run_loss(s, image, label);
    ck_assert_float_lt(last, first);
    sl_step_free(s);
    sl_executor_free(ex);
    sl_graph_free(g);
    sl_tensor_release(image);
    sl_tensor_release(label);
}
END_TEST

/* --- the loss line's number ------------------------------------------- */

START_TEST(test_format_float32)
{
    char buf[64];
    static const struct {
        float v;
        const char *s;
    } cases[] = {
        {0.110185064f, "0.110185064"}, {0.5399815f, "0.5399815"}, {2.0f, "2.0"},
        {0.00017951085f, "0.00017951085"}, {1.5e-05f, "1.5e-05"}, {-3.25f, "-3.25"},
        {0.1f, "0.1"}, {123456.0f, "123456.0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl__format_float32(buf, sizeof buf, cases[i].v);
        ck_assert_str_eq(buf, cases[i].s);
    }
}
END_TEST

Suite *make_exec_suite(void)
{
    Suite *s = suite_create("exec");
    TCase *tc = tu_tcase("graph", 120);
    tcase_add_test(tc, test_build_shapes);
    tcase_add_test(tc, test_graph_new_sets_out);
    tcase_add_test(tc, test_build_errors);
    tcase_add_test(tc, test_autodiff_finite_differences);
    tcase_add_test(tc, test_reduce_mean);
    tcase_add_test(tc, test_softmax_xent_dense);
    tcase_add_test(tc, test_plan_no_overlap);
    tcase_add_test(tc, test_format_float32);
    suite_add_tcase(s, tc);

    tc = tu_tcase("run", 300);
    tcase_add_test(tc, test_graph_equals_pynative);
    tcase_add_test(tc, test_updates_run_in_one_pass);
    tcase_add_test(tc, test_relu_pool_fused_in_graph);
    tcase_add_test(tc, test_conv_relu_pool_fused_in_graph);
    tcase_add_test(tc, test_pool_argmax_only_when_read);
    tcase_add_test(tc, test_memory_figures);
    tcase_add_test(tc, test_steps_do_not_allocate);
    tcase_add_test(tc, test_wrong_input_shape);
    tcase_add_test(tc, test_label_out_of_range);
    tcase_add_test(tc, test_context_errors);
    tcase_add_test(tc, test_checkpoint_roundtrip_and_damage);
    tcase_add_test(tc, test_save_graphs);
    suite_add_tcase(s, tc);

    tc = tu_tcase("threads", 300);
    tcase_add_test(tc, test_executors_start_and_stop);
    tcase_add_test(tc, test_many_small_steps);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_exec_suite);
}
