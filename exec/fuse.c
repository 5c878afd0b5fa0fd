/* fuse.c: what GRAPH mode runs together that PYNATIVE runs apart. Each
 * fusion does the same arithmetic on every element as the nodes it
 * replaces, so GRAPH still equals PYNATIVE bit for bit; it saves passes
 * over memory and hand-offs to the compute team.
 *
 * - relu + max_pool2d: the pool reads the relu's input and takes the ReLU
 *   of each element as it reads it, so relu's output is never written. In
 *   training the two gradients fuse the same way: the pool's output tells
 *   where ReLU let the gradient through (see ops/nn/pool2d.c).
 * - conv2d + relu + max_pool2d, forward: the fused pool also runs the
 *   conv, SL__CONV_POOL_CHUNK samples at a time into its thread's scratch,
 *   and pools them while they are still in L2, so the conv's output (4.8
 *   MB for LeNet's first conv at batch 256) is never written whole and read
 *   back. Only where nothing else reads that output, the conv keeps no
 *   columns for its weight gradient, and a share of the batch holds more
 *   than a chunk: with fewer, the conv's output of a share stays in L2
 *   anyway. Measured on EPYC-2c-avx512 (`sluice bench eval`, batch 256):
 *   +4% images/s with chunks of 8, -4% one sample at a time (each conv
 *   call has its setup); at batch 32 on 2 threads (4 samples a share),
 *   fusing measured 5% slower, hence the rule. The kernels give the same
 *   bits for any range of samples (ops/nn/conv2d.c), so this changes none.
 * - parameter updates that follow one another: one job of the team over
 *   all their parameters instead of one per parameter. */
#include "exec/step_impl.h"

#include "ops/nn/nn.h"

static int op_of(const sl_step *s, int j)
{
    return (int)s->g->nodes[s->slots[j].node].op;
}

/* The slots that read slot j's value (at most max of them); -1 when more.
 * A slot fused away reads nothing: what it read, its fusion reads. */
static int readers_of(const sl_step *s, int j, int *out, int max)
{
    int n = 0;
    for (int k = j + 1; k < s->nslots; k++) {
        const sl__slot *sl = &s->slots[k];
        if (sl->fused == SL__FUSED_AWAY)
            continue;
        for (int i = 0; i < sl__slot_num_inputs(s, k); i++) {
            if (sl->in[i] != j)
                continue;
            if (n == max)
                return -1;
            out[n++] = k;
            break;
        }
    }
    return n;
}

static int is_output(const sl_step *s, int j, const int *outputs, size_t noutputs)
{
    for (size_t k = 0; k < noutputs; k++)
        if (s->node_slot[outputs[k]] == j)
            return 1;
    return 0;
}

static void fuse_away(sl__slot *sl, int into)
{
    sl->fused = SL__FUSED_AWAY;
    sl->fused_with = into;
    sl->storage = SL__STORE_NONE;
    sl->bytes = sl->value_bytes = sl->scratch = 0;
}

/* Pool p reads relu r. Fused when r's value has no other use than p and,
 * in training, the relu's gradient q, whose only input from the pool side
 * is the pool's gradient pd, read by q alone. */
static void fuse_relu_pool(sl_step *s, int p, const int *outputs, size_t noutputs)
{
    int r = s->slots[p].in[0], rd[3], pdr[2], n, q = -1, pd = -1;
    if (op_of(s, r) != SL__OP_RELU || s->slots[r].storage != SL__STORE_TEMP ||
        is_output(s, r, outputs, noutputs))
        return;
    n = readers_of(s, r, rd, 2);
    if (n < 1)
        return;
    for (int i = 0; i < n; i++) {
        if (rd[i] == p)
            continue;
        if (op_of(s, rd[i]) != SL__OP_RELU_DX || s->slots[rd[i]].in[1] != r)
            return;
        q = rd[i];
    }
    if (q >= 0) {
        pd = s->slots[q].in[0];
        if (op_of(s, pd) != SL__OP_MAX_POOL2D_DX || s->slots[pd].in[1] != p ||
            s->slots[pd].storage != SL__STORE_TEMP || is_output(s, pd, outputs, noutputs) ||
            readers_of(s, pd, pdr, 2) != 1)
            return;
    }
    s->slots[p].fused = SL__FUSED_RELU_POOL;
    s->slots[p].fused_with = r;
    s->slots[p].in[0] = s->slots[r].in[0];
    fuse_away(&s->slots[r], p);
    if (q >= 0) {
        s->slots[q].fused = SL__FUSED_RELU_POOL_DX;
        s->slots[q].fused_with = pd;
        s->slots[q].in[0] = s->slots[pd].in[0];
        s->slots[q].in[1] = p;
        fuse_away(&s->slots[pd], q);
    }
}

/* The shares the team cuts an op into (devices/team.h). */
static size_t team_shares(const sl_step *s)
{
    const int threads = s->ex->team.nthreads;
    return threads > 1 ? (size_t)threads * SL__TEAM_SHARES_PER_THREAD : 1;
}

/* Pool p, fused with its relu, reads conv c's output: fused with c too
 * when p alone reads that output, c saves no columns and a share holds
 * more than a chunk (see the top). p then reads c's input and weight, and
 * needs a chunk of c's output as scratch per thread. */
static void fuse_conv_relu_pool(sl_step *s, int p, const int *outputs, size_t noutputs)
{
    int c = s->slots[p].in[0], rd[3], n;
    const sl__conv2d_dims *d;
    if (op_of(s, c) != SL__OP_CONV2D || s->slots[c].storage != SL__STORE_TEMP ||
        is_output(s, c, outputs, noutputs))
        return;
    d = &s->g->nodes[s->slots[c].node].attr.conv;
    if (sl__conv2d_cols_size(d) > 0 || d->n <= SL__CONV_POOL_CHUNK * team_shares(s))
        return;
    /* In training the conv's weight gradient names the conv too, for its
     * columns; without columns it reads only the conv's input. */
    n = readers_of(s, c, rd, 3);
    if (n < 1)
        return;
    for (int i = 0; i < n; i++)
        if (rd[i] != p && (op_of(s, rd[i]) != SL__OP_CONV2D_DW || s->slots[rd[i]].in[1] != c))
            return;
    s->slots[p].fused = SL__FUSED_CONV_RELU_POOL;
    s->slots[p].fused_with = c;
    s->slots[p].in[0] = s->slots[c].in[0];
    s->slots[p].in[1] = s->slots[c].in[1];
    /* 64-byte rounded, as the planner rounds every scratch */
    s->slots[p].scratch =
        (SL__CONV_POOL_CHUNK * d->oc * d->oh * d->ow * sizeof(float) + 63) / 64 * 64;
    fuse_away(&s->slots[c], p);
}

void sl__plan_fuse(sl_step *s, const int *outputs, size_t noutputs)
{
    for (int j = 0; j < s->nslots; j++)
        if (op_of(s, j) == SL__OP_MAX_POOL2D && s->slots[j].fused == SL__FUSED_NONE)
            fuse_relu_pool(s, j, outputs, noutputs);
    for (int j = 0; j < s->nslots; j++)
        if (s->slots[j].fused == SL__FUSED_RELU_POOL)
            fuse_conv_relu_pool(s, j, outputs, noutputs);
}

int sl__slot_num_inputs(const sl_step *s, int j)
{
    if (s->slots[j].fused == SL__FUSED_CONV_RELU_POOL)
        return 2;
    return s->g->nodes[s->slots[j].node].nin;
}

const char *sl__slot_op_name(const sl_step *s, int j)
{
    const sl__slot *sl = &s->slots[j];
    sl__graph_op op = s->g->nodes[sl->node].op;
    switch (sl->fused) {
    case SL__FUSED_RELU_POOL: return "relu+max_pool2d";
    case SL__FUSED_RELU_POOL_DX: return "relu+max_pool2d_grad";
    case SL__FUSED_CONV_RELU_POOL: return "conv2d+relu+max_pool2d";
    case SL__FUSED_AWAY:
        if (op == SL__OP_CONV2D)
            return "conv2d (in conv2d+relu+max_pool2d)";
        if (op == SL__OP_RELU)
            return s->slots[sl->fused_with].fused == SL__FUSED_CONV_RELU_POOL
                       ? "relu (in conv2d+relu+max_pool2d)"
                       : "relu (in relu+max_pool2d)";
        return "max_pool2d_grad (in relu+max_pool2d_grad)";
    case SL__FUSED_NONE: break;
    }
    if (sl->group_first >= 0)
        return op == SL__OP_MOMENTUM ? "momentum, one pass" : "sgd, one pass";
    return sl__graph_op_name(op);
}

/* Parameters (the optimizer's accumulators among them) have no work to
 * run, so they do not break a run of updates. */
static int is_update(const sl_step *s, int j)
{
    return sl__graph_op_is_update((sl__graph_op)op_of(s, j));
}

void sl__plan_group_updates(sl_step *s)
{
    for (int j = 0; j < s->nslots; j++) {
        int last = j, count = 0;
        size_t offset = 0;
        if (!is_update(s, j))
            continue;
        for (int k = j; k < s->nslots; k++) {
            if (is_update(s, k)) {
                last = k;
                count++;
            } else if (s->slots[k].storage != SL__STORE_PARAM) {
                break;
            }
        }
        if (count >= 2) {
            for (int k = j; k <= last; k++) {
                if (!is_update(s, k))
                    continue;
                s->slots[k].group_first = j;
                s->slots[k].group_last = last;
                s->slots[k].group_offset = offset;
                offset += (sl__update_numel(s, k) + 15) / 16 * 16;
            }
        }
        j = last;
    }
}
