/* program.h: a step lowered for a device: what exec/ hands a device to
 * load and run, and nothing of the graph it came from. The program is the
 * planned slot array (exec/plan.c, exec/fuse.c), each slot naming the
 * node it runs, that node's op, attributes and shape, its inputs (other
 * slots), where its value lives (arena offset, or bound from outside), its
 * scratch and fusions. A device loads a program (places its arena and
 * scratch in its own memory), the caller binds the input and parameter
 * slots to device memory, and the device runs ranges of slots with its
 * kernels: the cpu and sim devices with the compute team
 * (devices/cpu_program.c). A device of another kind (CUDA) would fill the
 * same three entries of its table with its own kernels. */
#ifndef SLUICE_DEVICES_PROGRAM_H
#define SLUICE_DEVICES_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "ops/nn/nn.h"
#include "sluice/graph.h"
#include "sluice/step.h"

#define SL__MAX_INPUTS 4

typedef enum sl__graph_op {
    SL__OP_INPUT = 0,
    SL__OP_PARAM,
    /* forward operators */
    SL__OP_CONV2D,
    SL__OP_MAX_POOL2D,
    SL__OP_RELU,
    SL__OP_DENSE,
    SL__OP_RESHAPE,     /* a view: shares its input's buffer */
    SL__OP_ADD,
    SL__OP_SOFTMAX_XENT,
    SL__OP_SOFTMAX_XENT_DENSE, /* labels float32 (N, C); attr.xent */
    SL__OP_ARGMAX,
    SL__OP_REDUCE_MEAN, /* the mean over trailing axes */
    /* made by autodiff; the inputs each reads, in order */
    SL__OP_CONV2D_DX,   /* dy, weight */
    SL__OP_CONV2D_DW,   /* dy, the conv (its saved columns), x */
    SL__OP_MAX_POOL2D_DX, /* dy, the pool (its saved argmax) */
    SL__OP_RELU_DX,     /* dy, the relu (its output) */
    SL__OP_DENSE_DX,    /* dy, weight */
    SL__OP_DENSE_DW,    /* dy, x */
    SL__OP_DENSE_DB,    /* dy */
    SL__OP_SOFTMAX_XENT_DX, /* the loss (its saved probabilities), labels */
    SL__OP_REDUCE_MEAN_DX, /* dy */
    SL__OP_SOFTMAX_XENT_DENSE_DX, /* the loss (its saved probabilities), labels */
    /* updates, made by the optimizer: no value, they write parameters */
    SL__OP_MOMENTUM,    /* param, grad, accumulator */
    SL__OP_SGD,         /* param, grad */
    SL__OP_COUNT
} sl__graph_op;

/* An op's attributes (which field: by the op). */
typedef union sl__op_attr {
    sl__conv2d_dims conv;   /* conv2d and its gradients */
    sl__pool2d_dims pool;   /* max_pool2d and its gradient */
    struct { float lr, momentum; } opt;
    struct { int mean; } xent;      /* softmax_xent_dense and its gradient */
} sl__op_attr;

/* What a device needs of a graph node to run it. */
typedef struct sl__prog_node {
    sl__graph_op op;
    const char *op_name;  /* "conv2d", for messages */
    const char *name;     /* the node's, for messages */
    int nin;
    sl_dtype dtype;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    size_t numel;
    sl__op_attr attr;
} sl__prog_node;

/* Where one node's value lives. */
typedef enum sl__storage {
    SL__STORE_NONE = 0, /* updates: no value */
    SL__STORE_INPUT,    /* bound at each run to the fed tensor */
    SL__STORE_PARAM,    /* the graph's persistent values */
    SL__STORE_ALIAS,    /* a reshape: its root's buffer */
    SL__STORE_TEMP      /* an arena slot (GRAPH) or a malloc'd block (PYNATIVE) */
} sl__storage;

/* GRAPH mode runs some pairs of nodes as one (sl__plan_fuse): the first
 * node's work moves into the second, which reads the first's inputs. */
typedef enum sl__fusion {
    SL__FUSED_NONE = 0,
    SL__FUSED_AWAY,          /* runs inside another slot: nothing to do */
    SL__FUSED_RELU_POOL,     /* max_pool2d reading the relu's input */
    SL__FUSED_RELU_POOL_DX,  /* relu_grad of a fused pool: from the pool's
                              * dout, argmax and output */
    SL__FUSED_CONV_RELU_POOL /* a fused relu + max_pool2d that also runs the
                              * conv2d before them, one sample at a time:
                              * reads the conv's input and weight */
} sl__fusion;

/* Samples a fused conv2d + relu + max_pool2d runs the conv on at once
 * (exec/fuse.c): LeNet's first conv's output of 8 samples is 150 KB. */
#define SL__CONV_POOL_CHUNK 8

typedef struct sl__slot {
    int node;            /* graph node id */
    sl__storage storage;
    int root;            /* ALIAS: the step index owning the buffer */
    size_t bytes;        /* TEMP: value (64-byte rounded) + aux */
    size_t value_bytes;  /* where the aux part starts */
    size_t scratch;      /* per-thread scratch bytes, 64-byte rounded */
    size_t offset;       /* GRAPH: value's place in the arena */
    size_t scratch_offset; /* GRAPH: scratch's place (nthreads of them) */
    int last_use;        /* step index of the last reader (or this one) */
    /* GRAPH: parameter updates that follow one another run as one job, one
     * pass over all their parameters (sl__plan_group_updates). */
    int group_first;     /* the group's first step index, or -1 */
    int group_last;      /* the group's last step index (on every member) */
    size_t group_offset; /* where this member's elements start in the group's
                          * units, rounded up to 16 so splits stay aligned */
    sl__fusion fused;
    int fused_with;      /* FUSED_*: the slot whose work this one took or gave */
    int argmax_unread;   /* a max_pool2d whose argmax (its aux) no slot reads:
                          * a forward-only step; it pools values alone */
    int in[SL__MAX_INPUTS]; /* step indices of the inputs */
    double ms;           /* time spent in this node */
} sl__slot;

/* A step lowered for a device. The arrays are the step's: the program
 * lives as long as the step. A device writes each slot's time (ms). */
typedef struct sl__program {
    sl_mode mode;             /* GRAPH: an arena planned once; PYNATIVE: values
                               * allocated as each node runs */
    const sl__prog_node *nodes; /* (graph nodes) by node id */
    sl__slot *slots;          /* (nslots) in the order they run */
    int nslots;
    size_t arena_bytes;       /* GRAPH: every TEMP value and scratch */
    size_t max_scratch;       /* PYNATIVE: the largest slot's per-thread scratch */
} sl__program;

/* A program loaded on a device: where each slot's value is during a run
 * (device memory), and what the last run found. The kind's own state
 * (cpu: arena, scratch, pool) is in impl. */
typedef struct sl__device_program {
    const sl__program *prog;
    void **ptr;               /* (nslots) each value's place; bind inputs and
                               * parameters here before running */
    int nthreads;             /* the threads it was loaded for (scratch) */
    void *impl;
    /* per run */
    int current;              /* the slot being run */
    long bad_label;           /* -1, or the sample whose label was out of range */
    int run_status;
    size_t peak_bytes;        /* PYNATIVE: most bytes held at once */
    /* Set by the caller: a slice per slot goes to trace (NULL: none), named
     * trace_names[slot], for batch trace_batch of epoch trace_epoch. */
    struct sl__track *trace;
    const char **trace_names;
    int64_t trace_epoch, trace_batch;
    sl__error err;
} sl__device_program;

#endif
