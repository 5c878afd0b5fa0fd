/* plan.c: which nodes a step runs, where their values live, and (GRAPH
 * mode) the arena offsets: a value's slot is reused once its last reader
 * has run. Offsets are found first-fit among the blocks alive at that node,
 * so the arena is about as large as the most memory live at one time. */
#include "exec/step_impl.h"

#include <stdlib.h>
#include <string.h>

static size_t round64(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* Sets argmax_unread on each max_pool2d whose argmax no pool gradient
 * (plain, or fused with a relu's: in[1] names the pool either way) reads. */
static void mark_argmax_unread(sl_step *s)
{
    for (int j = 0; j < s->nslots; j++) {
        sl__slot *p = &s->slots[j];
        p->argmax_unread = 0;
        if (s->g->nodes[p->node].op != SL__OP_MAX_POOL2D || p->fused == SL__FUSED_AWAY)
            continue;
        p->argmax_unread = 1;
        for (int k = j + 1; k < s->nslots; k++) {
            const sl__slot *r = &s->slots[k];
            const sl__graph_op op = s->g->nodes[r->node].op;
            if (r->fused == SL__FUSED_AWAY)
                continue;
            if ((op == SL__OP_MAX_POOL2D_DX || r->fused == SL__FUSED_RELU_POOL_DX) &&
                r->in[1] == j)
                p->argmax_unread = 0;
        }
    }
}

int sl__plan_select(sl_step *s, const int *outputs, size_t noutputs, int train)
{
    sl_graph *g = s->g;
    size_t n = g->nnodes;
    char *needed = calloc(n ? n : 1, 1);
    int rc = SL_OK;

    s->node_slot = malloc((n ? n : 1) * sizeof *s->node_slot);
    if (!needed || !s->node_slot) {
        free(needed);
        return sl__errf(&g->err, SL_ENOMEM, "compile: out of memory");
    }
    for (size_t k = 0; k < noutputs; k++) {
        if (outputs[k] < 0 || (size_t)outputs[k] >= n) {
            free(needed);
            return sl__errf(&g->err, SL_EINVAL, "compile: output %zu (%d) is not a node", k,
                            outputs[k]);
        }
        if (sl__graph_op_is_update(g->nodes[outputs[k]].op)) {
            free(needed);
            return sl__errf(&g->err, SL_EINVAL, "compile: output '%s' is an update, not a value",
                            g->nodes[outputs[k]].name);
        }
        needed[outputs[k]] = 1;
    }
    if (train) {
        int any = 0;
        for (size_t i = 0; i < n; i++)
            if (sl__graph_op_is_update(g->nodes[i].op))
                needed[i] = any = 1;
        if (!any) {
            free(needed);
            return sl__errf(&g->err, SL_ESTATE,
                            "compile: a training step needs an optimizer (sl_graph_momentum)");
        }
    }
    /* What the needed nodes read is needed too; inputs come earlier. */
    for (size_t i = n; i-- > 0;)
        if (needed[i])
            for (int k = 0; k < g->nodes[i].nin; k++)
                needed[g->nodes[i].in[k]] = 1;

    s->nslots = 0;
    s->ninputs = 0;
    for (size_t i = 0; i < n; i++) {
        s->node_slot[i] = -1;
        if (needed[i]) {
            s->nslots++;
            s->ninputs += g->nodes[i].op == SL__OP_INPUT;
        }
    }
    s->slots = calloc((size_t)s->nslots + 1, sizeof *s->slots);
    s->inputs = calloc(s->ninputs + 1, sizeof *s->inputs);
    s->outputs = calloc(noutputs + 1, sizeof *s->outputs);
    if (!s->slots || !s->inputs || !s->outputs) {
        free(needed);
        return sl__errf(&g->err, SL_ENOMEM, "compile: out of memory");
    }

    s->ninputs = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        const sl__graph_node *nd = &g->nodes[i];
        sl__slot *sl;
        if (!needed[i])
            continue;
        sl = &s->slots[j];
        sl->node = (int)i;
        sl->last_use = (int)j;
        sl->group_first = -1;
        sl->group_last = -1;
        s->node_slot[i] = (int)j;
        for (int k = 0; k < nd->nin; k++)
            sl->in[k] = s->node_slot[nd->in[k]];
        switch (nd->op) {
        case SL__OP_INPUT:
            sl->storage = SL__STORE_INPUT;
            s->inputs[s->ninputs++] = (int)j;
            break;
        case SL__OP_PARAM:
            sl->storage = SL__STORE_PARAM;
            break;
        case SL__OP_RESHAPE: {
            const sl__slot *src = &s->slots[sl->in[0]];
            sl->storage = SL__STORE_ALIAS;
            sl->root = src->storage == SL__STORE_ALIAS ? src->root : sl->in[0];
            break;
        }
        case SL__OP_MOMENTUM:
        case SL__OP_SGD:
            sl->storage = SL__STORE_NONE;
            break;
        default:
            sl->storage = SL__STORE_TEMP;
            sl->value_bytes = round64(nd->numel * sl_dtype_size(nd->dtype));
            sl->bytes = sl->value_bytes + round64(nd->aux_bytes);
            sl->scratch = round64(nd->scratch_bytes);
            break;
        }
        j++;
    }
    if (s->mode == SL_GRAPH_MODE)
        sl__plan_fuse(s, outputs, noutputs);
    mark_argmax_unread(s);
    /* Lifetimes: a reader keeps the buffer it reads alive (through aliases
     * to their root); outputs live to the end of the run. */
    for (int j = 0; j < s->nslots; j++) {
        sl__slot *sl = &s->slots[j];
        if (sl->fused == SL__FUSED_AWAY)
            continue;
        for (int k = 0; k < sl__slot_num_inputs(s, j); k++) {
            sl__slot *src = &s->slots[sl->in[k]];
            if (src->storage == SL__STORE_ALIAS)
                src = &s->slots[src->root];
            if (src->last_use < j)
                src->last_use = j;
        }
    }
    for (size_t k = 0; k < noutputs; k++) {
        int j = s->node_slot[outputs[k]];
        sl__slot *src = &s->slots[j];
        if (src->storage == SL__STORE_ALIAS)
            src = &s->slots[src->root];
        src->last_use = s->nslots;
        s->outputs[k] = j;
    }
    s->noutputs = noutputs;
    free(needed);
    return rc;
}

/* A block alive in the arena. */
typedef struct live_block {
    size_t offset, size;
    int until; /* step index of its last use */
} live_block;

static int by_offset(const void *a, const void *b)
{
    const live_block *x = a, *y = b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* The lowest offset where size bytes fit between the live blocks (sorted
 * by offset). */
static size_t first_fit(const live_block *live, size_t nlive, size_t size)
{
    size_t at = 0;
    for (size_t i = 0; i < nlive; i++) {
        if (live[i].offset >= at + size)
            return at;
        if (live[i].offset + live[i].size > at)
            at = live[i].offset + live[i].size;
    }
    return at;
}

/* Adds a block and keeps the list sorted. */
static void add_block(live_block *live, size_t *nlive, size_t offset, size_t size, int until)
{
    live[*nlive].offset = offset;
    live[*nlive].size = size;
    live[*nlive].until = until;
    (*nlive)++;
    qsort(live, *nlive, sizeof *live, by_offset);
}

int sl__plan_arena(sl_step *s)
{
    size_t nthreads = (size_t)s->ex->team.nthreads;
    live_block *live = malloc(((size_t)s->nslots * 2 + 1) * sizeof *live);
    size_t nlive = 0, top = 0;

    if (!live)
        return sl__errf(&s->g->err, SL_ENOMEM, "compile: out of memory");
    for (int j = 0; j < s->nslots; j++) {
        sl__slot *sl = &s->slots[j];
        size_t keep = 0;
        /* Blocks whose last reader ran before j are free again. */
        for (size_t i = 0; i < nlive; i++)
            if (live[i].until >= j)
                live[keep++] = live[i];
        nlive = keep;
        if (sl->storage == SL__STORE_TEMP && sl->bytes > 0) {
            sl->offset = first_fit(live, nlive, sl->bytes);
            add_block(live, &nlive, sl->offset, sl->bytes, sl->last_use);
            if (sl->offset + sl->bytes > top)
                top = sl->offset + sl->bytes;
        }
        if (sl->scratch > 0) {
            size_t bytes = sl->scratch * nthreads;
            sl->scratch_offset = first_fit(live, nlive, bytes);
            add_block(live, &nlive, sl->scratch_offset, bytes, j);
            if (sl->scratch_offset + bytes > top)
                top = sl->scratch_offset + bytes;
        }
    }
    free(live);
    s->arena_bytes = top;
    return SL_OK;
}
