/* compute.c: runs one node of a step on one thread's share. Ops split their
 * outputs (samples, rows, channels or elements) between threads; ops too
 * small to gain from it run on thread 0 alone. */
#include "exec/step_impl.h"

/* Below this much work (elements, or multiply-adds for dense) an op runs on
 * one thread: waking a second would cost more than it saves. */
#define MIN_SPLIT_ELEMENTS 8192
#define MIN_SPLIT_MACS 200000

static float *f32(const sl_step *s, int j)
{
    return s->ptr[j];
}

static void *aux(const sl_step *s, int j)
{
    return (unsigned char *)s->ptr[j] + s->slots[j].value_bytes;
}

static const sl__node *gnode(const sl_step *s, int j)
{
    return &s->g->nodes[s->slots[j].node];
}

/* Thread ith's share of n units, or nothing for threads > 0 when the op is
 * too small to split (parts == 1). */
static void share(size_t n, size_t align, int parts, int ith, int nth, size_t *b, size_t *e)
{
    if (parts <= 1 || nth == 1) {
        *b = 0;
        *e = ith == 0 ? n : 0;
        return;
    }
    sl__team_split(n, align, ith, nth, b, e);
}

void sl__compute_node(void *arg, int ith, int nth)
{
    sl_step *s = arg;
    int j = s->current;
    const sl__slot *sl = &s->slots[j];
    const sl__node *nd = gnode(s, j);
    const int *in = sl->in;
    size_t b, e;

    switch (nd->op) {
    case SL__OP_CONV2D: {
        const sl__conv2d_dims *d = &nd->attr.conv;
        share(d->n, 1, 2, ith, nth, &b, &e);
        if (b < e)
            sl__conv2d_forward(f32(s, j), aux(s, j), f32(s, in[0]), f32(s, in[1]), d, b, e);
        break;
    }
    case SL__OP_CONV2D_DX: {
        const sl__conv2d_dims *d = &nd->attr.conv;
        float *scratch = s->mode == SL_GRAPH_MODE
                             ? (float *)(s->arena + sl->scratch_offset)
                             : (float *)s->scratch;
        share(d->n, 1, 2, ith, nth, &b, &e);
        if (b < e)
            sl__conv2d_backward_input(f32(s, j), scratch + (size_t)ith * sl->scratch / sizeof(float),
                                      f32(s, in[0]), f32(s, in[1]), d, b, e);
        break;
    }
    case SL__OP_CONV2D_DW: {
        const sl__conv2d_dims *d = &nd->attr.conv;
        share(d->oc, 1, 2, ith, nth, &b, &e);
        if (b < e)
            sl__conv2d_backward_weight(f32(s, j), f32(s, in[0]), aux(s, in[1]), f32(s, in[2]),
                                       d, b, e);
        break;
    }
    case SL__OP_MAX_POOL2D: {
        const sl__pool2d_dims *d = &nd->attr.pool;
        share(d->n, 1, 2, ith, nth, &b, &e);
        if (b < e)
            sl__max_pool2d_forward(f32(s, j), aux(s, j), f32(s, in[0]), d, b, e);
        break;
    }
    case SL__OP_MAX_POOL2D_DX: {
        const sl__pool2d_dims *d = &nd->attr.pool;
        share(d->n, 1, 2, ith, nth, &b, &e);
        if (b < e)
            sl__max_pool2d_backward(f32(s, j), f32(s, in[0]), aux(s, in[1]), d, b, e);
        break;
    }
    case SL__OP_RELU:
        share(nd->numel, 16, nd->numel >= MIN_SPLIT_ELEMENTS ? 2 : 1, ith, nth, &b, &e);
        if (b < e)
            sl__relu_forward(f32(s, j), f32(s, in[0]), b, e);
        break;
    case SL__OP_RELU_DX:
        share(nd->numel, 16, nd->numel >= MIN_SPLIT_ELEMENTS ? 2 : 1, ith, nth, &b, &e);
        if (b < e)
            sl__relu_backward(f32(s, j), f32(s, in[0]), f32(s, in[1]), b, e);
        break;
    case SL__OP_ADD:
        share(nd->numel, 16, nd->numel >= MIN_SPLIT_ELEMENTS ? 2 : 1, ith, nth, &b, &e);
        if (b < e)
            sl__add_forward(f32(s, j), f32(s, in[0]), f32(s, in[1]), b, e);
        break;
    case SL__OP_DENSE: {
        const sl__node *w = gnode(s, in[1]);
        size_t n = (size_t)nd->shape[0], out = (size_t)w->shape[0], inf = (size_t)w->shape[1];
        share(n, 1, n * out * inf >= MIN_SPLIT_MACS ? 2 : 1, ith, nth, &b, &e);
        if (b < e)
            sl__dense_forward(f32(s, j), f32(s, in[0]), f32(s, in[1]),
                              nd->nin == 3 ? f32(s, in[2]) : NULL, n, inf, out, b, e);
        break;
    }
    case SL__OP_DENSE_DX: {
        const sl__node *w = gnode(s, in[1]);
        size_t n = (size_t)nd->shape[0], out = (size_t)w->shape[0], inf = (size_t)w->shape[1];
        share(n, 1, n * out * inf >= MIN_SPLIT_MACS ? 2 : 1, ith, nth, &b, &e);
        if (b < e)
            sl__dense_backward_input(f32(s, j), f32(s, in[0]), f32(s, in[1]), n, inf, out, b, e);
        break;
    }
    case SL__OP_DENSE_DW: {
        const sl__node *x = gnode(s, in[1]);
        size_t n = (size_t)x->shape[0], out = (size_t)nd->shape[0], inf = (size_t)nd->shape[1];
        share(out, 1, n * out * inf >= MIN_SPLIT_MACS ? 2 : 1, ith, nth, &b, &e);
        if (b < e)
            sl__dense_backward_weight(f32(s, j), NULL, f32(s, in[0]), f32(s, in[1]), n, inf, out,
                                      b, e);
        break;
    }
    case SL__OP_DENSE_DB: {
        const sl__node *dy = gnode(s, in[0]);
        size_t n = (size_t)dy->shape[0], out = (size_t)nd->shape[0];
        if (ith == 0)
            sl__dense_backward_bias(f32(s, j), f32(s, in[0]), n, out, 0, out);
        break;
    }
    case SL__OP_SOFTMAX_XENT:
        if (ith == 0) {
            const sl__node *logits = gnode(s, in[0]);
            long rc = sl__softmax_xent_forward(f32(s, j), aux(s, j), f32(s, in[0]),
                                               (const int32_t *)s->ptr[in[1]],
                                               (size_t)logits->shape[0],
                                               (size_t)logits->shape[1]);
            s->bad_label = rc < 0 ? -1 - rc : -1;
        }
        break;
    case SL__OP_SOFTMAX_XENT_DX:
        if (ith == 0)
            sl__softmax_xent_backward(f32(s, j), aux(s, in[0]), (const int32_t *)s->ptr[in[1]],
                                      1.0f, (size_t)nd->shape[0], (size_t)nd->shape[1], 0,
                                      (size_t)nd->shape[0]);
        break;
    case SL__OP_ARGMAX:
        if (ith == 0) {
            const sl__node *x = gnode(s, in[0]);
            sl__argmax_forward(s->ptr[j], f32(s, in[0]), (size_t)x->shape[0],
                               (size_t)x->shape[1], 0, (size_t)x->shape[0]);
        }
        break;
    case SL__OP_MOMENTUM: {
        size_t n = gnode(s, in[0])->numel;
        share(n, 16, n >= MIN_SPLIT_ELEMENTS ? 2 : 1, ith, nth, &b, &e);
        if (b < e)
            sl__momentum_update(f32(s, in[0]), f32(s, in[2]), f32(s, in[1]), nd->attr.opt.lr,
                                nd->attr.opt.momentum, b, e);
        break;
    }
    case SL__OP_SGD: {
        size_t n = gnode(s, in[0])->numel;
        share(n, 16, n >= MIN_SPLIT_ELEMENTS ? 2 : 1, ith, nth, &b, &e);
        if (b < e)
            sl__sgd_update(f32(s, in[0]), f32(s, in[1]), nd->attr.opt.lr, b, e);
        break;
    }
    case SL__OP_INPUT:
    case SL__OP_PARAM:
    case SL__OP_RESHAPE:
    case SL__OP_COUNT:
        break;
    }
}
