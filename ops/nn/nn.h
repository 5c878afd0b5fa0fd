/* nn.h: the neural-network kernels: forward and backward of each training
 * op on plain float arrays (NCHW), in the llm.c order: outputs, inputs,
 * weights, sizes. Kernels never allocate; scratch comes from the caller.
 *
 * Backward kernels *write* their outputs (they do not accumulate): the graph
 * adds gradients explicitly where a value feeds several ops.
 *
 * Work is split between threads by a range over one axis, named in each
 * kernel's comment (samples, output channels, elements). Each output element
 * is computed by exactly one range with the same arithmetic in the same
 * order, so results are bit-identical whatever the number of threads. */
#ifndef SLUICE_OPS_NN_H
#define SLUICE_OPS_NN_H

#include <stddef.h>
#include <stdint.h>

#include "core/cpu.h"
#include "core/rng.h"

/* --- conv2d ---------------------------------------------------------- */
/* Cross-correlation, no bias (LeNet's convs have none), square stride and
 * zero padding on all four sides. */
typedef struct sl__conv2d_dims {
    size_t n, c, h, w;    /* input (N, C, H, W) */
    size_t oc, kh, kw;    /* weight (OC, C, KH, KW) */
    size_t stride, pad;   /* stride >= 1, pad >= 0 */
    size_t oh, ow;        /* output (N, OC, OH, OW), set by sl__conv2d_dims_init */
} sl__conv2d_dims;

/* Fills oh/ow; returns 0, or -1 when the kernel does not fit the padded
 * input or a size is 0. */
int sl__conv2d_dims_init(sl__conv2d_dims *d);
/* Floats of the columns the forward saves for the weight gradient
 * ((N, C*KH*KW, OH*OW)), 0 when the kernels read the input directly. */
size_t sl__conv2d_cols_size(const sl__conv2d_dims *d);
/* Floats of scratch one thread needs in sl__conv2d_backward_input. */
size_t sl__conv2d_dcols_size(const sl__conv2d_dims *d);

/* out (N, OC, OH, OW) for samples [n0, n1); also writes those samples'
 * columns into cols when sl__conv2d_cols_size(d) > 0. */
void sl__conv2d_forward(float *out, float *cols, const float *in, const float *weight,
                        const sl__conv2d_dims *d, size_t n0, size_t n1);
/* din (N, C, H, W) for samples [n0, n1); dcols: one thread's scratch of
 * sl__conv2d_dcols_size(d) floats. */
void sl__conv2d_backward_input(float *din, float *dcols, const float *dout,
                               const float *weight, const sl__conv2d_dims *d, size_t n0,
                               size_t n1);
/* dweight (OC, C, KH, KW) rows [oc0, oc1), summed over every sample; reads
 * cols when the forward saved them, in otherwise. */
void sl__conv2d_backward_weight(float *dweight, const float *dout, const float *cols,
                                const float *in, const sl__conv2d_dims *d, size_t oc0,
                                size_t oc1);

/* --- max_pool2d ------------------------------------------------------ */
/* Window k, stride s, no padding; the output drops a partial window. */
typedef struct sl__pool2d_dims {
    size_t n, c, h, w;   /* input (N, C, H, W) */
    size_t k, stride;
    size_t oh, ow;       /* output (N, C, OH, OW), set by sl__pool2d_dims_init */
} sl__pool2d_dims;

int sl__pool2d_dims_init(sl__pool2d_dims *d);
/* out (N, C, OH, OW) and argmax (same shape: the index of the chosen input
 * within its (H, W) plane; the first maximum wins) for samples [n0, n1).
 * argmax may be NULL when nothing will read it (a forward-only step): the
 * same values, found faster. So in the fused forward and the _at one. */
void sl__max_pool2d_forward(float *out, int32_t *argmax, const float *in,
                            const sl__pool2d_dims *d, size_t n0, size_t n1);
/* din (N, C, H, W) for samples [n0, n1): zero, plus each dout at its argmax. */
void sl__max_pool2d_backward(float *din, const float *dout, const int32_t *argmax,
                             const sl__pool2d_dims *d, size_t n0, size_t n1);
/* ReLU then max-pool in one pass (the executor's fusion of the pair):
 * exactly max_pool2d_forward(relu(in)), values and argmax, without writing
 * relu(in). */
void sl__relu_max_pool2d_forward(float *out, int32_t *argmax, const float *in,
                                 const sl__pool2d_dims *d, size_t n0, size_t n1);
/* Either forward (relu 0 or 1) on the vector path of at most this level
 * (core/cpu.h), for tests; the others take the best this CPU has. Every
 * path gives the same values and argmax bit for bit. */
void sl__max_pool2d_forward_at(sl__cpu_level level, int relu, float *out, int32_t *argmax,
                               const float *in, const sl__pool2d_dims *d, size_t n0, size_t n1);
/* Either backward on the vector path of at most this level, for tests:
 * out NULL for max_pool2d's, the fused forward's output for the fused one. */
void sl__max_pool2d_backward_at(sl__cpu_level level, float *din, const float *dout,
                                const int32_t *argmax, const float *out,
                                const sl__pool2d_dims *d, size_t n0, size_t n1);
/* Their backward in one pass, from the fused forward's out and argmax:
 * exactly relu_backward(max_pool2d_backward(dout), relu(in)). */
void sl__relu_max_pool2d_backward(float *din, const float *dout, const int32_t *argmax,
                                  const float *out, const sl__pool2d_dims *d, size_t n0,
                                  size_t n1);

/* --- elementwise ----------------------------------------------------- */
/* Elements [i0, i1). */
void sl__relu_forward(float *out, const float *in, size_t i0, size_t i1);
/* din = dout where out > 0, else 0 (out: the forward's output). */
void sl__relu_backward(float *din, const float *dout, const float *out, size_t i0,
                       size_t i1);
/* out = a + b. */
void sl__add_forward(float *out, const float *a, const float *b, size_t i0, size_t i1);

/* --- reductions ------------------------------------------------------ */
/* out[r] = the mean of the row in[r * inner .. (r + 1) * inner), summed in
 * order, rows [r0, r1): a mean over trailing axes. */
void sl__mean_rows_forward(float *out, const float *in, size_t inner, size_t r0, size_t r1);
/* din[r * inner + i] = dout[r] / inner, rows [r0, r1). */
void sl__mean_rows_backward(float *din, const float *dout, size_t inner, size_t r0, size_t r1);

/* --- dense ----------------------------------------------------------- */
/* out (N, OUT) = in (N, IN) . weight^T + bias, weight (OUT, IN) as
 * MindSpore's Dense; bias (OUT) may be NULL. Rows [n0, n1). */
void sl__dense_forward(float *out, const float *in, const float *weight, const float *bias,
                       size_t n, size_t in_features, size_t out_features, size_t n0,
                       size_t n1);
/* din (N, IN) = dout (N, OUT) . weight, rows [n0, n1). */
void sl__dense_backward_input(float *din, const float *dout, const float *weight, size_t n,
                              size_t in_features, size_t out_features, size_t n0,
                              size_t n1);
/* dweight (OUT, IN) = dout^T . in and dbias (OUT) = column sums of dout
 * (dbias may be NULL), output features [o0, o1). */
void sl__dense_backward_weight(float *dweight, float *dbias, const float *dout,
                               const float *in, size_t n, size_t in_features,
                               size_t out_features, size_t o0, size_t o1);

/* The three on the path of at most this level (core/cpu.h), for tests;
 * the ones above take the best this CPU has. The AVX2 kernels and the
 * BLAS path sum in different orders, so their bits differ; each is the
 * same whatever the range split. */
void sl__dense_forward_at(sl__cpu_level level, float *out, const float *in, const float *weight,
                          const float *bias, size_t n, size_t in_features, size_t out_features,
                          size_t n0, size_t n1);
void sl__dense_backward_input_at(sl__cpu_level level, float *din, const float *dout,
                                 const float *weight, size_t n, size_t in_features,
                                 size_t out_features, size_t n0, size_t n1);
void sl__dense_backward_weight_at(sl__cpu_level level, float *dweight, float *dbias,
                                  const float *dout, const float *in, size_t n,
                                  size_t in_features, size_t out_features, size_t o0, size_t o1);

/* dbias (OUT) = column sums of dout (N, OUT), output features [o0, o1). */
void sl__dense_backward_bias(float *dbias, const float *dout, size_t n, size_t out_features,
                             size_t o0, size_t o1);

/* --- loss and metrics ------------------------------------------------ */
/* Sparse softmax cross-entropy, mean over the batch, computed with a stable
 * log-sum-exp in double. logits (N, C), labels (N) int32 in [0, C). Writes
 * *loss and the softmax probabilities prob (N, C), which the backward
 * reads. Returns -1 - i for the first sample i whose label is out of range
 * (nothing else is trusted then), 0 otherwise. One thread. */
long sl__softmax_xent_forward(float *loss, float *prob, const float *logits,
                              const int32_t *labels, size_t n, size_t c);
/* dlogits (N, C) = (prob - onehot(labels)) * dloss / N, rows [n0, n1). */
void sl__softmax_xent_backward(float *dlogits, const float *prob, const int32_t *labels,
                               float dloss, size_t n, size_t c, size_t n0, size_t n1);
/* Softmax cross-entropy against dense labels (probabilities, one-hot or
 * not) labels (N, C): loss_i = sum_j labels_ij * (lse_i - logits_ij), in
 * double. mean: *loss is their mean over the batch (one value); else
 * loss (N) holds each sample's. Writes prob (N, C) as the sparse one. */
void sl__softmax_xent_dense_forward(float *loss, float *prob, const float *logits,
                                    const float *labels, size_t n, size_t c, int mean);
/* dlogits (N, C) = (prob * sum_j labels_ij - labels) * scale, rows
 * [n0, n1): scale 1 / N for the mean, 1 for per-sample losses (each
 * differentiated with a gradient of 1, MindSpore's sens of ones). */
void sl__softmax_xent_dense_backward(float *dlogits, const float *prob, const float *labels,
                                     size_t n, size_t c, int mean, size_t n0, size_t n1);
/* out (N) = index of the largest of each row of in (N, C), first wins. */
void sl__argmax_forward(int32_t *out, const float *in, size_t n, size_t c, size_t n0,
                        size_t n1);

/* --- optimizers ------------------------------------------------------ */
/* MindSpore's ApplyMomentum (no Nesterov), elements [i0, i1):
 *   accum = momentum * accum + grad;  weight -= lr * accum. */
void sl__momentum_update(float *weight, float *accum, const float *grad, float lr,
                         float momentum, size_t i0, size_t i1);
/* weight -= lr * grad. */
void sl__sgd_update(float *weight, const float *grad, float lr, size_t i0, size_t i1);

/* --- initializers ---------------------------------------------------- */
/* n values of a normal(0, sigma) truncated to [-2 sigma, 2 sigma]
 * (MindSpore's TruncatedNormal), drawn from rng. */
void sl__init_truncated_normal(float *out, size_t n, float sigma, sl_rng *rng);
void sl__init_fill(float *out, size_t n, float value);

#endif
