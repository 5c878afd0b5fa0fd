/* cpu_compute.c: the cpu device's kernel dispatch (cpu and sim): runs one
 * slot of a loaded program on one thread's share. Ops split their outputs
 * (samples, rows, channels or elements) between threads; ops too small to
 * gain from it run on thread 0 alone. */
#include "devices/cpu_program.h"

/* Below this much work (elements, or multiply-adds for dense) an op runs on
 * one thread: waking a second would cost more than it saves. */
#define MIN_SPLIT_ELEMENTS 8192
#define MIN_SPLIT_MACS 200000

static float *f32(const sl__device_program *s, int j)
{
    return s->ptr[j];
}

static void *aux(const sl__device_program *s, int j)
{
    return (unsigned char *)s->ptr[j] + s->prog->slots[j].value_bytes;
}

static const sl__prog_node *gnode(const sl__device_program *s, int j)
{
    return &s->prog->nodes[s->prog->slots[j].node];
}

/* Slot j, a pool fused with its relu and the conv before them (exec/fuse.c;
 * GRAPH mode only): samples [b, e), a chunk at a time through the conv
 * into this worker's scratch, then through the relu and the pool. */
static void conv_relu_pool(const sl__device_program *s, int j, int worker, size_t b, size_t e)
{
    const sl__slot *sl = &s->prog->slots[j];
    sl__conv2d_dims conv = gnode(s, sl->fused_with)->attr.conv;
    sl__pool2d_dims pool = gnode(s, j)->attr.pool;
    const size_t in_len = conv.c * conv.h * conv.w, out_len = pool.c * pool.oh * pool.ow;
    const float *x = f32(s, sl->in[0]), *w = f32(s, sl->in[1]);
    float *out = f32(s, j), *one = (float *)(sl__cpu_arena(s) + sl->scratch_offset) +
                                   (size_t)worker * sl->scratch / sizeof(float);
    int32_t *argmax = sl->argmax_unread ? NULL : (int32_t *)aux(s, j);
    for (size_t i = b; i < e; i += SL__CONV_POOL_CHUNK) {
        size_t k = e - i < SL__CONV_POOL_CHUNK ? e - i : SL__CONV_POOL_CHUNK;
        conv.n = k;
        pool.n = k;
        sl__conv2d_forward(one, NULL, x + i * in_len, w, &conv, 0, k);
        sl__relu_max_pool2d_forward(out + i * out_len, argmax ? argmax + i * out_len : NULL,
                                    one, &pool, 0, k);
    }
}

/* The grain of an op that splits only when it is big enough. */
static sl__grain big_enough(size_t work, size_t least, sl__grain grain)
{
    return work >= least ? grain : SL__GRAIN_ONE;
}

/* Samples, rows of a sample-split op and elements are independent units:
 * they split per share, so a thread whose CPU was taken leaves little for
 * the other to wait on. Splits by output channel (conv2d_grad_weight) and
 * the dense ops stay one piece per thread: each piece rereads the whole
 * input, or becomes a matrix product too thin to run at full speed. */
void sl__cpu_compute_node(void *arg, const sl__share *sh)
{
    sl__device_program *s = arg;
    int j = s->current;
    const sl__slot *sl = &s->prog->slots[j];
    const sl__prog_node *nd = gnode(s, j);
    const int *in = sl->in;
    size_t b, e;

    switch (nd->op) {
    case SL__OP_CONV2D: {
        const sl__conv2d_dims *d = &nd->attr.conv;
        sl__share_range(sh, SL__GRAIN_SHARE, d->n, 1, &b, &e);
        if (b < e)
            sl__conv2d_forward(f32(s, j), aux(s, j), f32(s, in[0]), f32(s, in[1]), d, b, e);
        break;
    }
    case SL__OP_CONV2D_DX: {
        const sl__conv2d_dims *d = &nd->attr.conv;
        float *scratch = s->prog->mode == SL_GRAPH_MODE
                             ? (float *)(sl__cpu_arena(s) + sl->scratch_offset)
                             : (float *)sl__cpu_scratch(s);
        sl__share_range(sh, SL__GRAIN_SHARE, d->n, 1, &b, &e);
        if (b < e)
            sl__conv2d_backward_input(f32(s, j), scratch + (size_t)sh->worker * sl->scratch / sizeof(float),
                                      f32(s, in[0]), f32(s, in[1]), d, b, e);
        break;
    }
    case SL__OP_CONV2D_DW: {
        /* in[1]: the forward conv, for its columns; none when it was fused
         * into a pool (exec/fuse.c fuses only convs without columns) */
        const sl__conv2d_dims *d = &nd->attr.conv;
        const float *cols = s->prog->slots[in[1]].fused == SL__FUSED_AWAY ? NULL : aux(s, in[1]);
        sl__share_range(sh, SL__GRAIN_THREAD, d->oc, 1, &b, &e);
        if (b < e)
            sl__conv2d_backward_weight(f32(s, j), f32(s, in[0]), cols, f32(s, in[2]), d, b, e);
        break;
    }
    case SL__OP_MAX_POOL2D: { /* fused: in[0] is the relu's input (exec/fuse.c) */
        const sl__pool2d_dims *d = &nd->attr.pool;
        int32_t *argmax = sl->argmax_unread ? NULL : (int32_t *)aux(s, j);
        sl__share_range(sh, SL__GRAIN_SHARE, d->n, 1, &b, &e);
        if (b < e && sl->fused == SL__FUSED_CONV_RELU_POOL)
            conv_relu_pool(s, j, sh->worker, b, e);
        else if (b < e && sl->fused == SL__FUSED_RELU_POOL)
            sl__relu_max_pool2d_forward(f32(s, j), argmax, f32(s, in[0]), d, b, e);
        else if (b < e)
            sl__max_pool2d_forward(f32(s, j), argmax, f32(s, in[0]), d, b, e);
        break;
    }
    case SL__OP_MAX_POOL2D_DX: {
        const sl__pool2d_dims *d = &nd->attr.pool;
        sl__share_range(sh, SL__GRAIN_SHARE, d->n, 1, &b, &e);
        if (b < e)
            sl__max_pool2d_backward(f32(s, j), f32(s, in[0]), aux(s, in[1]), d, b, e);
        break;
    }
    case SL__OP_RELU:
        sl__share_range(sh, big_enough(nd->numel, MIN_SPLIT_ELEMENTS, SL__GRAIN_SHARE), nd->numel,
                        16, &b, &e);
        if (b < e)
            sl__relu_forward(f32(s, j), f32(s, in[0]), b, e);
        break;
    case SL__OP_RELU_DX:
        if (sl->fused == SL__FUSED_RELU_POOL_DX) {
            /* in[0]: the pool's dout; in[1]: the fused pool (exec/fuse.c) */
            const sl__pool2d_dims *d = &gnode(s, in[1])->attr.pool;
            sl__share_range(sh, SL__GRAIN_SHARE, d->n, 1, &b, &e);
            if (b < e)
                sl__relu_max_pool2d_backward(f32(s, j), f32(s, in[0]), aux(s, in[1]),
                                             f32(s, in[1]), d, b, e);
            break;
        }
        sl__share_range(sh, big_enough(nd->numel, MIN_SPLIT_ELEMENTS, SL__GRAIN_SHARE), nd->numel,
                        16, &b, &e);
        if (b < e)
            sl__relu_backward(f32(s, j), f32(s, in[0]), f32(s, in[1]), b, e);
        break;
    case SL__OP_ADD:
        sl__share_range(sh, big_enough(nd->numel, MIN_SPLIT_ELEMENTS, SL__GRAIN_SHARE), nd->numel,
                        16, &b, &e);
        if (b < e)
            sl__add_forward(f32(s, j), f32(s, in[0]), f32(s, in[1]), b, e);
        break;
    case SL__OP_DENSE: {
        const sl__prog_node *w = gnode(s, in[1]);
        size_t n = (size_t)nd->shape[0], out = (size_t)w->shape[0], inf = (size_t)w->shape[1];
        sl__share_range(sh, big_enough(n * out * inf, MIN_SPLIT_MACS, SL__GRAIN_THREAD), n, 1, &b,
                        &e);
        if (b < e)
            sl__dense_forward(f32(s, j), f32(s, in[0]), f32(s, in[1]),
                              nd->nin == 3 ? f32(s, in[2]) : NULL, n, inf, out, b, e);
        break;
    }
    case SL__OP_DENSE_DX: {
        const sl__prog_node *w = gnode(s, in[1]);
        size_t n = (size_t)nd->shape[0], out = (size_t)w->shape[0], inf = (size_t)w->shape[1];
        sl__share_range(sh, big_enough(n * out * inf, MIN_SPLIT_MACS, SL__GRAIN_THREAD), n, 1, &b,
                        &e);
        if (b < e)
            sl__dense_backward_input(f32(s, j), f32(s, in[0]), f32(s, in[1]), n, inf, out, b, e);
        break;
    }
    case SL__OP_DENSE_DW: {
        const sl__prog_node *x = gnode(s, in[1]);
        size_t n = (size_t)x->shape[0], out = (size_t)nd->shape[0], inf = (size_t)nd->shape[1];
        sl__share_range(sh, big_enough(n * out * inf, MIN_SPLIT_MACS, SL__GRAIN_THREAD), out, 1,
                        &b, &e);
        if (b < e)
            sl__dense_backward_weight(f32(s, j), NULL, f32(s, in[0]), f32(s, in[1]), n, inf, out,
                                      b, e);
        break;
    }
    case SL__OP_DENSE_DB: {
        const sl__prog_node *dy = gnode(s, in[0]);
        size_t n = (size_t)dy->shape[0], out = (size_t)nd->shape[0];
        if (sh->index == 0)
            sl__dense_backward_bias(f32(s, j), f32(s, in[0]), n, out, 0, out);
        break;
    }
    case SL__OP_SOFTMAX_XENT:
        if (sh->index == 0) {
            const sl__prog_node *logits = gnode(s, in[0]);
            long rc = sl__softmax_xent_forward(f32(s, j), aux(s, j), f32(s, in[0]),
                                               (const int32_t *)s->ptr[in[1]],
                                               (size_t)logits->shape[0],
                                               (size_t)logits->shape[1]);
            s->bad_label = rc < 0 ? -1 - rc : -1;
        }
        break;
    case SL__OP_SOFTMAX_XENT_DX:
        if (sh->index == 0)
            sl__softmax_xent_backward(f32(s, j), aux(s, in[0]), (const int32_t *)s->ptr[in[1]],
                                      1.0f, (size_t)nd->shape[0], (size_t)nd->shape[1], 0,
                                      (size_t)nd->shape[0]);
        break;
    case SL__OP_SOFTMAX_XENT_DENSE:
        if (sh->index == 0) {
            const sl__prog_node *logits = gnode(s, in[0]);
            sl__softmax_xent_dense_forward(f32(s, j), aux(s, j), f32(s, in[0]), f32(s, in[1]),
                                           (size_t)logits->shape[0], (size_t)logits->shape[1],
                                           nd->attr.xent.mean);
        }
        break;
    case SL__OP_SOFTMAX_XENT_DENSE_DX:
        if (sh->index == 0)
            sl__softmax_xent_dense_backward(f32(s, j), aux(s, in[0]), f32(s, in[1]),
                                            (size_t)nd->shape[0], (size_t)nd->shape[1],
                                            nd->attr.xent.mean, 0, (size_t)nd->shape[0]);
        break;
    case SL__OP_ARGMAX:
        if (sh->index == 0) {
            const sl__prog_node *x = gnode(s, in[0]);
            sl__argmax_forward(s->ptr[j], f32(s, in[0]), (size_t)x->shape[0],
                               (size_t)x->shape[1], 0, (size_t)x->shape[0]);
        }
        break;
    case SL__OP_REDUCE_MEAN: {
        size_t rows = nd->numel, inner = gnode(s, in[0])->numel / rows;
        sl__share_range(sh, big_enough(rows * inner, MIN_SPLIT_ELEMENTS, SL__GRAIN_SHARE), rows,
                        1, &b, &e);
        if (b < e)
            sl__mean_rows_forward(f32(s, j), f32(s, in[0]), inner, b, e);
        break;
    }
    case SL__OP_REDUCE_MEAN_DX: {
        size_t rows = gnode(s, in[0])->numel, inner = nd->numel / rows;
        sl__share_range(sh, big_enough(rows * inner, MIN_SPLIT_ELEMENTS, SL__GRAIN_SHARE), rows,
                        1, &b, &e);
        if (b < e)
            sl__mean_rows_backward(f32(s, j), f32(s, in[0]), inner, b, e);
        break;
    }
    case SL__OP_MOMENTUM: {
        size_t n = gnode(s, in[0])->numel;
        sl__share_range(sh, big_enough(n, MIN_SPLIT_ELEMENTS, SL__GRAIN_SHARE), n, 16, &b, &e);
        if (b < e)
            sl__momentum_update(f32(s, in[0]), f32(s, in[2]), f32(s, in[1]), nd->attr.opt.lr,
                                nd->attr.opt.momentum, b, e);
        break;
    }
    case SL__OP_SGD: {
        size_t n = gnode(s, in[0])->numel;
        sl__share_range(sh, big_enough(n, MIN_SPLIT_ELEMENTS, SL__GRAIN_SHARE), n, 16, &b, &e);
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

size_t sl__cpu_update_numel(const sl__device_program *s, int j)
{
    return gnode(s, s->prog->slots[j].in[0])->numel;
}

/* The update of elements [b, e) of member j's parameter. */
static void update_range(const sl__device_program *s, int j, size_t b, size_t e)
{
    const sl__prog_node *nd = gnode(s, j);
    const int *in = s->prog->slots[j].in;
    if (nd->op == SL__OP_MOMENTUM)
        sl__momentum_update(f32(s, in[0]), f32(s, in[2]), f32(s, in[1]), nd->attr.opt.lr,
                            nd->attr.opt.momentum, b, e);
    else
        sl__sgd_update(f32(s, in[0]), f32(s, in[1]), nd->attr.opt.lr, b, e);
}

/* The group's members lie end to end in one range of units (each starting
 * at a multiple of 16); a share takes its part of that range and updates
 * the pieces of each parameter that fall in it. Every element gets the
 * same arithmetic as from its own update node, so results do not change. */
void sl__cpu_compute_updates(void *arg, const sl__share *sh)
{
    sl__device_program *s = arg;
    const sl__slot *slots = s->prog->slots;
    int first = s->current, last = slots[first].group_last;
    size_t total = slots[last].group_offset + sl__cpu_update_numel(s, last), b, e;

    sl__share_range(sh, big_enough(total, MIN_SPLIT_ELEMENTS, SL__GRAIN_SHARE), total, 16, &b,
                    &e);
    for (int j = first; j <= last && b < e; j++) {
        size_t lo = slots[j].group_offset, hi;
        if (slots[j].group_first != first) /* a parameter between two updates */
            continue;
        hi = lo + sl__cpu_update_numel(s, j);
        if (hi <= b || lo >= e)
            continue;
        update_range(s, j, (b > lo ? b : lo) - lo, (e < hi ? e : hi) - lo);
    }
}

