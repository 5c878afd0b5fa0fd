/* graph.c: the graph object and its builders. Each builder checks its
 * inputs' shapes and dtypes, so a mistake is reported where the network is
 * written, naming the op, the node and the shapes. */
#include "exec/graph_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor_impl.h"

static const char *const op_names[SL__OP_COUNT] = {
    [SL__OP_INPUT] = "input",
    [SL__OP_PARAM] = "param",
    [SL__OP_CONV2D] = "conv2d",
    [SL__OP_MAX_POOL2D] = "max_pool2d",
    [SL__OP_RELU] = "relu",
    [SL__OP_DENSE] = "dense",
    [SL__OP_RESHAPE] = "reshape",
    [SL__OP_ADD] = "add",
    [SL__OP_SOFTMAX_XENT] = "softmax_cross_entropy",
    [SL__OP_SOFTMAX_XENT_DENSE] = "softmax_cross_entropy_dense",
    [SL__OP_ARGMAX] = "argmax",
    [SL__OP_REDUCE_MEAN] = "reduce_mean",
    [SL__OP_CONV2D_DX] = "conv2d_grad_input",
    [SL__OP_CONV2D_DW] = "conv2d_grad_weight",
    [SL__OP_MAX_POOL2D_DX] = "max_pool2d_grad",
    [SL__OP_RELU_DX] = "relu_grad",
    [SL__OP_DENSE_DX] = "dense_grad_input",
    [SL__OP_DENSE_DW] = "dense_grad_weight",
    [SL__OP_DENSE_DB] = "dense_grad_bias",
    [SL__OP_SOFTMAX_XENT_DX] = "softmax_cross_entropy_grad",
    [SL__OP_REDUCE_MEAN_DX] = "reduce_mean_grad",
    [SL__OP_SOFTMAX_XENT_DENSE_DX] = "softmax_cross_entropy_dense_grad",
    [SL__OP_MOMENTUM] = "momentum",
    [SL__OP_SGD] = "sgd",
};

const char *sl__graph_op_name(sl__graph_op op)
{
    return (op >= 0 && op < SL__OP_COUNT) ? op_names[op] : "?";
}

int sl__graph_op_is_update(sl__graph_op op)
{
    return op == SL__OP_MOMENTUM || op == SL__OP_SGD;
}

const char *sl__graph_node_shape_str(const sl__graph_node *n, char *buf, size_t len)
{
    return sl_shape_str(buf, len, n->ndim, n->shape);
}

void sl__make_name(char *out, const char *prefix, const char *name, const char *suffix)
{
    char buf[3 * SL_NODE_NAME_LEN];
    /* through a buffer: name may be out itself */
    snprintf(buf, sizeof buf, "%s%s%s", prefix, name, suffix);
    memcpy(out, buf, SL_NODE_NAME_LEN - 1);
    out[SL_NODE_NAME_LEN - 1] = '\0';
}

int sl_graph_new(sl_graph **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? SL_OK : SL_ENOMEM;
}

void sl_graph_free(sl_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nnodes; i++)
        free(g->nodes[i].data);
    free(g->nodes);
    free(g);
}

void sl_graph_set_seed(sl_graph *g, uint64_t seed)
{
    g->seed = seed;
}

const char *sl_graph_last_error(const sl_graph *g)
{
    return g->err.msg;
}

static int valid_id(const sl_graph *g, int id)
{
    return id >= 0 && (size_t)id < g->nnodes;
}

int sl__graph_add_node(sl_graph *g, sl__graph_op op, const char *name, const int *in, int nin)
{
    sl__graph_node *n;
    SL_ASSERT(nin >= 0 && nin <= SL__MAX_INPUTS);
    if (g->nnodes == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        sl__graph_node *nodes = realloc(g->nodes, cap * sizeof *nodes);
        if (!nodes)
            return sl__errf(&g->err, SL_ENOMEM, "%s: out of memory adding a node",
                            sl__graph_op_name(op));
        g->nodes = nodes;
        g->cap = cap;
    }
    n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->nin = nin;
    for (int i = 0; i < nin; i++)
        n->in[i] = in[i];
    n->grad = -1;
    n->dtype = SL_FLOAT32;
    if (name && *name)
        snprintf(n->name, sizeof n->name, "%s", name);
    else
        snprintf(n->name, sizeof n->name, "%s_%zu", sl__graph_op_name(op), g->nnodes);
    return (int)g->nnodes++;
}

/* Sets a node's shape and element count; refuses absurd sizes. */
static int set_shape(sl_graph *g, int id, sl_dtype dtype, int ndim, const int64_t *shape)
{
    sl__graph_node *n = &g->nodes[id];
    size_t nbytes;
    n->dtype = dtype;
    n->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        n->shape[i] = shape[i];
    if (sl__shape_numel(ndim, shape, dtype, &n->numel, &nbytes) < 0) {
        char s[96];
        g->nnodes--;
        return sl__errf(&g->err, SL_ESHAPE, "%s '%s': shape %s is invalid or too large",
                        sl__graph_op_name(n->op), n->name, sl_shape_str(s, sizeof s, ndim, shape));
    }
    return id;
}

/* Checks that every input id names a node; a failed builder's negative
 * result passed on lands here. */
static int check_inputs(sl_graph *g, const char *op, const char *name, const int *in, int nin)
{
    for (int i = 0; i < nin; i++) {
        if (!valid_id(g, in[i])) {
            if (in[i] < 0 && g->err.status < 0)
                return SL_EINVAL; /* keep the first error's message */
            return sl__errf(&g->err, SL_EINVAL, "%s%s%s: input %d is not a node (id %d)", op,
                            name ? " " : "", name ? name : "", i, in[i]);
        }
        if (sl__graph_op_is_update(g->nodes[in[i]].op))
            return sl__errf(&g->err, SL_EINVAL, "%s: input %d ('%s') is an update, not a value",
                            op, i, g->nodes[in[i]].name);
    }
    return SL_OK;
}

static int check_name_free(sl_graph *g, const char *op, const char *name)
{
    if (!name || !*name)
        return SL_OK;
    if (strlen(name) >= SL_NODE_NAME_LEN)
        return sl__errf(&g->err, SL_EINVAL, "%s: name '%s' is longer than %d characters", op,
                        name, SL_NODE_NAME_LEN - 1);
    if (sl_graph_find(g, name) >= 0)
        return sl__errf(&g->err, SL_EINVAL, "%s: a node named '%s' already exists", op, name);
    return SL_OK;
}

/* Starts a builder: checks inputs and name, then adds the node. */
static int begin_node(sl_graph *g, sl__graph_op op, const char *name, const int *in, int nin)
{
    int rc = check_inputs(g, sl__graph_op_name(op), name, in, nin);
    if (rc < 0)
        return rc;
    rc = check_name_free(g, sl__graph_op_name(op), name);
    if (rc < 0)
        return rc;
    return sl__graph_add_node(g, op, name, in, nin);
}

static const sl__graph_node *node(const sl_graph *g, int id)
{
    return &g->nodes[id];
}

/* Fails the node just added (the last one) with a message. */
static int fail_last(sl_graph *g, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_last(sl_graph *g, int status, const char *fmt, ...)
{
    char msg[SL_ERRMSG_LEN];
    const sl__graph_node *n = &g->nodes[g->nnodes - 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sl__errf(&g->err, status, "%s '%s': %s", sl__graph_op_name(n->op), n->name, msg);
    g->nnodes--;
    return status;
}

static int check_dims(const int64_t *shape, int ndim)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] <= 0)
            return -1;
    return 0;
}

int sl_graph_input(sl_graph *g, const char *name, sl_dtype dtype, int ndim,
                   const int64_t *shape)
{
    char s[96];
    int id = begin_node(g, SL__OP_INPUT, name, NULL, 0);
    if (id < 0)
        return id;
    if (dtype != SL_FLOAT32 && dtype != SL_INT32)
        return fail_last(g, SL_EINVAL, "dtype %s: inputs are float32 or int32",
                         sl_dtype_name(dtype));
    if (ndim < 0 || ndim > SL_MAX_DIMS || (ndim > 0 && !shape) || check_dims(shape, ndim) < 0)
        return fail_last(g, SL_ESHAPE, "shape %s: every size must be >= 1",
                         shape ? sl_shape_str(s, sizeof s, ndim, shape) : "NULL");
    return set_shape(g, id, dtype, ndim, shape);
}

int sl_graph_param(sl_graph *g, const char *name, int ndim, const int64_t *shape,
                   sl_init init)
{
    char s[96];
    sl__graph_node *n;
    sl_rng rng;
    int id;
    if (!name || !*name)
        return sl__errf(&g->err, SL_EINVAL, "param: a parameter needs a name");
    id = begin_node(g, SL__OP_PARAM, name, NULL, 0);
    if (id < 0)
        return id;
    if (ndim < 1 || ndim > SL_MAX_DIMS || !shape || check_dims(shape, ndim) < 0)
        return fail_last(g, SL_ESHAPE, "shape %s: every size must be >= 1",
                         shape ? sl_shape_str(s, sizeof s, ndim, shape) : "NULL");
    if (init.kind == SL_INIT_TRUNCATED_NORMAL && !(init.sigma > 0.0f))
        return fail_last(g, SL_EINVAL, "TruncatedNormal sigma must be > 0");
    id = set_shape(g, id, SL_FLOAT32, ndim, shape);
    if (id < 0)
        return id;
    n = &g->nodes[id];
    n->trainable = 1;
    n->init = init;
    n->data = aligned_alloc(64, (n->numel * sizeof(float) + 63) / 64 * 64);
    if (!n->data)
        return fail_last(g, SL_ENOMEM, "out of memory for %zu values", n->numel);
    switch (init.kind) {
    case SL_INIT_ZEROS:
        sl__init_fill(n->data, n->numel, 0.0f);
        break;
    case SL_INIT_ONES:
        sl__init_fill(n->data, n->numel, 1.0f);
        break;
    case SL_INIT_TRUNCATED_NORMAL:
        /* Seeded by position, so adding a node elsewhere does not change
         * what this parameter draws. */
        sl__rng_seed(&rng, g->seed, (uint64_t)g->nparams, 0x696e6974u, 0);
        sl__init_truncated_normal(n->data, n->numel, init.sigma, &rng);
        break;
    default:
        free(n->data);
        n->data = NULL;
        return fail_last(g, SL_EINVAL, "unknown initializer %d", (int)init.kind);
    }
    g->nparams++;
    return id;
}

static int need_float(sl_graph *g, int id, const char *what)
{
    char s[96];
    const sl__graph_node *x = node(g, id);
    if (x->dtype != SL_FLOAT32)
        return fail_last(g, SL_ESHAPE, "%s '%s' is %s %s, expected float32", what, x->name,
                         sl_dtype_name(x->dtype), sl__graph_node_shape_str(x, s, sizeof s));
    return SL_OK;
}

int sl_graph_conv2d(sl_graph *g, const char *name, int x, int weight, int stride, int pad)
{
    int in[2] = {x, weight};
    char sx[96], sw[96];
    const sl__graph_node *nx, *nw;
    sl__conv2d_dims d;
    int64_t shape[4];
    int id = begin_node(g, SL__OP_CONV2D, name, in, 2);
    if (id < 0)
        return id;
    nx = node(g, x);
    nw = node(g, weight);
    sl__graph_node_shape_str(nx, sx, sizeof sx);
    sl__graph_node_shape_str(nw, sw, sizeof sw);
    if (need_float(g, x, "input") < 0 || need_float(g, weight, "weight") < 0)
        return g->err.status;
    if (nx->ndim != 4)
        return fail_last(g, SL_ESHAPE, "input '%s' %s must be (N, C, H, W)", nx->name, sx);
    if (nw->ndim != 4)
        return fail_last(g, SL_ESHAPE, "weight '%s' %s must be (OC, C, KH, KW)", nw->name, sw);
    if (nw->shape[1] != nx->shape[1])
        return fail_last(g, SL_ESHAPE,
                         "input '%s' %s has %lld channels, weight '%s' %s expects %lld",
                         nx->name, sx, (long long)nx->shape[1], nw->name, sw,
                         (long long)nw->shape[1]);
    if (stride < 1 || pad < 0)
        return fail_last(g, SL_EINVAL, "stride %d and pad %d: need stride >= 1, pad >= 0",
                         stride, pad);
    d.n = (size_t)nx->shape[0];
    d.c = (size_t)nx->shape[1];
    d.h = (size_t)nx->shape[2];
    d.w = (size_t)nx->shape[3];
    d.oc = (size_t)nw->shape[0];
    d.kh = (size_t)nw->shape[2];
    d.kw = (size_t)nw->shape[3];
    d.stride = (size_t)stride;
    d.pad = (size_t)pad;
    if (sl__conv2d_dims_init(&d) < 0)
        return fail_last(g, SL_ESHAPE, "kernel %zux%zu does not fit input '%s' %s with pad %d",
                         d.kh, d.kw, nx->name, sx, pad);
    shape[0] = (int64_t)d.n;
    shape[1] = (int64_t)d.oc;
    shape[2] = (int64_t)d.oh;
    shape[3] = (int64_t)d.ow;
    id = set_shape(g, id, SL_FLOAT32, 4, shape);
    if (id < 0)
        return id;
    g->nodes[id].attr.conv = d;
    g->nodes[id].aux_bytes = sl__conv2d_cols_size(&d) * sizeof(float);
    return id;
}

int sl_graph_max_pool2d(sl_graph *g, const char *name, int x, int kernel, int stride)
{
    char sx[96];
    const sl__graph_node *nx;
    sl__pool2d_dims d;
    int64_t shape[4];
    int id = begin_node(g, SL__OP_MAX_POOL2D, name, &x, 1);
    if (id < 0)
        return id;
    nx = node(g, x);
    sl__graph_node_shape_str(nx, sx, sizeof sx);
    if (need_float(g, x, "input") < 0)
        return g->err.status;
    if (nx->ndim != 4)
        return fail_last(g, SL_ESHAPE, "input '%s' %s must be (N, C, H, W)", nx->name, sx);
    if (kernel < 1 || stride < 1)
        return fail_last(g, SL_EINVAL, "kernel %d and stride %d must be >= 1", kernel, stride);
    d.n = (size_t)nx->shape[0];
    d.c = (size_t)nx->shape[1];
    d.h = (size_t)nx->shape[2];
    d.w = (size_t)nx->shape[3];
    d.k = (size_t)kernel;
    d.stride = (size_t)stride;
    if (sl__pool2d_dims_init(&d) < 0)
        return fail_last(g, SL_ESHAPE, "window %dx%d does not fit input '%s' %s", kernel,
                         kernel, nx->name, sx);
    shape[0] = (int64_t)d.n;
    shape[1] = (int64_t)d.c;
    shape[2] = (int64_t)d.oh;
    shape[3] = (int64_t)d.ow;
    id = set_shape(g, id, SL_FLOAT32, 4, shape);
    if (id < 0)
        return id;
    g->nodes[id].attr.pool = d;
    g->nodes[id].aux_bytes = g->nodes[id].numel * sizeof(int32_t);
    return id;
}

int sl_graph_relu(sl_graph *g, const char *name, int x)
{
    int id = begin_node(g, SL__OP_RELU, name, &x, 1);
    if (id < 0)
        return id;
    if (need_float(g, x, "input") < 0)
        return g->err.status;
    return set_shape(g, id, SL_FLOAT32, node(g, x)->ndim, node(g, x)->shape);
}

int sl_graph_reduce_mean(sl_graph *g, const char *name, int x, int axis, int keep_dims)
{
    char sx[96];
    int64_t shape[SL_MAX_DIMS];
    const sl__graph_node *nx;
    int ndim = 0;
    int id = begin_node(g, SL__OP_REDUCE_MEAN, name, &x, 1);
    if (id < 0)
        return id;
    if (need_float(g, x, "input") < 0)
        return g->err.status;
    nx = node(g, x);
    sl__graph_node_shape_str(nx, sx, sizeof sx);
    if (axis < 0 || axis >= nx->ndim)
        return fail_last(g, SL_EINVAL,
                         "axis %d of input '%s' %s: the mean is over the axes from one in "
                         "[0, %d) to the last",
                         axis, nx->name, sx, nx->ndim);
    for (int i = 0; i < nx->ndim; i++)
        if (i < axis)
            shape[ndim++] = nx->shape[i];
        else if (keep_dims)
            shape[ndim++] = 1;
    return set_shape(g, id, SL_FLOAT32, ndim, shape);
}

int sl_graph_dense(sl_graph *g, const char *name, int x, int weight, int bias)
{
    int in[3] = {x, weight, bias};
    char sx[96], sw[96], sb[96];
    const sl__graph_node *nx, *nw, *nb;
    int64_t shape[2];
    int id = begin_node(g, SL__OP_DENSE, name, in, bias == -1 ? 2 : 3);
    if (id < 0)
        return id;
    nx = node(g, x);
    nw = node(g, weight);
    sl__graph_node_shape_str(nx, sx, sizeof sx);
    sl__graph_node_shape_str(nw, sw, sizeof sw);
    if (need_float(g, x, "input") < 0 || need_float(g, weight, "weight") < 0)
        return g->err.status;
    if (nx->ndim != 2)
        return fail_last(g, SL_ESHAPE, "input '%s' %s must be (N, IN): flatten it first",
                         nx->name, sx);
    if (nw->ndim != 2 || nw->shape[1] != nx->shape[1])
        return fail_last(g, SL_ESHAPE, "input '%s' %s does not match weight '%s' %s (OUT, IN)",
                         nx->name, sx, nw->name, sw);
    if (bias != -1) {
        nb = node(g, bias);
        sl__graph_node_shape_str(nb, sb, sizeof sb);
        if (need_float(g, bias, "bias") < 0)
            return g->err.status;
        if (nb->ndim != 1 || nb->shape[0] != nw->shape[0])
            return fail_last(g, SL_ESHAPE, "bias '%s' %s must be (%lld)", nb->name, sb,
                             (long long)nw->shape[0]);
    }
    shape[0] = nx->shape[0];
    shape[1] = nw->shape[0];
    return set_shape(g, id, SL_FLOAT32, 2, shape);
}

int sl_graph_flatten(sl_graph *g, const char *name, int x)
{
    int64_t shape[2];
    const sl__graph_node *nx;
    if (check_inputs(g, "flatten", name, &x, 1) < 0)
        return g->err.status < 0 ? g->err.status : SL_EINVAL;
    nx = node(g, x);
    if (nx->ndim < 1)
        return sl__errf(&g->err, SL_ESHAPE, "flatten: input '%s' is a scalar", nx->name);
    shape[0] = nx->shape[0];
    shape[1] = nx->shape[0] > 0 ? (int64_t)(nx->numel / (size_t)nx->shape[0]) : 0;
    return sl_graph_reshape(g, name, x, 2, shape);
}

int sl_graph_reshape(sl_graph *g, const char *name, int x, int ndim, const int64_t *shape)
{
    char sx[96], ss[96];
    int64_t out[SL_MAX_DIMS];
    size_t known = 1;
    int unknown = -1;
    const sl__graph_node *nx;
    int id = begin_node(g, SL__OP_RESHAPE, name, &x, 1);
    if (id < 0)
        return id;
    nx = node(g, x);
    sl__graph_node_shape_str(nx, sx, sizeof sx);
    if (ndim < 0 || ndim > SL_MAX_DIMS || (ndim > 0 && !shape))
        return fail_last(g, SL_EINVAL, "rank %d: must be 0..%d", ndim, SL_MAX_DIMS);
    sl_shape_str(ss, sizeof ss, ndim, shape);
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1 && unknown < 0)
            unknown = i;
        else if (shape[i] < 1)
            return fail_last(g, SL_ESHAPE, "target %s: sizes must be >= 1, one may be -1", ss);
        else
            known *= (size_t)shape[i];
    }
    if (unknown >= 0) {
        if (known == 0 || nx->numel % known != 0)
            return fail_last(g, SL_ESHAPE, "cannot reshape '%s' %s to %s", nx->name, sx, ss);
        out[unknown] = (int64_t)(nx->numel / known);
        known *= (size_t)out[unknown];
    }
    if (known != nx->numel)
        return fail_last(g, SL_ESHAPE, "cannot reshape '%s' %s (%zu values) to %s", nx->name,
                         sx, nx->numel, ss);
    return set_shape(g, id, nx->dtype, ndim, out);
}

int sl_graph_add(sl_graph *g, const char *name, int a, int b)
{
    int in[2] = {a, b};
    char sa[96], sb[96];
    const sl__graph_node *na, *nb;
    int id = begin_node(g, SL__OP_ADD, name, in, 2);
    if (id < 0)
        return id;
    na = node(g, a);
    nb = node(g, b);
    if (need_float(g, a, "input") < 0 || need_float(g, b, "input") < 0)
        return g->err.status;
    if (!sl__shape_equal(na->ndim, na->shape, nb->ndim, nb->shape))
        return fail_last(g, SL_ESHAPE, "'%s' %s and '%s' %s differ in shape", na->name,
                         sl__graph_node_shape_str(na, sa, sizeof sa), nb->name,
                         sl__graph_node_shape_str(nb, sb, sizeof sb));
    return set_shape(g, id, SL_FLOAT32, na->ndim, na->shape);
}

int sl_graph_softmax_cross_entropy(sl_graph *g, const char *name, int logits, int labels)
{
    int in[2] = {logits, labels};
    char sl[96], sy[96];
    const sl__graph_node *nl, *ny;
    int id = begin_node(g, SL__OP_SOFTMAX_XENT, name, in, 2);
    if (id < 0)
        return id;
    nl = node(g, logits);
    ny = node(g, labels);
    sl__graph_node_shape_str(nl, sl, sizeof sl);
    sl__graph_node_shape_str(ny, sy, sizeof sy);
    if (need_float(g, logits, "logits") < 0)
        return g->err.status;
    if (nl->ndim != 2)
        return fail_last(g, SL_ESHAPE, "logits '%s' %s must be (N, C)", nl->name, sl);
    if (ny->dtype != SL_INT32)
        return fail_last(g, SL_ESHAPE, "labels '%s' are %s, expected int32", ny->name,
                         sl_dtype_name(ny->dtype));
    if (ny->ndim != 1 || ny->shape[0] != nl->shape[0])
        return fail_last(g, SL_ESHAPE, "labels '%s' %s must be (%lld) for logits '%s' %s",
                         ny->name, sy, (long long)nl->shape[0], nl->name, sl);
    id = set_shape(g, id, SL_FLOAT32, 0, NULL);
    if (id < 0)
        return id;
    g->nodes[id].aux_bytes = nl->numel * sizeof(float); /* softmax probabilities */
    return id;
}

int sl_graph_softmax_cross_entropy_dense(sl_graph *g, const char *name, int logits, int labels,
                                         int mean)
{
    int in[2] = {logits, labels};
    char sl[96], sy[96];
    const sl__graph_node *nl, *ny;
    int64_t n;
    int id = begin_node(g, SL__OP_SOFTMAX_XENT_DENSE, name, in, 2);
    if (id < 0)
        return id;
    nl = node(g, logits);
    ny = node(g, labels);
    sl__graph_node_shape_str(nl, sl, sizeof sl);
    sl__graph_node_shape_str(ny, sy, sizeof sy);
    if (need_float(g, logits, "logits") < 0 || need_float(g, labels, "labels") < 0)
        return g->err.status;
    if (nl->ndim != 2)
        return fail_last(g, SL_ESHAPE, "logits '%s' %s must be (N, C)", nl->name, sl);
    if (!sl__shape_equal(nl->ndim, nl->shape, ny->ndim, ny->shape))
        return fail_last(g, SL_ESHAPE, "labels '%s' %s must have the shape of logits '%s' %s",
                         ny->name, sy, nl->name, sl);
    n = nl->shape[0];
    id = set_shape(g, id, SL_FLOAT32, mean ? 0 : 1, &n);
    if (id < 0)
        return id;
    g->nodes[id].attr.xent.mean = mean != 0;
    g->nodes[id].aux_bytes = nl->numel * sizeof(float); /* softmax probabilities */
    return id;
}

int sl_graph_argmax(sl_graph *g, const char *name, int x)
{
    char sx[96];
    const sl__graph_node *nx;
    int id = begin_node(g, SL__OP_ARGMAX, name, &x, 1);
    if (id < 0)
        return id;
    nx = node(g, x);
    if (need_float(g, x, "input") < 0)
        return g->err.status;
    if (nx->ndim != 2)
        return fail_last(g, SL_ESHAPE, "input '%s' %s must be (N, C)", nx->name,
                         sl__graph_node_shape_str(nx, sx, sizeof sx));
    return set_shape(g, id, SL_INT32, 1, nx->shape);
}

/* --- looking at a graph ---------------------------------------------- */

size_t sl_graph_num_nodes(const sl_graph *g)
{
    return g->nnodes;
}

const char *sl_graph_node_op(const sl_graph *g, int id)
{
    return valid_id(g, id) ? sl__graph_op_name(g->nodes[id].op) : NULL;
}

const char *sl_graph_node_name(const sl_graph *g, int id)
{
    return valid_id(g, id) ? g->nodes[id].name : NULL;
}

int sl_graph_node_spec(const sl_graph *g, int id, sl_tensor_spec *out)
{
    if (!valid_id(g, id))
        return SL_EINVAL;
    out->dtype = g->nodes[id].dtype;
    out->ndim = g->nodes[id].ndim;
    for (int i = 0; i < out->ndim; i++)
        out->shape[i] = g->nodes[id].shape[i];
    return SL_OK;
}

int sl_graph_find(const sl_graph *g, const char *name)
{
    for (size_t i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return (int)i;
    return SL_EINVAL;
}

size_t sl_graph_num_params(const sl_graph *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->nnodes; i++)
        n += g->nodes[i].op == SL__OP_PARAM;
    return n;
}

int sl_graph_param_at(const sl_graph *g, size_t k)
{
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == SL__OP_PARAM && k-- == 0)
            return (int)i;
    return SL_EINVAL;
}

float *sl_graph_param_data(sl_graph *g, int id, size_t *numel)
{
    if (!valid_id(g, id) || g->nodes[id].op != SL__OP_PARAM)
        return NULL;
    if (numel)
        *numel = g->nodes[id].numel;
    return g->nodes[id].data;
}
