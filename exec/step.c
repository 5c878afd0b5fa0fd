/* step.c: compiling and running a step (see step.h). A run binds the fed
 * inputs, then, on the executor's thread, runs each node with the whole
 * team and checks what can fail at run time (labels, NaN is the model's). */
#include "exec/step_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/tensor_impl.h"

/* A posted run not yet waited for is waited for before the step is used
 * again: its inputs are bound in the device program until it has run. */
static void finish_posted(sl_step *s)
{
    if (s->posted) {
        sl__executor_wait(s->ex, s->ticket, -1);
        s->posted = 0;
    }
}

void sl_step_free(sl_step *s)
{
    if (!s)
        return;
    finish_posted(s);
    if (s->dp)
        sl__device_program_free(s->dev, s->dp);
    if (s->own_dev)
        sl_device_free(s->dev);
    free(s->nodes);
    free(s->slots);
    free(s->node_slot);
    free(s->inputs);
    free(s->outputs);
    free(s->trace_names);
    free(s);
}

int sl__step_trace(sl_step *s, sl_profiler *p, sl__track *track, int64_t epoch, int64_t batch)
{
    s->dp->trace = NULL;
    if (!p)
        s->trace_owner = NULL; /* its names die with it: intern anew next time */
    if (!track)
        return SL_OK;
    if (s->trace_owner != p) {
        const char **names = realloc(s->trace_names, (size_t)s->nslots * sizeof *names);
        if (!names)
            return SL_ENOMEM;
        s->trace_names = names;
        for (int j = 0; j < s->nslots; j++)
            names[j] = sl__trace_intern(p, sl__slot_op_name(s, j));
        s->trace_owner = p;
    }
    s->dp->trace_names = s->trace_names;
    s->dp->trace = track;
    s->dp->trace_epoch = epoch;
    s->dp->trace_batch = batch;
    return SL_OK;
}

/* What the device needs of each graph node (the program's nodes). */
static int lower_nodes(sl_step *s)
{
    const sl_graph *g = s->g;
    s->nodes = calloc(g->nnodes + 1, sizeof *s->nodes);
    if (!s->nodes)
        return SL_ENOMEM;
    for (size_t i = 0; i < g->nnodes; i++) {
        const sl__graph_node *gn = &g->nodes[i];
        sl__prog_node *pn = &s->nodes[i];
        pn->op = gn->op;
        pn->op_name = sl__graph_op_name(gn->op);
        pn->name = gn->name;
        pn->nin = gn->nin;
        pn->dtype = gn->dtype;
        pn->ndim = gn->ndim;
        for (int d = 0; d < gn->ndim; d++)
            pn->shape[d] = gn->shape[d];
        pn->numel = gn->numel;
        pn->attr = gn->attr;
    }
    return SL_OK;
}

int sl__step_new_on(sl_step **out, sl_graph *g, sl_executor *ex, sl_device *dev, sl_mode mode,
                    const int *outputs, size_t noutputs, int train)
{
    sl_step *s;
    int rc;

    *out = NULL;
    if (mode != SL_GRAPH_MODE && mode != SL_PYNATIVE_MODE)
        return sl__errf(&g->err, SL_EINVAL, "compile: unknown mode %d", (int)mode);
    if (noutputs == 0 && !train)
        return sl__errf(&g->err, SL_EINVAL, "compile: a step needs an output or updates");
    s = calloc(1, sizeof *s);
    if (!s)
        return sl__errf(&g->err, SL_ENOMEM, "compile: out of memory");
    s->g = g;
    s->ex = ex;
    s->dev = dev;
    s->mode = mode;
    s->train = train;
    rc = sl__plan_select(s, outputs, noutputs, train);
    if (rc == SL_OK && mode == SL_GRAPH_MODE) {
        sl__plan_group_updates(s);
        rc = sl__plan_arena(s);
    }
    if (rc == SL_OK && lower_nodes(s) < 0)
        rc = sl__errf(&g->err, SL_ENOMEM, "compile: out of memory");
    if (rc == SL_OK) {
        /* the program: the plan, for the device to load */
        s->prog.mode = mode;
        s->prog.nodes = s->nodes;
        s->prog.slots = s->slots;
        s->prog.nslots = s->nslots;
        s->prog.arena_bytes = s->arena_bytes;
        for (int j = 0; j < s->nslots; j++)
            if (s->slots[j].scratch > s->prog.max_scratch)
                s->prog.max_scratch = s->slots[j].scratch;
        rc = sl__device_program_load(dev, &s->prog, ex->team.nthreads, &s->dp, &g->err);
        if (rc < 0)
            sl__err_prefix(&g->err, "compile: ");
    }
    if (rc < 0) {
        sl_step_free(s);
        return rc;
    }
    s->run_begin = 0;
    s->run_end = s->nslots;
    s->update_from = s->nslots;
    for (int j = 0; j < s->nslots; j++)
        if (sl__graph_op_is_update(g->nodes[s->slots[j].node].op)) {
            s->update_from = j;
            break;
        }
    /* Parameters live in the graph's memory (the host's: cpu and sim read
     * it); a replica binds its own copies (sl__step_bind_params). */
    for (int j = 0; j < s->nslots; j++)
        if (s->slots[j].storage == SL__STORE_PARAM)
            s->dp->ptr[j] = g->nodes[s->slots[j].node].data;
    *out = s;
    return SL_OK;
}

int sl_step_new(sl_step **out, sl_graph *g, sl_executor *ex, sl_mode mode, const int *outputs,
                size_t noutputs, int train)
{
    sl_device *dev;
    char err[SL_ERRMSG_LEN];
    int rc;
    /* A step made without a device runs on the host's cpu, a device of its own. */
    *out = NULL;
    rc = sl_device_new(&dev, "cpu:0", NULL, err, sizeof err);
    if (rc < 0)
        return sl__errf(&g->err, rc, "compile: %s", err);
    rc = sl__step_new_on(out, g, ex, dev, mode, outputs, noutputs, train);
    if (rc < 0) {
        sl_device_free(dev);
        return rc;
    }
    (*out)->own_dev = 1;
    return SL_OK;
}

const char *sl_step_last_error(const sl_step *s)
{
    return s->err.msg;
}

size_t sl_step_num_inputs(const sl_step *s)
{
    return s->ninputs;
}

int sl_step_input_node(const sl_step *s, size_t i)
{
    return i < s->ninputs ? s->slots[s->inputs[i]].node : SL_EINVAL;
}

/* The first node of the step that reads slot j, for messages. */
static const sl__graph_node *first_reader(const sl_step *s, int j)
{
    for (int k = j + 1; k < s->nslots; k++)
        for (int i = 0; i < s->g->nodes[s->slots[k].node].nin; i++)
            if (s->slots[k].in[i] == j)
                return &s->g->nodes[s->slots[k].node];
    return NULL;
}

static int bind_inputs(sl_step *s, sl_tensor *const *inputs, size_t ninputs)
{
    if (ninputs != s->ninputs)
        return sl__errf(&s->err, SL_EINVAL, "run: %zu inputs given, the step reads %zu",
                        ninputs, s->ninputs);
    for (size_t i = 0; i < ninputs; i++) {
        int j = s->inputs[i];
        const sl__graph_node *nd = &s->g->nodes[s->slots[j].node];
        const sl_tensor *t = inputs[i];
        char want[96], got[96];
        if (!t)
            return sl__errf(&s->err, SL_EINVAL, "run: input '%s' is NULL", nd->name);
        if (t->dtype != nd->dtype ||
            !sl__shape_equal(t->ndim, t->shape, nd->ndim, nd->shape)) {
            const sl__graph_node *r = first_reader(s, j);
            sl_shape_str(got, sizeof got, t->ndim, t->shape);
            sl__graph_node_shape_str(nd, want, sizeof want);
            return sl__errf(&s->err, SL_ESHAPE,
                            "%s%s%s%s: input '%s' is %s %s, expected %s %s",
                            r ? sl__graph_op_name(r->op) : "run", r ? " '" : "", r ? r->name : "",
                            r ? "'" : "", nd->name, sl_dtype_name(t->dtype), got,
                            sl_dtype_name(nd->dtype), want);
        }
        s->dp->ptr[j] = t->data;
    }
    return SL_OK;
}

/* Runs on the executor's thread (or a caller's, with the executor's team):
 * the device runs the program's slots. */
static void run_job(void *arg)
{
    sl_step *s = arg;
    s->run_status = sl__device_program_run(s->dev, s->dp, &s->ex->team, s->run_begin, s->run_end);
    if (s->run_status < 0)
        sl__err_copy(&s->err, &s->dp->err);
}

void sl__step_bind_params(sl_step *s, float *const *values)
{
    for (int j = 0; j < s->nslots; j++)
        if (s->slots[j].storage == SL__STORE_PARAM)
            s->dp->ptr[j] = values[s->slots[j].node];
}

size_t sl__update_numel(const sl_step *s, int j)
{
    return s->g->nodes[s->slots[s->slots[j].in[0]].node].numel;
}

int sl__step_update_grad(const sl_step *s, int j)
{
    return s->slots[j].in[1];
}

int sl__step_run_slots(sl_step *s, sl_tensor *const *inputs, size_t ninputs, int begin, int end)
{
    int rc;
    finish_posted(s);
    if (inputs) {
        rc = bind_inputs(s, inputs, ninputs);
        if (rc < 0)
            return rc;
    }
    s->run_begin = begin;
    s->run_end = end;
    sl__executor_call_here(s->ex, run_job, s);
    s->run_begin = 0;
    s->run_end = s->nslots;
    return s->run_status;
}

int sl_step_run(sl_step *s, sl_tensor *const *inputs, size_t ninputs)
{
    int rc;
    finish_posted(s);
    rc = bind_inputs(s, inputs, ninputs);
    if (rc < 0)
        return rc;
    sl__executor_call(s->ex, run_job, s);
    return s->run_status;
}

int sl_step_run_here(sl_step *s, sl_tensor *const *inputs, size_t ninputs)
{
    int rc;
    finish_posted(s);
    rc = bind_inputs(s, inputs, ninputs);
    if (rc < 0)
        return rc;
    sl__executor_call_here(s->ex, run_job, s);
    return s->run_status;
}

int sl_step_post(sl_step *s, sl_tensor *const *inputs, size_t ninputs)
{
    int rc;
    finish_posted(s);
    rc = bind_inputs(s, inputs, ninputs);
    if (rc < 0)
        return rc;
    if (sl__executor_on_own_thread(s->ex)) {
        /* Posting to ourselves would wait on ourselves: run it now, and
         * let sl_step_wait return its status. */
        run_job(s);
        s->ticket = 0;
    } else {
        rc = sl__executor_post(s->ex, run_job, s, &s->ticket);
        if (rc < 0)
            return sl__errf(&s->err, rc, "post: the executor is shutting down");
    }
    s->posted = 1;
    return SL_OK;
}

int sl_step_wait(sl_step *s, int timeout_ms)
{
    int rc;
    if (!s->posted)
        return sl__errf(&s->err, SL_ESTATE, "wait: no run of the step was posted");
    rc = sl__executor_wait(s->ex, s->ticket, timeout_ms);
    if (rc < 0)
        return sl__errf(&s->err, rc, "wait: the step still runs after %d ms", timeout_ms);
    s->posted = 0;
    return s->run_status;
}

const void *sl_step_output(const sl_step *s, size_t k, sl_tensor_spec *spec)
{
    const sl__graph_node *nd;
    if (k >= s->noutputs)
        return NULL;
    nd = &s->g->nodes[s->slots[s->outputs[k]].node];
    if (spec) {
        spec->dtype = nd->dtype;
        spec->ndim = nd->ndim;
        for (int i = 0; i < nd->ndim; i++)
            spec->shape[i] = nd->shape[i];
    }
    return s->dp->ptr[s->outputs[k]];
}

size_t sl_step_memory_bytes(const sl_step *s)
{
    return s->mode == SL_GRAPH_MODE ? s->arena_bytes : s->dp->peak_bytes;
}

size_t sl_step_num_nodes(const sl_step *s)
{
    return (size_t)s->nslots;
}

int sl_step_node_time(const sl_step *s, size_t i, const char **name, const char **op,
                      double *ms)
{
    const sl__graph_node *nd;
    if (i >= (size_t)s->nslots)
        return SL_EINVAL;
    nd = &s->g->nodes[s->slots[i].node];
    if (name)
        *name = nd->name;
    if (op)
        *op = sl__slot_op_name(s, (int)i);
    if (ms)
        *ms = s->slots[i].ms;
    return SL_OK;
}

/* Floating-point operations of one run of node nd (0: not counted). */
static double node_flops(const sl_step *s, const sl__graph_node *nd)
{
    const sl__graph_node *in0 = nd->nin > 0 ? &s->g->nodes[nd->in[0]] : NULL;
    const sl__conv2d_dims *c = &nd->attr.conv;
    switch (nd->op) {
    case SL__OP_CONV2D:
    case SL__OP_CONV2D_DX:
    case SL__OP_CONV2D_DW: /* each is one (N*OH*OW) x (C*KH*KW) x OC product */
        return 2.0 * (double)(c->n * c->oh * c->ow) * (double)(c->c * c->kh * c->kw) *
               (double)c->oc;
    case SL__OP_DENSE: /* y (N, out) = x (N, in) W */
        return 2.0 * (double)nd->numel * (double)in0->shape[1];
    case SL__OP_DENSE_DX: /* dx (N, in) = dy (N, out) W^T */
        return 2.0 * (double)nd->numel * (double)in0->shape[1];
    case SL__OP_DENSE_DW: /* dW (in x out) = x^T dy (N, out) */
        return 2.0 * (double)nd->numel * (double)in0->shape[0];
    default:
        return 0.0;
    }
}

double sl_step_node_flops(const sl_step *s, size_t i)
{
    const sl__slot *sl;
    if (i >= (size_t)s->nslots)
        return 0.0;
    sl = &s->slots[i];
    /* a fused conv's work is counted where it runs (exec/fuse.c) */
    if (sl->fused == SL__FUSED_AWAY)
        return 0.0;
    if (sl->fused == SL__FUSED_CONV_RELU_POOL)
        return node_flops(s, &s->g->nodes[s->slots[sl->fused_with].node]);
    return node_flops(s, &s->g->nodes[sl->node]);
}

void sl_step_reset_times(sl_step *s)
{
    for (int j = 0; j < s->nslots; j++)
        s->slots[j].ms = 0.0;
}
