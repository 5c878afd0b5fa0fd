/* autodiff.c: reverse-mode differentiation of a recorded graph. Walking the
 * nodes from the loss back to the parameters, each op's rule appends the
 * nodes computing its inputs' gradients; a value read by several ops gets
 * the sum of their contributions through explicit add nodes. */
#include "exec/graph_impl.h"

#include <stdio.h>
#include <stdlib.h>

/* Appends a gradient op reading in[0..nin) whose value has the shape of
 * value `like` and is named "grad.<like>". */
static int grad_node(sl_graph *g, sl__graph_op op, int like, const int *in, int nin)
{
    char name[SL_NODE_NAME_LEN];
    sl__graph_node *n;
    int id;
    sl__make_name(name, "grad.", g->nodes[like].name, "");
    id = sl__graph_add_node(g, op, NULL, in, nin);
    if (id < 0)
        return id;
    n = &g->nodes[id];
    if (sl_graph_find(g, name) < 0)
        snprintf(n->name, sizeof n->name, "%s", name);
    n->dtype = SL_FLOAT32;
    n->ndim = g->nodes[like].ndim;
    for (int i = 0; i < n->ndim; i++)
        n->shape[i] = g->nodes[like].shape[i];
    n->numel = g->nodes[like].numel;
    return id;
}

/* Adds contribution c to the gradient of value v. */
static int accumulate(sl_graph *g, int *grads, int v, int c)
{
    int id;
    if (grads[v] < 0) {
        grads[v] = c;
        return SL_OK;
    }
    id = sl_graph_add(g, NULL, grads[v], c);
    if (id < 0)
        return id;
    {
        char suffix[24];
        snprintf(suffix, sizeof suffix, ".sum%d", id);
        sl__make_name(g->nodes[id].name, "grad.", g->nodes[v].name, suffix);
    }
    grads[v] = id;
    return SL_OK;
}

/* Appends the gradient nodes of node i's inputs, given dy = grads[i]. Each
 * gradient op lists every value it reads as an input (the forward node
 * itself when it reads what that node saved), so liveness is plain. */
static int backward_rule(sl_graph *g, const char *needs, int *grads, int i)
{
    sl__graph_node n = g->nodes[i]; /* a copy: adding nodes may move the array */
    int dy = grads[i], c, rc = SL_OK;

    switch (n.op) {
    case SL__OP_SOFTMAX_XENT:
        /* d loss = 1: reads the saved probabilities and the labels */
        if (needs[n.in[0]]) {
            int in[2] = {i, n.in[1]};
            c = grad_node(g, SL__OP_SOFTMAX_XENT_DX, n.in[0], in, 2);
            rc = c < 0 ? c : accumulate(g, grads, n.in[0], c);
        }
        break;
    case SL__OP_SOFTMAX_XENT_DENSE:
        /* d loss = 1 per sample (or for the mean): reads no dy */
        if (needs[n.in[0]]) {
            int in[2] = {i, n.in[1]};
            c = grad_node(g, SL__OP_SOFTMAX_XENT_DENSE_DX, n.in[0], in, 2);
            if (c >= 0)
                g->nodes[c].attr.xent = n.attr.xent;
            rc = c < 0 ? c : accumulate(g, grads, n.in[0], c);
        }
        break;
    case SL__OP_DENSE:
        if (needs[n.in[0]]) {
            int in[2] = {dy, n.in[1]}; /* dy, weight */
            c = grad_node(g, SL__OP_DENSE_DX, n.in[0], in, 2);
            rc = c < 0 ? c : accumulate(g, grads, n.in[0], c);
        }
        if (rc == SL_OK && needs[n.in[1]]) {
            int in[2] = {dy, n.in[0]}; /* dy, x */
            c = grad_node(g, SL__OP_DENSE_DW, n.in[1], in, 2);
            rc = c < 0 ? c : accumulate(g, grads, n.in[1], c);
        }
        if (rc == SL_OK && n.nin == 3 && needs[n.in[2]]) {
            c = grad_node(g, SL__OP_DENSE_DB, n.in[2], &dy, 1);
            rc = c < 0 ? c : accumulate(g, grads, n.in[2], c);
        }
        break;
    case SL__OP_CONV2D:
        if (needs[n.in[0]]) {
            int in[2] = {dy, n.in[1]}; /* dy, weight */
            c = grad_node(g, SL__OP_CONV2D_DX, n.in[0], in, 2);
            if (c >= 0) {
                g->nodes[c].attr.conv = n.attr.conv;
                g->nodes[c].scratch_bytes = sl__conv2d_dcols_size(&n.attr.conv) * sizeof(float);
            }
            rc = c < 0 ? c : accumulate(g, grads, n.in[0], c);
        }
        if (rc == SL_OK && needs[n.in[1]]) {
            int in[3] = {dy, i, n.in[0]}; /* dy, the conv (its columns), x */
            c = grad_node(g, SL__OP_CONV2D_DW, n.in[1], in, 3);
            if (c >= 0)
                g->nodes[c].attr.conv = n.attr.conv;
            rc = c < 0 ? c : accumulate(g, grads, n.in[1], c);
        }
        break;
    case SL__OP_MAX_POOL2D:
        if (needs[n.in[0]]) {
            int in[2] = {dy, i}; /* dy, the pool (its argmax) */
            c = grad_node(g, SL__OP_MAX_POOL2D_DX, n.in[0], in, 2);
            if (c >= 0)
                g->nodes[c].attr.pool = n.attr.pool;
            rc = c < 0 ? c : accumulate(g, grads, n.in[0], c);
        }
        break;
    case SL__OP_RELU:
        if (needs[n.in[0]]) {
            int in[2] = {dy, i}; /* dy, the relu's output */
            c = grad_node(g, SL__OP_RELU_DX, n.in[0], in, 2);
            rc = c < 0 ? c : accumulate(g, grads, n.in[0], c);
        }
        break;
    case SL__OP_RESHAPE:
        if (needs[n.in[0]]) {
            const sl__graph_node *x = &g->nodes[n.in[0]];
            char name[SL_NODE_NAME_LEN];
            int64_t shape[SL_MAX_DIMS];
            for (int k = 0; k < x->ndim; k++)
                shape[k] = x->shape[k];
            sl__make_name(name, "grad.", x->name, "");
            c = sl_graph_reshape(g, sl_graph_find(g, name) >= 0 ? NULL : name, dy, x->ndim,
                                 shape);
            rc = c < 0 ? c : accumulate(g, grads, n.in[0], c);
        }
        break;
    case SL__OP_REDUCE_MEAN:
        /* each input gets its row's dy over the row's length */
        if (needs[n.in[0]]) {
            c = grad_node(g, SL__OP_REDUCE_MEAN_DX, n.in[0], &dy, 1);
            rc = c < 0 ? c : accumulate(g, grads, n.in[0], c);
        }
        break;
    case SL__OP_ADD:
        /* d(a + b) passes dy through to both sides unchanged. */
        if (needs[n.in[0]])
            rc = accumulate(g, grads, n.in[0], dy);
        if (rc == SL_OK && needs[n.in[1]])
            rc = accumulate(g, grads, n.in[1], dy);
        break;
    default:
        /* inputs, parameters, argmax: nothing flows further back */
        break;
    }
    return rc;
}

int sl_graph_backward(sl_graph *g, int loss)
{
    size_t nfwd = g->nnodes;
    char *needs;
    int *grads;
    int rc = SL_OK;

    if (loss < 0 || (size_t)loss >= g->nnodes)
        return sl__errf(&g->err, SL_EINVAL, "backward: loss %d is not a node", loss);
    if (g->backward_done)
        return sl__errf(&g->err, SL_ESTATE, "backward: the graph already has its gradients");
    if (g->nodes[loss].op != SL__OP_SOFTMAX_XENT && g->nodes[loss].op != SL__OP_SOFTMAX_XENT_DENSE)
        return sl__errf(&g->err, SL_EINVAL,
                        "backward: loss '%s' is %s; it must be a softmax_cross_entropy node",
                        g->nodes[loss].name, sl__graph_op_name(g->nodes[loss].op));
    needs = calloc(nfwd, 1);
    grads = malloc(nfwd * sizeof *grads);
    if (!needs || !grads) {
        free(needs);
        free(grads);
        return sl__errf(&g->err, SL_ENOMEM, "backward: out of memory");
    }
    /* A value needs a gradient when a trainable parameter flows into it. */
    for (size_t i = 0; i < nfwd; i++) {
        const sl__graph_node *n = &g->nodes[i];
        grads[i] = -1;
        needs[i] = n->op == SL__OP_PARAM && n->trainable;
        if (n->op == SL__OP_ARGMAX)
            continue;
        for (int k = 0; k < n->nin; k++)
            needs[i] |= needs[n->in[k]];
    }
    if (!needs[loss]) {
        free(needs);
        free(grads);
        return sl__errf(&g->err, SL_EINVAL, "backward: loss '%s' depends on no parameter",
                        g->nodes[loss].name);
    }
    /* Creation order is a topological order, so walking it backwards visits
     * each value after every op that reads it. */
    grads[loss] = loss; /* a placeholder: the xent rule reads no dy */
    for (int i = loss; i >= 0 && rc == SL_OK; i--)
        if (needs[i] && grads[i] >= 0)
            rc = backward_rule(g, needs, grads, i);
    if (rc == SL_OK) {
        for (size_t i = 0; i < nfwd; i++)
            if (g->nodes[i].op == SL__OP_PARAM && g->nodes[i].trainable)
                g->nodes[i].grad = grads[i];
        g->backward_done = 1;
    } else {
        sl__err_prefix(&g->err, "backward: ");
    }
    free(needs);
    free(grads);
    return rc;
}

int sl_graph_grad(const sl_graph *g, int param)
{
    if (param < 0 || (size_t)param >= g->nnodes || g->nodes[param].op != SL__OP_PARAM ||
        g->nodes[param].grad < 0)
        return SL_EINVAL;
    return g->nodes[param].grad;
}
