/* graph.h: a training graph built through calls, as ggml builds one:
 * building only records nodes and checks shapes; autodiff and the
 * optimizer append their nodes; compiling a step (step.h) plans and
 * allocates; running it computes.
 *
 * A node is named by its id, a non-negative int. Every builder returns the
 * new node's id, or a negative status with the message (naming the op, its
 * node and the shapes involved) in sl_graph_last_error(). Passing a failed
 * builder's result on to the next builder fails again with SL_EINVAL, so a
 * network can be built line by line and checked once at the end.
 *
 * Tensors are float32 in NCHW order unless said otherwise; labels int32. */
#ifndef SLUICE_GRAPH_H
#define SLUICE_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_NODE_NAME_LEN 64

typedef struct sl_graph sl_graph;

typedef enum sl_init_kind {
    SL_INIT_ZEROS = 0,
    SL_INIT_ONES,
    SL_INIT_TRUNCATED_NORMAL /* normal(0, sigma) cut at +-2 sigma, as MindSpore */
} sl_init_kind;

typedef struct sl_init {
    sl_init_kind kind;
    float sigma; /* TruncatedNormal only */
} sl_init;

/* An empty graph in *out; SL_ENOMEM (and *out NULL) when out of memory.
 * Parameters are initialised from the graph's seed (default 0) and their
 * position: set the seed first. Free with sl_graph_free. */
SL_API int sl_graph_new(sl_graph **out);
SL_API void sl_graph_free(sl_graph *g);
SL_API void sl_graph_set_seed(sl_graph *g, uint64_t seed);
SL_API const char *sl_graph_last_error(const sl_graph *g);

/* --- leaves ---------------------------------------------------------- */
/* A value fed at each step (a batch column), float32 or int32. */
SL_API int sl_graph_input(sl_graph *g, const char *name, sl_dtype dtype, int ndim,
                          const int64_t *shape);
/* A trainable float32 parameter, initialised now. Names are unique
 * ("conv1.weight"); checkpoints find parameters by name. */
SL_API int sl_graph_param(sl_graph *g, const char *name, int ndim, const int64_t *shape,
                          sl_init init);

/* --- operators (name may be NULL: one is made up, "relu_7") ----------- */
/* x (N, C, H, W), weight param (OC, C, KH, KW) -> (N, OC, OH, OW); no bias. */
SL_API int sl_graph_conv2d(sl_graph *g, const char *name, int x, int weight, int stride,
                           int pad);
/* Max over kernel x kernel windows, no padding. */
SL_API int sl_graph_max_pool2d(sl_graph *g, const char *name, int x, int kernel, int stride);
SL_API int sl_graph_relu(sl_graph *g, const char *name, int x);
/* x (N, IN), weight (OUT, IN), bias (OUT) or -1 -> (N, OUT). */
SL_API int sl_graph_dense(sl_graph *g, const char *name, int x, int weight, int bias);
/* (N, ...) -> (N, product of the rest). */
SL_API int sl_graph_flatten(sl_graph *g, const char *name, int x);
/* Same elements, another shape; one size may be -1 (inferred). */
SL_API int sl_graph_reshape(sl_graph *g, const char *name, int x, int ndim,
                            const int64_t *shape);
/* a + b, same shapes. */
SL_API int sl_graph_add(sl_graph *g, const char *name, int a, int b);
/* Sparse softmax cross-entropy, mean over the batch: logits (N, C),
 * labels int32 (N) -> scalar. A label outside [0, C) fails the step. */
SL_API int sl_graph_softmax_cross_entropy(sl_graph *g, const char *name, int logits,
                                          int labels);
/* The mean over the axes [axis, ndim) of x, MindSpore's ReduceMean over
 * those trailing axes (axis 2 of (N, C, H, W): global average pooling):
 * (d0, ..., d(axis-1)), or with keep_dims the same rank, those axes of
 * size 1. 0 <= axis < ndim. */
SL_API int sl_graph_reduce_mean(sl_graph *g, const char *name, int x, int axis, int keep_dims);
/* Softmax cross-entropy against dense labels, float32 (N, C) of the
 * logits' shape (one-hot or any distribution; MindSpore's sparse=False):
 * each sample's loss is sum_j labels_ij * -log softmax(logits_i)_j. mean:
 * their mean, a scalar; else (N), each sample's (reduction "none"). */
SL_API int sl_graph_softmax_cross_entropy_dense(sl_graph *g, const char *name, int logits,
                                                int labels, int mean);
/* (N, C) -> int32 (N): the index of each row's largest value. */
SL_API int sl_graph_argmax(sl_graph *g, const char *name, int x);

/* --- training -------------------------------------------------------- */
/* Appends the nodes computing d(loss)/d(p) for every trainable parameter p
 * that loss depends on; call once per graph. loss is a softmax
 * cross-entropy node; one of per-sample losses (N) is differentiated as
 * their sum (each with a gradient of 1: MindSpore's sens of ones). */
SL_API int sl_graph_backward(sl_graph *g, int loss);
/* The node holding param's gradient after sl_graph_backward, or SL_EINVAL. */
SL_API int sl_graph_grad(const sl_graph *g, int param);
/* Appends an update of every parameter that has a gradient, run after the
 * rest of a step. Momentum is MindSpore's: accum = momentum * accum + grad;
 * param -= lr * accum, with one accumulator per parameter (a parameter
 * named "moments.<name>", zero at first, saved in checkpoints). Returns 0. */
SL_API int sl_graph_momentum(sl_graph *g, float lr, float momentum);
SL_API int sl_graph_sgd(sl_graph *g, float lr);
/* Changes the learning rate of the updates already appended. */
SL_API int sl_graph_set_learning_rate(sl_graph *g, float lr);

/* --- looking at a graph ---------------------------------------------- */
SL_API size_t sl_graph_num_nodes(const sl_graph *g);
/* "conv2d", "relu", "param", ... (NULL for a bad id). */
SL_API const char *sl_graph_node_op(const sl_graph *g, int node);
SL_API const char *sl_graph_node_name(const sl_graph *g, int node);
/* Dtype and shape of a node's value; SL_EINVAL for a bad id. */
SL_API int sl_graph_node_spec(const sl_graph *g, int node, sl_tensor_spec *out);
/* The node named name, or SL_EINVAL. */
SL_API int sl_graph_find(const sl_graph *g, const char *name);
/* Parameters (trainable ones and optimizer accumulators), in creation
 * order: i < sl_graph_num_params(). data points at the live float32 values
 * (numel of them), which a step updates in place. */
SL_API size_t sl_graph_num_params(const sl_graph *g);
SL_API int sl_graph_param_at(const sl_graph *g, size_t i);
SL_API float *sl_graph_param_data(sl_graph *g, int node, size_t *numel);

#ifdef __cplusplus
}
#endif
#endif
