/* bench_kernels.c: times each nn kernel (ops/nn/nn.h) at LeNet5's batch-32
 * shapes on one thread, whole range in one call, and prints microseconds per
 * call and GFLOP/s. Not a test: the numbers depend on the machine.
 *
 * Run with OPENBLAS_NUM_THREADS=1 (the program also asks OpenBLAS for one
 * thread, as the executor does).
 *
 * After the table, the conv kernels again on each way conv2d can run:
 * im2col + OpenBLAS (what stride 1, no padding used before the direct
 * kernels), then each direct path this CPU supports.
 *
 * FLOPs counted: conv and dense 2 per multiply-add (im2col/col2im and the
 * bias are not counted); max-pool forward k*k compares per output, backward
 * one add per output; ReLU 1 per element; softmax cross-entropy forward 5
 * per logit (max, subtract, exp, sum, divide), backward 2; momentum 4 per
 * parameter, SGD 2. The non-GEMM kernels are memory-bound, so their rate is
 * better read as elements per second.
 *
 * Usage: bench_kernels [SECONDS_PER_KERNEL] (default 0.5) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "ops/nn/conv2d_impl.h"
#include "ops/nn/nn.h"

enum { BATCH = 32 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static float *falloc(size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_kernels: out of memory\n");
        exit(1);
    }
    return p;
}

static float *frand(size_t n, uint64_t seed)
{
    float *p = falloc(n);
    sl_rng rng;
    sl__rng_seed(&rng, seed, 0, 0, 0);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(sl__rng_uniform(&rng) * 2.0 - 1.0);
    return p;
}

/* One kernel call with everything it needs. */
typedef struct bench {
    const char *name;
    const char *shape;
    double flops;
    void (*run)(struct bench *b);
    sl__conv2d_dims conv;
    sl__pool2d_dims pool;
    size_t n, in_f, out_f;
    float *x, *y, *w, *bias, *dy, *dx, *dw, *db, *cols, *dcols, *acc;
    int32_t *labels, *argmax;
    sl__conv2d_path path; /* for the direct-path rows */
} bench;

static double seconds_per_kernel = 0.5;

/* Microseconds per call: after a warm-up, rounds of about 10 ms each for
 * seconds_per_kernel in all; the fastest round's mean is printed, since
 * other work on the machine only ever makes a round slower. */
static void time_it(bench *b)
{
    double best = 1e30, start = now();
    for (int i = 0; i < 3; i++)
        b->run(b);
    do {
        long calls = 0;
        double t0 = now(), t;
        do {
            b->run(b);
            calls++;
            t = now();
        } while (t - t0 < 0.01);
        if ((t - t0) / (double)calls < best)
            best = (t - t0) / (double)calls;
    } while (now() - start < seconds_per_kernel);
    printf("%-28s %-28s %10.1f %9.2f\n", b->name, b->shape, best * 1e6,
           b->flops / best * 1e-9);
}

static void run_conv_fwd(bench *b)
{
    sl__conv2d_forward(b->y, b->cols, b->x, b->w, &b->conv, 0, b->conv.n);
}

static void run_conv_bwd_in(bench *b)
{
    sl__conv2d_backward_input(b->dx, b->dcols, b->dy, b->w, &b->conv, 0, b->conv.n);
}

static void run_conv_bwd_w(bench *b)
{
    sl__conv2d_backward_weight(b->dw, b->dy, b->cols, b->x, &b->conv, 0, b->conv.oc);
}

static void run_im2col_fwd(bench *b)
{
    sl__conv2d_im2col_forward(b->y, b->cols, b->x, b->w, &b->conv, 0, b->conv.n);
}

static void run_im2col_bwd_in(bench *b)
{
    sl__conv2d_im2col_backward_input(b->dx, b->dcols, b->dy, b->w, &b->conv, 0, b->conv.n);
}

static void run_im2col_bwd_w(bench *b)
{
    sl__conv2d_im2col_backward_weight(b->dw, b->dy, b->cols, &b->conv, 0, b->conv.oc);
}

static void run_direct_fwd(bench *b)
{
    sl__conv2d_direct_forward(b->path, b->y, b->x, b->w, &b->conv, 0, b->conv.n);
}

static void run_direct_bwd_in(bench *b)
{
    sl__conv2d_direct_backward_input(b->path, b->dx, b->dcols, b->dy, b->w, &b->conv, 0,
                                     b->conv.n);
}

static void run_direct_bwd_w(bench *b)
{
    sl__conv2d_direct_backward_weight(b->path, b->dw, b->dy, b->x, &b->conv, 0, b->conv.oc);
}

static void run_pool_fwd(bench *b)
{
    sl__max_pool2d_forward(b->y, b->argmax, b->x, &b->pool, 0, b->pool.n);
}

static void run_pool_bwd(bench *b)
{
    sl__max_pool2d_backward(b->dx, b->dy, b->argmax, &b->pool, 0, b->pool.n);
}

static void run_relu_fwd(bench *b)
{
    sl__relu_forward(b->y, b->x, 0, b->n);
}

static void run_relu_bwd(bench *b)
{
    sl__relu_backward(b->dx, b->dy, b->y, 0, b->n);
}

static void run_dense_fwd(bench *b)
{
    sl__dense_forward(b->y, b->x, b->w, b->bias, b->n, b->in_f, b->out_f, 0, b->n);
}

static void run_dense_bwd_in(bench *b)
{
    sl__dense_backward_input(b->dx, b->dy, b->w, b->n, b->in_f, b->out_f, 0, b->n);
}

static void run_dense_bwd_w(bench *b)
{
    sl__dense_backward_weight(b->dw, b->db, b->dy, b->x, b->n, b->in_f, b->out_f, 0,
                              b->out_f);
}

static void run_xent_fwd(bench *b)
{
    float loss;
    if (sl__softmax_xent_forward(&loss, b->y, b->x, b->labels, b->n, b->out_f) != 0)
        abort();
}

static void run_xent_bwd(bench *b)
{
    sl__softmax_xent_backward(b->dx, b->y, b->labels, 1.0f, b->n, b->out_f, 0, b->n);
}

static void run_momentum(bench *b)
{
    sl__momentum_update(b->w, b->acc, b->dw, 0.01f, 0.9f, 0, b->n);
}

static void run_sgd(bench *b)
{
    sl__sgd_update(b->w, b->dw, 1e-9f, 0, b->n);
}

/* way < 0: the public kernels; 0: im2col; 1 + p: direct path p. */
static void bench_conv(const char *tag, size_t c, size_t h, size_t oc, size_t k, int way)
{
    static const char *const way_name[] = {"im2col", "c", "avx2", "avx512"};
    void (*run[3])(bench *) = {run_conv_fwd, run_conv_bwd_in, run_conv_bwd_w};
    static const char *const kind[] = {"forward", "backward_input", "backward_weight"};
    bench b;
    char shape[64], name[64];
    size_t nin, nout, nw;
    memset(&b, 0, sizeof b);
    b.conv.n = BATCH;
    b.conv.c = c;
    b.conv.h = h;
    b.conv.w = h;
    b.conv.oc = oc;
    b.conv.kh = k;
    b.conv.kw = k;
    b.conv.stride = 1;
    if (sl__conv2d_dims_init(&b.conv) != 0)
        abort();
    nin = BATCH * c * h * h;
    nout = BATCH * oc * b.conv.oh * b.conv.ow;
    nw = oc * c * k * k;
    b.x = frand(nin, 1);
    b.w = frand(nw, 2);
    b.dy = frand(nout, 3);
    b.y = falloc(nout);
    b.dx = falloc(nin);
    b.dw = falloc(nw);
    if (way == 0) {
        run[0] = run_im2col_fwd;
        run[1] = run_im2col_bwd_in;
        run[2] = run_im2col_bwd_w;
        b.cols = falloc(sl__conv2d_im2col_cols_size(&b.conv));
        b.dcols = falloc(sl__conv2d_im2col_dcols_size(&b.conv));
        /* the weight gradient reads the forward's columns */
        sl__conv2d_im2col_forward(b.y, b.cols, b.x, b.w, &b.conv, 0, BATCH);
    } else {
        if (way > 0) {
            b.path = (sl__conv2d_path)(way - 1);
            run[0] = run_direct_fwd;
            run[1] = run_direct_bwd_in;
            run[2] = run_direct_bwd_w;
        }
        b.cols = falloc(sl__conv2d_cols_size(&b.conv) + 1);
        b.dcols = falloc(sl__conv2d_dcols_size(&b.conv));
        sl__conv2d_forward(b.y, b.cols, b.x, b.w, &b.conv, 0, BATCH);
    }
    b.flops = 2.0 * (double)nout * (double)(c * k * k);
    snprintf(shape, sizeof shape, "%zux%zux%zux%zu -> %zu, %zux%zu", (size_t)BATCH, c, h, h,
             oc, k, k);
    b.shape = shape;
    b.name = name;
    for (int i = 0; i < 3; i++) {
        if (way < 0)
            snprintf(name, sizeof name, "%s %s", tag, kind[i]);
        else
            snprintf(name, sizeof name, "%s %s/%s", tag, kind[i], way_name[way]);
        b.run = run[i];
        time_it(&b);
    }
    free(b.x);
    free(b.w);
    free(b.dy);
    free(b.y);
    free(b.dx);
    free(b.dw);
    free(b.cols);
    free(b.dcols);
}

static void bench_pool_relu(const char *tag, size_t c, size_t h)
{
    bench b;
    char shape[64], name[64];
    size_t nin, nout;
    memset(&b, 0, sizeof b);
    b.pool.n = BATCH;
    b.pool.c = c;
    b.pool.h = h;
    b.pool.w = h;
    b.pool.k = 2;
    b.pool.stride = 2;
    if (sl__pool2d_dims_init(&b.pool) != 0)
        abort();
    nin = BATCH * c * h * h;
    nout = BATCH * c * b.pool.oh * b.pool.ow;
    b.x = frand(nin, 4);
    b.dy = frand(nin, 5);
    b.y = falloc(nin);
    b.dx = falloc(nin);
    b.argmax = malloc(nout * sizeof *b.argmax);
    if (!b.argmax)
        abort();
    b.name = name;
    b.shape = shape;

    /* the ReLU in front of this pool, over the same (N, C, H, W) */
    b.n = nin;
    b.flops = (double)nin;
    snprintf(shape, sizeof shape, "%zu elements", nin);
    snprintf(name, sizeof name, "relu%s forward", tag);
    b.run = run_relu_fwd;
    time_it(&b);
    snprintf(name, sizeof name, "relu%s backward", tag);
    b.run = run_relu_bwd;
    time_it(&b);

    snprintf(shape, sizeof shape, "%zux%zux%zux%zu, 2/2", (size_t)BATCH, c, h, h);
    b.flops = 4.0 * (double)nout;
    snprintf(name, sizeof name, "pool%s forward", tag);
    b.run = run_pool_fwd;
    time_it(&b);
    b.flops = (double)nout;
    snprintf(name, sizeof name, "pool%s backward", tag);
    b.run = run_pool_bwd;
    time_it(&b);
    free(b.x);
    free(b.dy);
    free(b.y);
    free(b.dx);
    free(b.argmax);
}

static void bench_dense(const char *tag, size_t in_f, size_t out_f)
{
    bench b;
    char shape[64], name[64];
    memset(&b, 0, sizeof b);
    b.n = BATCH;
    b.in_f = in_f;
    b.out_f = out_f;
    b.x = frand(BATCH * in_f, 6);
    b.w = frand(out_f * in_f, 7);
    b.bias = frand(out_f, 8);
    b.dy = frand(BATCH * out_f, 9);
    b.y = falloc(BATCH * out_f);
    b.dx = falloc(BATCH * in_f);
    b.dw = falloc(out_f * in_f);
    b.db = falloc(out_f);
    b.flops = 2.0 * BATCH * (double)in_f * (double)out_f;
    snprintf(shape, sizeof shape, "%zux%zu -> %zu", (size_t)BATCH, in_f, out_f);
    b.shape = shape;
    b.name = name;
    snprintf(name, sizeof name, "%s forward", tag);
    b.run = run_dense_fwd;
    time_it(&b);
    snprintf(name, sizeof name, "%s backward_input", tag);
    b.run = run_dense_bwd_in;
    time_it(&b);
    snprintf(name, sizeof name, "%s backward_weight+bias", tag);
    b.run = run_dense_bwd_w;
    time_it(&b);
    free(b.x);
    free(b.w);
    free(b.bias);
    free(b.dy);
    free(b.y);
    free(b.dx);
    free(b.dw);
    free(b.db);
}

static void bench_xent(void)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.n = BATCH;
    b.out_f = 10;
    b.x = frand(BATCH * 10, 10);
    b.y = falloc(BATCH * 10);
    b.dx = falloc(BATCH * 10);
    b.labels = malloc(BATCH * sizeof *b.labels);
    if (!b.labels)
        abort();
    for (int i = 0; i < BATCH; i++)
        b.labels[i] = i % 10;
    b.shape = "32x10";
    b.name = "softmax_xent forward";
    b.flops = 5.0 * BATCH * 10;
    b.run = run_xent_fwd;
    time_it(&b);
    b.name = "softmax_xent backward";
    b.flops = 2.0 * BATCH * 10;
    b.run = run_xent_bwd;
    time_it(&b);
    free(b.x);
    free(b.y);
    free(b.dx);
    free(b.labels);
}

static void bench_optimizers(void)
{
    /* LeNet5's parameters: conv 150 + 2400, dense 48120 + 10164 + 850 */
    const size_t n = 150 + 2400 + 48120 + 10164 + 850;
    bench b;
    char shape[64];
    memset(&b, 0, sizeof b);
    b.n = n;
    b.w = frand(n, 11);
    b.acc = frand(n, 12);
    b.dw = frand(n, 13);
    snprintf(shape, sizeof shape, "%zu params", n);
    b.shape = shape;
    b.name = "momentum";
    b.flops = 4.0 * (double)n;
    b.run = run_momentum;
    time_it(&b);
    b.name = "sgd";
    b.flops = 2.0 * (double)n;
    b.run = run_sgd;
    time_it(&b);
    free(b.w);
    free(b.acc);
    free(b.dw);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seconds_per_kernel = atof(argv[1]);
    if (argc > 2 || !(seconds_per_kernel > 0)) {
        fprintf(stderr, "usage: bench_kernels [SECONDS_PER_KERNEL]\n");
        return 2;
    }
    openblas_set_num_threads(1);
    printf("%-28s %-28s %10s %9s\n", "kernel", "shape", "us/call", "GFLOP/s");
    bench_conv("conv1", 1, 32, 6, 5, -1);
    bench_pool_relu("1", 6, 28);
    bench_conv("conv2", 6, 14, 16, 5, -1);
    bench_pool_relu("2", 16, 10);
    bench_dense("dense1", 400, 120);
    bench_dense("dense2", 120, 84);
    bench_dense("dense3", 84, 10);
    bench_xent();
    bench_optimizers();
    printf("\nconv2d, each way it can run\n");
    for (int way = 0; way <= SL__CONV2D_PATH_COUNT; way++) {
        if (way > 0 && !sl__conv2d_path_supported((sl__conv2d_path)(way - 1)))
            continue;
        bench_conv("conv1", 1, 32, 6, 5, way);
        bench_conv("conv2", 6, 14, 16, 5, way);
    }
    return 0;
}
