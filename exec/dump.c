/* dump.c: a compiled step as text (.ir) and as a Graphviz graph (.dot), as
 * MindSpore's save_graphs writes them. The .ir lists the nodes in run
 * order with their inputs, shapes, and where each value lives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "exec/model_impl.h"
#include "exec/step_impl.h"

static const char *storage_name(sl__storage st)
{
    switch (st) {
    case SL__STORE_NONE: return "update";
    case SL__STORE_INPUT: return "fed";
    case SL__STORE_PARAM: return "param";
    case SL__STORE_ALIAS: return "view";
    case SL__STORE_TEMP: return "temp";
    }
    return "?";
}

static void write_ir(FILE *f, const sl_step *s, const char *name)
{
    char shape[96];
    fprintf(f, "# sluice step '%s': %s mode, %d thread%s, %d nodes\n", name,
            s->mode == SL_GRAPH_MODE ? "GRAPH" : "PYNATIVE", s->ex->team.nthreads,
            s->ex->team.nthreads == 1 ? "" : "s", s->nslots);
    if (s->mode == SL_GRAPH_MODE)
        fprintf(f, "# arena: %zu bytes; [offset, end) per temporary value\n", s->arena_bytes);
    else
        fprintf(f, "# values are allocated as each node runs and freed after its last reader\n");
    for (int j = 0; j < s->nslots; j++) {
        const sl__slot *sl = &s->slots[j];
        const sl__graph_node *n = &s->g->nodes[sl->node];
        if (sl->fused == SL__FUSED_AWAY) {
            fprintf(f, "# %%%d = %s \"%s\": runs in %%%d\n", j, sl__graph_op_name(n->op), n->name,
                    sl->fused_with);
            continue;
        }
        fprintf(f, "%%%d = %s \"%s\"(", j,
                sl->fused != SL__FUSED_NONE ? sl__slot_op_name(s, j) : sl__graph_op_name(n->op),
                n->name);
        for (int k = 0; k < sl__slot_num_inputs(s, j); k++)
            fprintf(f, "%s%%%d", k ? ", " : "", sl->in[k]);
        fprintf(f, ")");
        if (n->op == SL__OP_CONV2D || n->op == SL__OP_CONV2D_DX || n->op == SL__OP_CONV2D_DW)
            fprintf(f, " {stride=%zu, pad=%zu}", n->attr.conv.stride, n->attr.conv.pad);
        if (n->op == SL__OP_MAX_POOL2D || n->op == SL__OP_MAX_POOL2D_DX)
            fprintf(f, " {kernel=%zu, stride=%zu}", n->attr.pool.k, n->attr.pool.stride);
        if (sl__graph_op_is_update(n->op)) {
            fprintf(f, " {lr=%g, momentum=%g}", (double)n->attr.opt.lr,
                    (double)n->attr.opt.momentum);
            if (sl->group_first >= 0)
                fprintf(f, "  # one pass over %%%d..%%%d", sl->group_first, sl->group_last);
            fprintf(f, "\n");
            continue;
        }
        fprintf(f, " : %s %s", sl_dtype_name(n->dtype),
                sl__graph_node_shape_str(n, shape, sizeof shape));
        fprintf(f, "  # %s", storage_name(sl->storage));
        if (sl->storage == SL__STORE_TEMP && s->mode == SL_GRAPH_MODE)
            fprintf(f, " [%zu, %zu)", sl->offset, sl->offset + sl->bytes);
        if (sl->storage == SL__STORE_ALIAS)
            fprintf(f, " of %%%d", sl->root);
        if (sl->storage == SL__STORE_TEMP)
            fprintf(f, ", last read by %%%d", sl->last_use < s->nslots ? sl->last_use : j);
        if (sl->storage == SL__STORE_TEMP && sl->last_use >= s->nslots)
            fprintf(f, " (output)");
        fprintf(f, "\n");
    }
}

static void write_dot(FILE *f, const sl_step *s, const char *name)
{
    char shape[96];
    fprintf(f, "digraph \"%s\" {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n",
            name);
    for (int j = 0; j < s->nslots; j++) {
        const sl__slot *sl = &s->slots[j];
        const sl__graph_node *n = &s->g->nodes[sl->node];
        const char *style = sl->storage == SL__STORE_PARAM   ? "shape=box, style=filled, fillcolor=lightyellow"
                            : sl->storage == SL__STORE_INPUT ? "shape=ellipse, style=filled, fillcolor=lightblue"
                            : sl->storage == SL__STORE_NONE  ? "shape=box, style=dashed"
                                                             : "shape=box, style=rounded";
        fprintf(f, "  n%d [%s, label=\"%s\\n%s\\n%s\"];\n", j, style, n->name,
                sl__graph_op_name(n->op),
                sl__graph_op_is_update(n->op) ? "" : sl__graph_node_shape_str(n, shape, sizeof shape));
        for (int k = 0; k < n->nin; k++)
            fprintf(f, "  n%d -> n%d;\n", sl->in[k], j);
    }
    fprintf(f, "}\n");
}

int sl__dump_step(const sl_step *s, const char *dir, const char *name, sl__error *err)
{
    size_t len = strlen(dir) + strlen(name) + 8;
    char *path = malloc(len);
    int rc = SL_OK;
    if (!path)
        return sl__errf(err, SL_ENOMEM, "save_graphs: out of memory");
    rc = sl__make_dirs(dir, err);
    for (int kind = 0; kind < 2 && rc == SL_OK; kind++) {
        sl__atomic_file af;
        snprintf(path, len, "%s/%s.%s", dir, name, kind == 0 ? "ir" : "dot");
        rc = sl__atomic_open(&af, path, err);
        if (rc < 0)
            break;
        if (kind == 0)
            write_ir(af.f, s, name);
        else
            write_dot(af.f, s, name);
        rc = sl__atomic_close(&af, 0, err);
    }
    if (rc < 0)
        sl__err_prefix(err, "save_graphs: ");
    free(path);
    return rc;
}
