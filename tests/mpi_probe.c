/* mpi_probe.c: one rank's part of tests/mpi_test.sh's checks that need the
 * C API under mpirun: `mpi_probe MNIST_DIR stop|fail|none SINK` trains
 * LeNet5 across the ranks (its shard each) and, with stop or fail, makes
 * rank 0's step_end callback stop training (a positive return) or fail
 * (a negative one) at its third step. Each rank prints one line: "rank R:
 * rc RC steps N hash H" and, on an error, the message. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

typedef struct probe {
    const char *mode;
    int rank;
} probe;

static int at_step_end(void *self, const sl_train_info *info)
{
    probe *p = self;
    if (p->rank != 0 || info->global_step != 3)
        return 0;
    if (strcmp(p->mode, "fail") == 0) {
        sl_model_set_error(info->model, "the probe's callback failed on purpose");
        return -1;
    }
    return strcmp(p->mode, "stop") == 0 ? 1 : 0;
}

/* The seeds' preprocessing (label to int32, resize 32x32, rescale twice,
 * HWC2CHW), batch 16. */
static int lenet_pipeline(sl_dataset *ds)
{
    sl_op *op[5];
    int rc = SL_OK;
    memset(op, 0, sizeof op);
    if (sl_op_type_cast_new(&op[0], SL_INT32, NULL, 0) < 0 ||
        sl_op_resize_new(&op[1], 32, 32, SL_INTER_LINEAR, NULL, 0) < 0 ||
        sl_op_rescale_new(&op[2], 1.0 / 255.0, 0.0, NULL, 0) < 0 ||
        sl_op_rescale_new(&op[3], 1 / 0.3081, -1 * 0.1307 / 0.3081, NULL, 0) < 0 ||
        sl_op_hwc2chw_new(&op[4], NULL, 0) < 0)
        rc = SL_ENOMEM;
    if (rc == SL_OK)
        rc = sl_dataset_map(ds, &op[0], 1, "label", NULL, 1);
    if (rc == SL_OK)
        rc = sl_dataset_map(ds, &op[1], 4, "image", NULL, 1);
    if (rc == SL_OK)
        rc = sl_dataset_batch(ds, 16, 1, 1);
    for (int i = 0; i < 5; i++)
        if (op[i])
            sl_op_release(op[i]);
    return rc;
}

/* FNV-1a over the parameters: equal on every rank after data parallel steps. */
static uint64_t params_hash(sl_model *m)
{
    sl_graph *g = sl_model_graph(m);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sl_graph_num_params(g); i++) {
        size_t n = 0;
        const unsigned char *b =
            (const unsigned char *)sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        for (size_t k = 0; k < n * sizeof(float); k++)
            h = (h ^ b[k]) * 1099511628211ull;
    }
    return h;
}

int main(int argc, char **argv)
{
    char err[512];
    sl_mnist_options mo;
    sl_model_options opts;
    sl_train_options to;
    sl_dataset *ds = NULL;
    sl_model *m = NULL;
    sl_callback cb;
    sl_callback *cbs[1] = {&cb};
    probe p;
    int rc;

    if (argc != 4) {
        fprintf(stderr, "usage: mpi_probe MNIST_DIR stop|fail|none SINK(0|1)\n");
        return 2;
    }
    if (sl_distributed_init(err, sizeof err) < 0) {
        fprintf(stderr, "mpi_probe: %s\n", err);
        return 1;
    }
    p.mode = argv[2];
    p.rank = sl_distributed_rank();
    sl_mnist_options_init(&mo);
    mo.dataset_dir = argv[1];
    mo.usage = SL_MNIST_TRAIN;
    mo.sampler.num_shards = sl_distributed_size();
    mo.sampler.shard_id = p.rank;
    rc = sl_dataset_new(&ds);
    if (rc == SL_OK)
        rc = sl_dataset_mnist(ds, &mo);
    if (rc == SL_OK)
        rc = lenet_pipeline(ds);
    if (rc < 0) {
        fprintf(stderr, "mpi_probe: rank %d: dataset: %s\n", p.rank,
                ds ? sl_dataset_last_error(ds) : sl_strerror(rc));
        sl_dataset_free(ds);
        sl_distributed_finalize(1);
        return 1;
    }
    sl_model_options_init(&opts);
    opts.network.batch = 16;
    opts.context.threads = 1;
    rc = sl_model_new(&m, &opts, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "mpi_probe: rank %d: %s\n", p.rank, err);
        sl_dataset_free(ds);
        sl_distributed_finalize(1);
        return 1;
    }
    memset(&cb, 0, sizeof cb);
    cb.self = &p;
    cb.step_end = at_step_end;
    sl_train_options_init(&to);
    to.distributed = 1;
    to.dataset_sink_mode = atoi(argv[3]);
    to.sink_size = to.dataset_sink_mode ? 1 : -1; /* a step_end each step */
    /* sink: 20 sinks of one step; non-sink: 2 epochs of 10 steps */
    rc = sl_model_train_opts(m, to.dataset_sink_mode ? 20 : 2, ds, cbs, 1, &to);
    printf("rank %d: rc %d steps %" PRId64 " hash %016" PRIx64 "\n", p.rank, rc,
           sl_model_global_step(m), params_hash(m));
    if (rc < 0)
        printf("rank %d: error: %s\n", p.rank, sl_model_last_error(m));
    fflush(stdout);
    sl_model_free(m);
    sl_dataset_free(ds);
    sl_distributed_finalize(rc < 0);
    return rc < 0 ? 1 : 0;
}
