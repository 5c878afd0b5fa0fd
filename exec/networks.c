/* networks.c: LeNet5 and an MLP, built with the graph builders. */
#include "sluice/network.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/options.h"
#include "exec/graph_impl.h"

/* Embedded in sl_model_options, so it never grows (core/options.h): this
 * fails when a field is appended. */
_Static_assert(sizeof(sl_network_options) ==
                   offsetof(sl_network_options, nhidden) + sizeof(size_t),
               "sl_network_options is embedded in sl_model_options and must not grow");

void sl_network_options_init_sized(sl_network_options *o, size_t size)
{
    sl_network_options d;
    memset(&d, 0, sizeof d);
    d.kind = SL_NETWORK_LENET5;
    d.batch = 32;
    d.channels = 1;
    d.height = 32;
    d.width = 32;
    d.num_classes = 10;
    d.init_sigma = 0.02f;
    d.hidden[0] = 256;
    d.hidden[1] = 128;
    d.nhidden = 2;
    sl__options_init(o, size, &d, sizeof d);
}

const char *sl_network_kind_name(sl_network_kind kind)
{
    switch (kind) {
    case SL_NETWORK_LENET5: return "lenet";
    case SL_NETWORK_MLP: return "mlp";
    }
    return "?";
}

int sl_network_kind_parse(const char *name, sl_network_kind *out)
{
    if (strcmp(name, "lenet") == 0 || strcmp(name, "lenet5") == 0)
        *out = SL_NETWORK_LENET5;
    else if (strcmp(name, "mlp") == 0)
        *out = SL_NETWORK_MLP;
    else
        return SL_EINVAL;
    return SL_OK;
}

/* A dense layer "<name>.weight" (out, in) and "<name>.bias" (out). */
static int dense_layer(sl_graph *g, const char *name, int x, int64_t in, int64_t out,
                       sl_init init)
{
    char wname[SL_NODE_NAME_LEN], bname[SL_NODE_NAME_LEN];
    int64_t wshape[2] = {out, in}, bshape[1] = {out};
    int w, b;
    snprintf(wname, sizeof wname, "%s.weight", name);
    snprintf(bname, sizeof bname, "%s.bias", name);
    w = sl_graph_param(g, wname, 2, wshape, init);
    b = sl_graph_param(g, bname, 1, bshape, init);
    return sl_graph_dense(g, name, x, w, b);
}

/* The seeds' LeNet5: conv(1->6, 5x5, valid, no bias), ReLU, max-pool 2/2,
 * conv(6->16, 5x5), ReLU, max-pool 2/2, flatten, dense 400->120, ReLU,
 * 120->84, ReLU, 84->classes; every weight and bias TruncatedNormal. */
static int build_lenet(sl_graph *g, const sl_network_options *o, int x, sl_init init)
{
    int64_t c1[4] = {6, o->channels, 5, 5}, c2[4] = {16, 6, 5, 5};
    int w1 = sl_graph_param(g, "conv1.weight", 4, c1, init);
    int w2;
    x = sl_graph_conv2d(g, "conv1", x, w1, 1, 0);
    x = sl_graph_relu(g, "relu1", x);
    x = sl_graph_max_pool2d(g, "pool1", x, 2, 2);
    w2 = sl_graph_param(g, "conv2.weight", 4, c2, init);
    x = sl_graph_conv2d(g, "conv2", x, w2, 1, 0);
    x = sl_graph_relu(g, "relu2", x);
    x = sl_graph_max_pool2d(g, "pool2", x, 2, 2);
    x = sl_graph_flatten(g, "flatten", x);
    x = dense_layer(g, "fc1", x, 16 * 5 * 5, 120, init);
    x = sl_graph_relu(g, "relu3", x);
    x = dense_layer(g, "fc2", x, 120, 84, init);
    x = sl_graph_relu(g, "relu4", x);
    return dense_layer(g, "fc3", x, 84, o->num_classes, init);
}

static int build_mlp(sl_graph *g, const sl_network_options *o, int x, sl_init init)
{
    int64_t width = o->channels * o->height * o->width;
    char name[32];
    x = sl_graph_flatten(g, "flatten", x);
    for (size_t i = 0; i < o->nhidden; i++) {
        snprintf(name, sizeof name, "fc%zu", i + 1);
        x = dense_layer(g, name, x, width, o->hidden[i], init);
        snprintf(name, sizeof name, "relu%zu", i + 1);
        x = sl_graph_relu(g, name, x);
        width = o->hidden[i];
    }
    snprintf(name, sizeof name, "fc%zu", o->nhidden + 1);
    return dense_layer(g, name, x, width, o->num_classes, init);
}

int sl_network_build(sl_graph *g, const sl_network_options *user, sl_network *out)
{
    sl_network_options opts;
    const sl_network_options *o = &opts;
    sl_init init;
    int64_t ishape[4], lshape[1];
    int logits;
    const char *name;

    sl_network_options_init(&opts);
    /* Never grows, so its first version is the whole struct. */
    if (sl__options_read(&opts, sizeof opts, sizeof opts, user, "sl_network_options",
                         &g->err) != SL_OK)
        return SL_EINVAL;
    init = (sl_init){SL_INIT_TRUNCATED_NORMAL, o->init_sigma};
    ishape[0] = lshape[0] = o->batch;
    ishape[1] = o->channels;
    ishape[2] = o->height;
    ishape[3] = o->width;
    name = sl_network_kind_name(o->kind);
    if (o->kind != SL_NETWORK_LENET5 && o->kind != SL_NETWORK_MLP)
        return sl__errf(&g->err, SL_EINVAL, "network: unknown kind %d", (int)o->kind);
    if (o->batch < 1 || o->channels < 1 || o->height < 1 || o->width < 1)
        return sl__errf(&g->err, SL_EINVAL, "%s: batch and input sizes must be >= 1", name);
    if (o->num_classes < 2 || !(o->init_sigma > 0.0f))
        return sl__errf(&g->err, SL_EINVAL, "%s: need >= 2 classes and an init sigma > 0",
                        name);
    if (o->kind == SL_NETWORK_LENET5 && (o->height != 32 || o->width != 32))
        return sl__errf(&g->err, SL_ESHAPE,
                        "lenet: input is %lldx%lld; LeNet5 takes 32x32 images (resize them)",
                        (long long)o->height, (long long)o->width);
    if (o->kind == SL_NETWORK_MLP && o->nhidden > SL_MLP_MAX_LAYERS)
        return sl__errf(&g->err, SL_EINVAL, "mlp: at most %d hidden layers",
                        SL_MLP_MAX_LAYERS);
    for (size_t i = 0; o->kind == SL_NETWORK_MLP && i < o->nhidden; i++)
        if (o->hidden[i] < 1)
            return sl__errf(&g->err, SL_EINVAL, "mlp: hidden layer %zu has width %lld", i + 1,
                            (long long)o->hidden[i]);
    out->image = sl_graph_input(g, "image", SL_FLOAT32, 4, ishape);
    out->label = sl_graph_input(g, "label", SL_INT32, 1, lshape);
    if (o->kind == SL_NETWORK_LENET5)
        logits = build_lenet(g, o, out->image, init);
    else
        logits = build_mlp(g, o, out->image, init);
    out->logits = logits;
    out->loss = sl_graph_softmax_cross_entropy(g, "loss", logits, out->label);
    return out->loss < 0 ? out->loss : SL_OK;
}
