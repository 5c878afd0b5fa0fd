/* graph_impl.h: the graph's nodes, for the executor's own files. A graph is
 * an array of nodes in creation order, which is also a valid execution
 * order: a builder only refers to nodes that exist. */
#ifndef SLUICE_EXEC_GRAPH_IMPL_H
#define SLUICE_EXEC_GRAPH_IMPL_H

#include "sluice/graph.h"
#include "core/error.h"
#include "devices/program.h"



typedef struct sl__graph_node {
    sl__graph_op op;
    char name[SL_NODE_NAME_LEN];
    int in[SL__MAX_INPUTS]; /* input node ids */
    int nin;
    sl_dtype dtype;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    size_t numel;       /* 0 for updates */
    size_t aux_bytes;   /* saved for the backward (columns, argmax,
                         * probabilities); lives as long as the value */
    size_t scratch_bytes; /* per thread, only while the node runs */
    sl__op_attr attr;
    /* parameters */
    int trainable;      /* gets a gradient from sl_graph_backward */
    sl_init init;
    float *data;        /* persistent values, 64-byte aligned */
    int grad;           /* the node holding the gradient, or -1 */
} sl__graph_node;

struct sl_graph {
    sl__graph_node *nodes;    /* (nnodes) */
    size_t nnodes, cap;
    uint64_t seed;
    int backward_done;
    int nparams;        /* parameters made so far, for init seeding */
    sl__error err;
};

/* The name of an op ("conv2d"). */
const char *sl__graph_op_name(sl__graph_op op);
/* Adds a node with op, inputs and a name (made up from the op when NULL);
 * returns its id or a negative status. The caller fills the rest. */
int sl__graph_add_node(sl_graph *g, sl__graph_op op, const char *name, const int *in, int nin);
/* The node's shape as "(32, 6, 28, 28)" in buf. */
const char *sl__graph_node_shape_str(const sl__graph_node *n, char *buf, size_t len);
/* Writes prefix + name + suffix into out (SL_NODE_NAME_LEN bytes), cut to
 * fit: derived names ("grad.conv1.weight") are for people to read. */
void sl__make_name(char *out, const char *prefix, const char *name, const char *suffix);
/* 1 for ops that write parameters instead of producing a value. */
int sl__graph_op_is_update(sl__graph_op op);

#endif
