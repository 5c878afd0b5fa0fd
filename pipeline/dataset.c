/* dataset.c: building dataset descriptions: sources, nodes, schemas and
 * sizes. Nothing here runs a pipeline (see iterator.c). */
#include "pipeline/dataset_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_impl.h"
#include "pipeline/batch_map.h"
#include "pipeline/sampler.h"

void sl__source_retain(sl__source *src)
{
    atomic_fetch_add_explicit(&src->refs, 1, memory_order_relaxed);
}

void sl__source_release(sl__source *src)
{
    if (!src || atomic_fetch_sub_explicit(&src->refs, 1, memory_order_acq_rel) != 1)
        return;
    src->iface->destroy(src);
    free(src);
}

int sl_dataset_new(sl_dataset **out)
{
    sl_dataset *ds = calloc(1, sizeof *ds);
    *out = NULL;
    if (!ds)
        return SL_ENOMEM;
    if (!(ds->pool = sl__pool_new())) {
        free(ds);
        return SL_ENOMEM;
    }
    sl_error_samples_options_init(&ds->error_samples);
    *out = ds;
    return SL_OK;
}

_Static_assert(SL_POOL_IDLE_LIMIT_DEFAULT == SL__POOL_IDLE_AUTO,
               "the public default idle limit is the pool's own");

void sl_dataset_set_pool_idle_limit(sl_dataset *ds, size_t bytes)
{
    sl__pool_set_idle_limit(ds->pool, bytes);
}

void sl__pool_stats_public(const sl_pool *pool, sl_pool_stats *out)
{
    sl__pool_stats s;
    sl__pool_get_stats(pool, &s);
    out->in_use_bytes = s.in_use;
    out->idle_bytes = s.idle;
    out->peak_in_use_bytes = s.peak_in_use;
    out->idle_cap_bytes = s.idle_cap;
    out->system_allocs = s.system_allocs;
    out->system_frees = s.system_frees;
    out->cap_frees = s.cap_frees;
}

void sl_dataset_get_pool_stats(const sl_dataset *ds, sl_pool_stats *out)
{
    sl__pool_stats_public(ds->pool, out);
}

int sl_dataset_copy(sl_dataset **out, const sl_dataset *src)
{
    sl_dataset *ds;
    *out = NULL;
    if (sl_dataset_new(&ds) != SL_OK)
        return SL_ENOMEM;
    if (src->nnodes > 0 && sl__nodes_copy(&ds->nodes, src->nodes, src->nnodes) != SL_OK) {
        sl_dataset_free(ds);
        return SL_ENOMEM;
    }
    ds->nnodes = ds->cap = src->nnodes;
    ds->source = src->source;
    if (ds->source)
        sl__source_retain(ds->source);
    ds->seed = src->seed;
    ds->decode_budget = src->decode_budget;
    ds->decode_fusion = src->decode_fusion;
    ds->error_samples = src->error_samples;
    ds->schema = src->schema;
    sl_dataset_set_pool_idle_limit(ds, sl__pool_idle_limit(src->pool));
    *out = ds;
    return SL_OK;
}

void sl__nodes_free(sl__node *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < nodes[i].nops; k++)
            sl_op_release(nodes[i].ops[k]);
        free(nodes[i].ops);
        sl__batch_map_release(nodes[i].batch_map);
    }
    free(nodes);
}

int sl__nodes_copy(sl__node **out, const sl__node *nodes, size_t n)
{
    sl__node *copy = calloc(n ? n : 1, sizeof *copy);
    if (!copy)
        return SL_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        copy[i] = nodes[i];
        copy[i].ops = NULL;
        copy[i].nops = 0;
        if (copy[i].batch_map)
            sl__batch_map_retain(copy[i].batch_map);
        if (nodes[i].nops) {
            copy[i].ops = malloc(nodes[i].nops * sizeof *copy[i].ops);
            if (!copy[i].ops) {
                sl__nodes_free(copy, i);
                return SL_ENOMEM;
            }
            for (size_t k = 0; k < nodes[i].nops; k++)
                copy[i].ops[k] = sl_op_retain(nodes[i].ops[k]);
            copy[i].nops = nodes[i].nops;
        }
    }
    *out = copy;
    return SL_OK;
}

static void drop_nodes(sl_dataset *ds)
{
    sl__nodes_free(ds->nodes, ds->nnodes);
    ds->nodes = NULL;
    ds->nnodes = ds->cap = 0;
}

void sl_dataset_free(sl_dataset *ds)
{
    if (!ds)
        return;
    drop_nodes(ds);
    sl__source_release(ds->source);
    sl__pool_release(ds->pool);
    free(ds);
}

const char *sl_dataset_last_error(const sl_dataset *ds)
{
    return ds->error.msg;
}

void sl_dataset_set_seed(sl_dataset *ds, uint64_t seed)
{
    ds->seed = seed;
}

uint64_t sl_dataset_get_seed(const sl_dataset *ds)
{
    return ds->seed;
}

void sl_dataset_set_decode_budget(sl_dataset *ds, uint64_t bytes)
{
    ds->decode_budget = bytes;
}

void sl_dataset_set_decode_fusion(sl_dataset *ds, int mode)
{
    /* stored off by one, so that a zeroed dataset fuses crops (the default) */
    ds->decode_fusion = (mode < SL_DECODE_FUSION_OFF || mode > SL_DECODE_FUSION_SCALED
                             ? SL_DECODE_FUSION_CROP
                             : mode) - SL_DECODE_FUSION_CROP;
}

static void set_source(sl_dataset *ds, sl__source *src)
{
    drop_nodes(ds);
    sl__source_release(ds->source);
    ds->source = src;
    ds->schema.ncols = src->ncols;
    memcpy(ds->schema.names, src->names, sizeof ds->schema.names);
    memcpy(ds->schema.specs, src->specs, sizeof ds->schema.specs);
    sl__err_clear(&ds->error);
}

void sl__dataset_replace_source(sl_dataset *ds, sl__source *src)
{
    sl__source_release(ds->source);
    ds->source = src;
}

int sl_dataset_mnist(sl_dataset *ds, const sl_mnist_options *user)
{
    sl_mnist_options o;
    sl__source *src;
    int rc = sl__mnist_options_read(&o, user, &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "MnistDataset: ");
        return rc;
    }
    rc = sl__mnist_source_new(&src, &o, &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "MnistDataset(%s): ", o.dataset_dir ? o.dataset_dir : "?");
        return rc;
    }
    set_source(ds, src);
    return SL_OK;
}

static int dataset_cifar(sl_dataset *ds, const sl_cifar_options *user, int hundred)
{
    const char *name = hundred ? "Cifar100Dataset" : "Cifar10Dataset";
    sl_cifar_options o;
    sl__source *src;
    int rc = sl__cifar_options_read(&o, user, &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "%s: ", name);
        return rc;
    }
    rc = sl__cifar_source_new(&src, hundred, &o, &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "%s(%s): ", name, o.dataset_dir ? o.dataset_dir : "?");
        return rc;
    }
    set_source(ds, src);
    return SL_OK;
}

int sl_dataset_cifar10(sl_dataset *ds, const sl_cifar_options *o)
{
    return dataset_cifar(ds, o, 0);
}

int sl_dataset_cifar100(sl_dataset *ds, const sl_cifar_options *o)
{
    return dataset_cifar(ds, o, 1);
}

int sl_dataset_slices(sl_dataset *ds, const sl_slices_options *user)
{
    sl_slices_options o;
    sl__source *src;
    int rc = sl__slices_options_read(&o, user, &ds->error);
    if (rc == SL_OK)
        rc = sl__slices_source_new(&src, &o, &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "slices: ");
        return rc;
    }
    set_source(ds, src);
    return SL_OK;
}

int sl_dataset_generator(sl_dataset *ds, const sl_generator_options *user)
{
    sl_generator_options o;
    sl__source *src;
    int rc = sl__generator_options_read(&o, user, &ds->error);
    if (rc == SL_OK)
        rc = sl__generator_source_new(&src, &o, &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "generator: ");
        return rc;
    }
    set_source(ds, src);
    return SL_OK;
}

static int need_source(sl_dataset *ds, const char *what)
{
    if (!ds->source)
        return sl__errf(&ds->error, SL_ESTATE, "%s: the dataset has no source yet", what);
    return SL_OK;
}

static int append_node(sl_dataset *ds, const sl__node *node)
{
    if (ds->nnodes == ds->cap) {
        size_t cap = ds->cap ? ds->cap * 2 : 8;
        sl__node *nodes = realloc(ds->nodes, cap * sizeof *nodes);
        if (!nodes)
            return sl__errf(&ds->error, SL_ENOMEM, "dataset: out of memory");
        ds->nodes = nodes;
        ds->cap = cap;
    }
    ds->nodes[ds->nnodes] = *node;
    ds->nodes[ds->nnodes].position = ds->nnodes;
    ds->nnodes++;
    sl__err_clear(&ds->error);
    return SL_OK;
}

int sl__dataset_append(sl_dataset *ds, const char *what, const sl__node *node)
{
    int rc = need_source(ds, what);
    return rc != SL_OK ? rc : append_node(ds, node);
}

void sl__dataset_set_source(sl_dataset *ds, sl__source *src)
{
    set_source(ds, src);
}

static int after_batch(const sl_dataset *ds)
{
    for (size_t i = 0; i < ds->nnodes; i++)
        if (ds->nodes[i].kind == SL__NODE_BATCH)
            return 1;
    return 0;
}

int sl_dataset_column_index(const sl_dataset *ds, const char *name)
{
    for (size_t i = 0; i < ds->schema.ncols; i++)
        if (strcmp(ds->schema.names[i], name) == 0)
            return (int)i;
    return -1;
}

static void column_list(const sl_dataset *ds, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ds->schema.ncols && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s'%s'", i ? ", " : "",
                                 ds->schema.names[i]);
}

int sl_dataset_map(sl_dataset *ds, sl_op *const *ops, size_t nops, const char *input_column,
                   const char *output_column, int num_parallel_workers)
{
    sl__node node = {.kind = SL__NODE_MAP};
    sl_tensor_spec spec;
    char cols[256];
    int col, rc = need_source(ds, "map");
    if (rc != SL_OK)
        return rc;
    if (!ops || nops == 0)
        return sl__errf(&ds->error, SL_EINVAL, "map: no operations given");
    if (!input_column)
        return sl__errf(&ds->error, SL_EINVAL, "map: no input column given");
    if (num_parallel_workers < 1 || num_parallel_workers > 256)
        return sl__errf(&ds->error, SL_EINVAL, "map: num_parallel_workers must be in [1, 256], got %d",
                        num_parallel_workers);
    col = sl_dataset_column_index(ds, input_column);
    if (col < 0) {
        column_list(ds, cols, sizeof cols);
        return sl__errf(&ds->error, SL_EINVAL, "map: no column '%s' (the columns are %s)",
                        input_column, cols);
    }
    if (output_column) {
        int other = sl_dataset_column_index(ds, output_column);
        if (strlen(output_column) == 0 || strlen(output_column) >= SL_COLUMN_NAME_LEN)
            return sl__errf(&ds->error, SL_EINVAL, "map: output column name must have 1 to %d characters",
                            SL_COLUMN_NAME_LEN - 1);
        if (other >= 0 && other != col)
            return sl__errf(&ds->error, SL_EINVAL, "map: output column '%s' already exists",
                            output_column);
    }
    /* Check the ops against the column now, so a wrong pipeline is refused
     * before anything runs. */
    spec = ds->schema.specs[col];
    for (size_t k = 0; k < nops; k++) {
        sl_tensor_spec next;
        if (!ops[k])
            return sl__errf(&ds->error, SL_EINVAL, "map: operation %zu is NULL", k);
        rc = sl__op_infer(ops[k], &spec, &next, &ds->error);
        if (rc != SL_OK) {
            sl__err_prefix(&ds->error, "map on column '%s': ", input_column);
            return rc;
        }
        spec = next;
    }
    node.ops = malloc(nops * sizeof *node.ops);
    if (!node.ops)
        return sl__errf(&ds->error, SL_ENOMEM, "map: out of memory");
    for (size_t k = 0; k < nops; k++)
        node.ops[k] = sl_op_retain(ops[k]);
    node.nops = nops;
    node.column = col;
    snprintf(node.colname, sizeof node.colname, "%s", input_column);
    snprintf(node.outname, sizeof node.outname, "%s", output_column ? output_column : input_column);
    node.workers = num_parallel_workers;
    node.after_batch = after_batch(ds);
    rc = append_node(ds, &node);
    if (rc != SL_OK) {
        for (size_t k = 0; k < nops; k++)
            sl_op_release(node.ops[k]);
        free(node.ops);
        return rc;
    }
    ds->schema.specs[col] = spec;
    if (output_column)
        snprintf(ds->schema.names[col], SL_COLUMN_NAME_LEN, "%s", output_column);
    return SL_OK;
}

int sl_dataset_image_folder(sl_dataset *ds, const sl_image_folder_options *user)
{
    sl_image_folder_options opts;
    const sl_image_folder_options *o = &opts;
    sl__source *src;
    sl_op *decode;
    int rc = sl__image_folder_options_read(&opts, user, &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "ImageFolderDataset: ");
        return rc;
    }
    if (o->decode && (o->num_parallel_workers < 1 || o->num_parallel_workers > 256))
        return sl__errf(&ds->error, SL_EINVAL,
                        "ImageFolderDataset: num_parallel_workers must be in [1, 256], got %d",
                        o->num_parallel_workers);
    if (o->decode &&
        (o->decode_max_pixels < 1 || o->decode_max_pixels > SL_DECODE_MAX_PIXELS_LIMIT))
        return sl__errf(&ds->error, SL_EINVAL,
                        "ImageFolderDataset: decode_max_pixels must be in [1, %llu], got %llu",
                        (unsigned long long)SL_DECODE_MAX_PIXELS_LIMIT,
                        (unsigned long long)o->decode_max_pixels);
    rc = sl__image_folder_source_new(&src, o, &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "ImageFolderDataset(%s): ",
                       o->dataset_dir ? o->dataset_dir : "?");
        return rc;
    }
    set_source(ds, src);
    if (!o->decode)
        return SL_OK;
    /* Decoding runs as a map right after the source, in parallel workers. */
    rc = sl_op_decode_new_limited(&decode, 1, o->decode_max_pixels, ds->error.msg,
                                  sizeof ds->error.msg);
    if (rc != SL_OK) {
        ds->error.status = rc;
        sl__err_prefix(&ds->error, "ImageFolderDataset: ");
        return rc;
    }
    rc = sl_dataset_map(ds, &decode, 1, "image", NULL, o->num_parallel_workers);
    sl_op_release(decode);
    return rc;
}

int sl_dataset_shuffle(sl_dataset *ds, int64_t buffer_size)
{
    sl__node node = {.kind = SL__NODE_SHUFFLE, .count = buffer_size};
    int rc = need_source(ds, "shuffle");
    if (rc != SL_OK)
        return rc;
    if (buffer_size < 2 || buffer_size > (int64_t)1 << 30)
        return sl__errf(&ds->error, SL_EINVAL, "shuffle: buffer_size must be in [2, 2^30], got %lld",
                        (long long)buffer_size);
    return append_node(ds, &node);
}

int sl_dataset_batch(sl_dataset *ds, int64_t batch_size, int drop_remainder,
                     int num_parallel_workers)
{
    sl__node node = {.kind = SL__NODE_BATCH, .count = batch_size,
                     .drop_remainder = drop_remainder != 0, .workers = num_parallel_workers};
    int rc = need_source(ds, "batch");
    if (rc != SL_OK)
        return rc;
    if (batch_size < 1 || batch_size > (int64_t)1 << 24)
        return sl__errf(&ds->error, SL_EINVAL, "batch: batch_size must be in [1, 2^24], got %lld",
                        (long long)batch_size);
    if (num_parallel_workers < 1 || num_parallel_workers > 256)
        return sl__errf(&ds->error, SL_EINVAL, "batch: num_parallel_workers must be in [1, 256], got %d",
                        num_parallel_workers);
    for (size_t i = 0; i < ds->schema.ncols; i++) {
        sl_tensor_spec *s = &ds->schema.specs[i];
        if (s->ndim >= SL_MAX_DIMS)
            return sl__errf(&ds->error, SL_ESHAPE, "batch: column '%s' already has %d dimensions",
                            ds->schema.names[i], s->ndim);
    }
    rc = append_node(ds, &node);
    if (rc != SL_OK)
        return rc;
    for (size_t i = 0; i < ds->schema.ncols; i++) {
        sl_tensor_spec *s = &ds->schema.specs[i];
        memmove(s->shape + 1, s->shape, (size_t)s->ndim * sizeof s->shape[0]);
        s->shape[0] = drop_remainder ? batch_size : -1;
        s->ndim++;
    }
    return SL_OK;
}

int sl_dataset_repeat(sl_dataset *ds, int64_t count)
{
    sl__node node = {.kind = SL__NODE_REPEAT, .count = count};
    int rc = need_source(ds, "repeat");
    if (rc != SL_OK)
        return rc;
    if (count == 0 || count < -1)
        return sl__errf(&ds->error, SL_EINVAL, "repeat: count must be >= 1 or -1 (without end), got %lld",
                        (long long)count);
    return append_node(ds, &node);
}

/* True if rows arriving at the end of the chain come from an endless repeat
 * that no take has bounded since. */
static int endless_stream(const sl_dataset *ds)
{
    int endless = 0;
    for (size_t i = 0; i < ds->nnodes; i++) {
        if (ds->nodes[i].kind == SL__NODE_REPEAT && ds->nodes[i].count < 0)
            endless = 1;
        else if (ds->nodes[i].kind == SL__NODE_TAKE && ds->nodes[i].count >= 0)
            endless = 0;
    }
    return endless;
}

static int append_take_skip(sl_dataset *ds, sl__node_kind kind, int64_t n)
{
    const char *what = kind == SL__NODE_TAKE ? "take" : "skip";
    sl__node node = {.kind = kind, .count = n, .endless_input = endless_stream(ds)};
    int rc = need_source(ds, what);
    if (rc != SL_OK)
        return rc;
    if (n < (kind == SL__NODE_TAKE ? -1 : 0))
        return sl__errf(&ds->error, SL_EINVAL, "%s: n must be >= %d, got %lld", what,
                        kind == SL__NODE_TAKE ? -1 : 0, (long long)n);
    return append_node(ds, &node);
}

int sl_dataset_take(sl_dataset *ds, int64_t n)
{
    return append_take_skip(ds, SL__NODE_TAKE, n);
}

int sl_dataset_skip(sl_dataset *ds, int64_t n)
{
    return append_take_skip(ds, SL__NODE_SKIP, n);
}

int sl_dataset_get_dataset_size(const sl_dataset *ds, int64_t *size)
{
    const int64_t endless = SL_DATASET_SIZE_ENDLESS;
    int64_t n;
    *size = 0;
    if (!ds->source)
        return SL_ESTATE;
    n = sl__sampler_size(&ds->source->sampler, ds->source->num_rows);
    for (size_t i = 0; i < ds->nnodes; i++) {
        const sl__node *node = &ds->nodes[i];
        switch (node->kind) {
        case SL__NODE_BATCH:
            if (n != endless)
                n = node->drop_remainder ? n / node->count : (n + node->count - 1) / node->count;
            break;
        case SL__NODE_REPEAT:
            /* More rows than int64_t holds is endless for every purpose. */
            if (node->count < 0 || n == endless || n > INT64_MAX / node->count)
                n = endless;
            else
                n *= node->count;
            break;
        case SL__NODE_TAKE:
            if (node->count >= 0 && (n == endless || node->count < n))
                n = node->count;
            break;
        case SL__NODE_SKIP:
            if (n != endless)
                n = n > node->count ? n - node->count : 0;
            break;
        default:
            break;
        }
    }
    *size = n;
    return SL_OK;
}

size_t sl_dataset_num_columns(const sl_dataset *ds)
{
    return ds->schema.ncols;
}

const char *sl_dataset_column_name(const sl_dataset *ds, size_t i)
{
    return i < ds->schema.ncols ? ds->schema.names[i] : NULL;
}

int sl_dataset_column_spec(const sl_dataset *ds, size_t i, sl_tensor_spec *out)
{
    if (i >= ds->schema.ncols)
        return SL_EINVAL;
    *out = ds->schema.specs[i];
    return SL_OK;
}

static size_t describe_node(const sl__node *node, char *buf, size_t len)
{
    size_t used = 0;
    switch (node->kind) {
    case SL__NODE_MAP:
        used = (size_t)snprintf(buf, len, "map(%s: ", node->colname);
        for (size_t k = 0; k < node->nops && used < len; k++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? ", " : "",
                                     sl_op_name(node->ops[k]));
        if (used < len)
            used += (size_t)snprintf(buf + used, len - used, "; workers=%d)", node->workers);
        return used;
    case SL__NODE_SHUFFLE:
        return (size_t)snprintf(buf, len, "shuffle(buffer_size=%lld)", (long long)node->count);
    case SL__NODE_BATCH: {
        const char *how = node->padded ? ", padded" : node->batch_map ? ", per_batch_map" : "";
        return (size_t)snprintf(buf, len, "batch(%lld, drop_remainder=%d, workers=%d%s)",
                                (long long)node->count, node->drop_remainder, node->workers, how);
    }
    case SL__NODE_REPEAT:
        return (size_t)snprintf(buf, len, "repeat(%lld)", (long long)node->count);
    case SL__NODE_TAKE:
        return (size_t)snprintf(buf, len, "take(%lld)", (long long)node->count);
    case SL__NODE_SKIP:
        return (size_t)snprintf(buf, len, "skip(%lld)", (long long)node->count);
    case SL__NODE_PROJECT:
    case SL__NODE_RENAME:
        return sl__describe_columns(node, buf, len);
    }
    return 0;
}

/* " sampler(...)" when the sampler does more than shuffle everything. */
static size_t describe_sampler(const sl_sampler_options *o, int64_t num_rows, char *buf,
                               size_t len)
{
    buf[0] = '\0';
    if (o->num_samples == 0 && o->num_shards == 1)
        return (size_t)snprintf(buf, len, o->shuffle ? "" : " in file order");
    return (size_t)snprintf(buf, len, " sampler(%s, shard %lld of %lld, %lld rows per epoch)",
                            o->shuffle ? "shuffled" : "in file order", (long long)o->shard_id,
                            (long long)o->num_shards, (long long)sl__sampler_size(o, num_rows));
}

int sl_dataset_describe(const sl_dataset *ds, char *buf, size_t len)
{
    size_t used;
    if (len == 0)
        return SL_EINVAL;
    if (!ds->source) {
        snprintf(buf, len, "(no source)");
        return SL_ESTATE;
    }
    /* buf + used is formed only while used < len: beyond the end of buf
     * even forming the pointer is undefined. */
    used = (size_t)snprintf(buf, len, "%s", ds->source->summary);
    if (used < len)
        used += describe_sampler(&ds->source->sampler, ds->source->num_rows, buf + used,
                                 len - used);
    for (size_t i = 0; i < ds->nnodes && used + 4 < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "\n");
        used += describe_node(&ds->nodes[i], buf + used, len - used);
    }
    return SL_OK;
}

const char *sl_dataset_source_kind(const sl_dataset *ds)
{
    return ds->source ? ds->source->iface->kind : NULL;
}

int64_t sl_dataset_source_rows(const sl_dataset *ds)
{
    return ds->source ? ds->source->num_rows : SL_ESTATE;
}

size_t sl_dataset_num_classes(const sl_dataset *ds)
{
    return ds->source ? ds->source->nclasses : 0;
}

int sl_dataset_class_info(const sl_dataset *ds, size_t i, const char **name, int32_t *label,
                          int64_t *count)
{
    if (!ds->source)
        return SL_ESTATE;
    if (i >= ds->source->nclasses)
        return SL_EINVAL;
    if (name)
        *name = ds->source->classes[i].name;
    if (label)
        *label = ds->source->classes[i].label;
    if (count)
        *count = ds->source->classes[i].count;
    return SL_OK;
}
