/* network.h: ready-made networks built into a graph: LeNet5 exactly as the
 * MindSpore seeds define it, and a multilayer perceptron. Each adds the
 * inputs `image` float32 (N, C, H, W) and `label` int32 (N), its parameters
 * (named "conv1.weight", "fc1.bias", ...), the logits (N, classes) and the
 * mean softmax cross-entropy loss. */
#ifndef SLUICE_NETWORK_H
#define SLUICE_NETWORK_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_MLP_MAX_LAYERS 8

typedef enum sl_network_kind {
    SL_NETWORK_LENET5 = 0,
    SL_NETWORK_MLP
} sl_network_kind;

/* Versioned (see sluice.h): call sl_network_options_init before setting
 * fields. It lives inside sl_model_options and so never grows. */
typedef struct sl_network_options {
    size_t size;         /* sizeof the struct as the caller compiled it; set by the _init */
    sl_network_kind kind;
    int64_t batch;       /* N (default 32) */
    int64_t channels;    /* C (default 1) */
    int64_t height, width; /* default 32 x 32 (LeNet5 needs 32 x 32) */
    int64_t num_classes; /* default 10 */
    float init_sigma;    /* TruncatedNormal sigma of every parameter (default 0.02) */
    /* MLP: hidden layer widths (default 2 layers: 256, 128), ReLU after each */
    int64_t hidden[SL_MLP_MAX_LAYERS];
    size_t nhidden;
} sl_network_options;

/* The nodes a built network exposes. */
typedef struct sl_network {
    int image, label;    /* inputs */
    int logits;          /* (N, classes) */
    int loss;            /* scalar */
} sl_network;

/* Defaults: LeNet5, batch 32, 1x32x32, 10 classes, sigma 0.02, MLP layers
 * 256, 128. The _sized function writes at most size bytes (for bindings);
 * C callers use the inline _init. */
SL_API void sl_network_options_init_sized(sl_network_options *o, size_t size);
static inline void sl_network_options_init(sl_network_options *o)
{
    sl_network_options_init_sized(o, sizeof *o);
}
/* "lenet", "mlp". */
SL_API const char *sl_network_kind_name(sl_network_kind kind);
SL_API int sl_network_kind_parse(const char *name, sl_network_kind *out);
/* Builds the network into g (o NULL: the defaults); on failure the message
 * is in sl_graph_last_error(g), SL_EINVAL for options not made by
 * sl_network_options_init. */
SL_API int sl_network_build(sl_graph *g, const sl_network_options *o, sl_network *out);

#ifdef __cplusplus
}
#endif
#endif
