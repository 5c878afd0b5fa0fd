/* optimizer.c: appends the parameter updates that end a training step. */
#include "exec/graph_impl.h"

#include <stdio.h>

/* Appends one update per parameter with a gradient; momentum < 0: SGD. */
static int append_updates(sl_graph *g, float lr, float momentum)
{
    const char *what = momentum < 0.0f ? "sgd" : "momentum";
    size_t nfwd = g->nnodes;

    if (!g->backward_done)
        return sl__errf(&g->err, SL_ESTATE, "%s: call sl_graph_backward first", what);
    if (!(lr > 0.0f) || (momentum >= 0.0f && !(momentum < 1.0f)))
        return sl__errf(&g->err, SL_EINVAL,
                        "%s: learning rate %g must be > 0 and momentum %g in [0, 1)", what,
                        (double)lr, (double)momentum);
    for (size_t i = 0; i < nfwd; i++)
        if (sl__graph_op_is_update(g->nodes[i].op))
            return sl__errf(&g->err, SL_ESTATE, "%s: the graph already has an optimizer",
                            what);
    for (size_t i = 0; i < nfwd; i++) {
        int in[3], nin = 2, id;
        if (g->nodes[i].op != SL__OP_PARAM || g->nodes[i].grad < 0)
            continue;
        in[0] = (int)i;
        in[1] = g->nodes[i].grad;
        if (momentum >= 0.0f) {
            /* MindSpore names the accumulator "moments.<param>" */
            char name[SL_NODE_NAME_LEN];
            sl_init zeros = {SL_INIT_ZEROS, 0.0f};
            int n = snprintf(name, sizeof name, "moments.%s", g->nodes[i].name);
            if (n < 0 || (size_t)n >= sizeof name)
                return sl__errf(&g->err, SL_EINVAL, "%s: parameter name '%s' is too long",
                                what, g->nodes[i].name);
            in[2] = sl_graph_param(g, name, g->nodes[i].ndim, g->nodes[i].shape, zeros);
            if (in[2] < 0)
                return in[2];
            g->nodes[in[2]].trainable = 0;
            nin = 3;
        }
        id = sl__graph_add_node(g, momentum >= 0.0f ? SL__OP_MOMENTUM : SL__OP_SGD, NULL, in,
                                nin);
        if (id < 0)
            return id;
        sl__make_name(g->nodes[id].name, what, ".", g->nodes[i].name);
        g->nodes[id].ndim = 0;
        g->nodes[id].numel = 0;
        g->nodes[id].attr.opt.lr = lr;
        g->nodes[id].attr.opt.momentum = momentum < 0.0f ? 0.0f : momentum;
    }
    return SL_OK;
}

int sl_graph_momentum(sl_graph *g, float lr, float momentum)
{
    if (!(momentum >= 0.0f))
        return sl__errf(&g->err, SL_EINVAL, "momentum: momentum %g must be in [0, 1)",
                        (double)momentum);
    return append_updates(g, lr, momentum);
}

int sl_graph_sgd(sl_graph *g, float lr)
{
    return append_updates(g, lr, -1.0f);
}

int sl_graph_set_learning_rate(sl_graph *g, float lr)
{
    if (!(lr > 0.0f))
        return sl__errf(&g->err, SL_EINVAL, "learning rate %g must be > 0", (double)lr);
    for (size_t i = 0; i < g->nnodes; i++)
        if (sl__graph_op_is_update(g->nodes[i].op))
            g->nodes[i].attr.opt.lr = lr;
    g->attr_changes++; /* compiled steps hand the new rate to their device */
    return SL_OK;
}
