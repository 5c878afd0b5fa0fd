/* model.c: Model.train / Model.eval on top of a graph and two compiled
 * steps. The host loop is the seeds' non-sink mode: one batch, one step,
 * callbacks, again. */
#include "exec/model_impl.h"
#include "exec/replica.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/thread_budget.h"
#include "sluice/checkpoint.h"
#include "sluice/iterator.h"
#include "core/clock.h"
#include "core/options.h"
#include "exec/blas.h"
#include "exec/step_impl.h"
#include "devices/device_impl.h"
#include "core/tensor_impl.h"

/* Embedded in sl_model_options, so it never grows (core/options.h): this
 * fails when a field is appended. */
_Static_assert(sizeof(sl_context) == offsetof(sl_context, blas_threads) + sizeof(int),
               "sl_context is embedded in sl_model_options and must not grow");

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t model_options_v1_size =
    offsetof(sl_model_options, context) + sizeof(sl_context);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_model_options) ==
                   offsetof(sl_model_options, device_options) + sizeof(void *),
               "sl_model_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_context_init_sized(sl_context *c, size_t size)
{
    sl_context d;
    sl_thread_budget b;
    memset(&d, 0, sizeof d);
    d.mode = SL_GRAPH_MODE;
    d.device_target = "CPU";
    d.device_id = 0;
    d.save_graphs = 0;
    d.save_graphs_path = ".";
    sl_thread_budget_default(&b);
    d.threads = b.compute_threads;
    d.blas_threads = b.blas_threads;
    sl__options_init(c, size, &d, sizeof d);

}

void sl_model_options_init_sized(sl_model_options *o, size_t size)
{
    sl_model_options d;
    memset(&d, 0, sizeof d);
    sl_network_options_init(&d.network);
    d.optimizer = SL_OPTIMIZER_MOMENTUM;
    d.learning_rate = 0.01f;
    d.momentum = 0.9f;
    d.seed = 0;
    sl_context_init(&d.context);
    d.data_timeout_ms = 300000;
    d.compute_spin_ns = -1;
    sl__options_init(o, size, &d, sizeof d);
}

/* The caller's options (NULL: defaults) as this library's full struct. */
static int read_options(sl_model *m, const sl_model_options *user)
{
    int rc;
    sl_model_options_init(&m->opts);
    rc = sl__options_read(&m->opts, sizeof m->opts, model_options_v1_size, user,
                          "sl_model_options", &m->err);
    if (rc == SL_OK)
        rc = sl__options_check_embedded(m->opts.network.size, sizeof m->opts.network,
                                        "sl_network_options", "sl_model_options.network",
                                        &m->err);
    if (rc == SL_OK)
        rc = sl__options_check_embedded(m->opts.context.size, sizeof m->opts.context,
                                        "sl_context", "sl_model_options.context", &m->err);
    return rc;

}

const char *sl_model_last_error(const sl_model *m)
{
    return m->err.msg;
}

void sl_model_set_error(sl_model *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err.msg, sizeof m->err.msg, fmt, ap);
    va_end(ap);
}

sl_graph *sl_model_graph(sl_model *m)
{
    return m->g;
}

int64_t sl_model_global_step(const sl_model *m)
{
    return m->global_step;
}

sl_step *sl_model_train_step(sl_model *m)
{
    return m->train_step;
}

void sl_model_stop(sl_model *m)
{
    atomic_store(&m->stop, 1);
    pthread_mutex_lock(&m->active_lock);
    if (m->active)
        sl_iterator_interrupt(m->active);
    if (m->active_channel)
        sl__channel_interrupt(m->active_channel);
    /* replicas waiting for each other's gradients: between two steps
     * (across ranks, the next collective tells the others; this never
     * waits for them) */
    if (m->replicas)
        sl__comm_stop(m->replicas->comm);
    pthread_mutex_unlock(&m->active_lock);
}

int sl__model_host_pin(sl_model *m, sl__cpu_affinity *saved)
{
    uint64_t dev_mask = sl__device_core_mask(m->dev);
    sl__cpu_affinity host;
    for (int r = 1; m->replicas && r < m->replicas->n; r++)
        dev_mask |= sl__device_core_mask(m->replicas->reps[r].dev);
    if (!dev_mask || sl__thread_affinity_get(saved) != SL_OK)
        return 0;
    host = *saved;
    return sl__cpu_affinity_remove(&host, dev_mask) > 0 && sl__thread_affinity_set(&host) == SL_OK;
}

void sl__model_host_unpin(const sl__cpu_affinity *saved, int pinned)
{
    if (pinned)
        sl__thread_affinity_set(saved);
}

void sl__model_set_active_channel(sl_model *m, sl__channel *f)
{
    pthread_mutex_lock(&m->active_lock);
    m->active_channel = f;
    if (f && atomic_load(&m->stop))
        sl__channel_interrupt(f);
    pthread_mutex_unlock(&m->active_lock);
}

sl_device *sl_model_device(sl_model *m)
{
    return m->dev;
}

void sl_model_get_parallel_stats(const sl_model *m, sl_parallel_stats *out)
{
    *out = m->parallel_stats;
    if (out->devices < 1)
        out->devices = 1;
}

void sl_model_get_sink_stats(const sl_model *m, sl_sink_stats *out)
{
    *out = m->sink_stats;
}

size_t sl_model_get_stage_stats(const sl_model *m, sl_stage_stats *out, size_t max)
{
    for (size_t i = 0; i < m->nstages && i < max; i++)
        out[i] = m->stages[i];
    return m->nstages;
}

/* Makes it (or NULL) the iterator that sl_model_stop interrupts. A stop
 * asked for before train began reading still counts: the new iterator is
 * interrupted at once. */
void sl__model_set_active(sl_model *m, sl_iterator *it)
{
    pthread_mutex_lock(&m->active_lock);
    m->active = it;
    if (it && atomic_load(&m->stop))
        sl_iterator_interrupt(it);
    pthread_mutex_unlock(&m->active_lock);
}

void sl_model_free(sl_model *m)
{
    if (!m)
        return;
    sl_step_free(m->train_step);
    sl_step_free(m->eval_step);
    sl_executor_free(m->ex);
    sl_graph_free(m->g);
    sl_tensor_release(m->pad_image);
    sl_tensor_release(m->pad_label);
    for (size_t i = 0; i < SL_MAX_COLUMNS; i++)
        if (m->staging[i])
            sl__device_free(m->dev, m->staging[i], m->staging_bytes[i]);
    sl_device_free(m->dev);
    if (m->active_lock_made)
        pthread_mutex_destroy(&m->active_lock);
    free(m);
}

/* Checks the context and opens its device: device_target "CPU" or "SIM"
 * (any case), device_id its index. */
static int check_context(sl_model *m, const sl_context *c)
{
    const char *t = c->device_target ? c->device_target : "CPU";
    char name[32], err[SL_ERRMSG_LEN];
    int rc;
    if (c->mode != SL_GRAPH_MODE && c->mode != SL_PYNATIVE_MODE)
        return sl__errf(&m->err, SL_EINVAL, "context: unknown mode %d", (int)c->mode);
    if (strcasecmp(t, "CPU") != 0 && strcasecmp(t, "SIM") != 0)
        return sl__errf(&m->err, SL_EINVAL,
                        "context: device target '%s' is not available: this build has CPU "
                        "and SIM (a model of an accelerator)",
                        t);
    if (c->device_id < 0 || c->device_id > 63)
        return sl__errf(&m->err, SL_EINVAL, "context: device id %d is outside [0, 63]",
                        c->device_id);
    snprintf(name, sizeof name, "%s:%d", strcasecmp(t, "CPU") == 0 ? "cpu" : "sim",
             c->device_id);
    rc = sl_device_new(&m->dev, name, m->opts.device_options, err, sizeof err);
    if (rc < 0)
        return sl__errf(&m->err, rc, "context: %s", err);
    snprintf(m->device_name, sizeof m->device_name, "%s", name);
    if (c->threads < 1 || c->threads > 64 || c->blas_threads < 1 || c->blas_threads > 64)
        return sl__errf(&m->err, SL_EINVAL,
                        "context: threads %d and blas_threads %d must be in [1, 64]",
                        c->threads, c->blas_threads);
    snprintf(m->device_target, sizeof m->device_target, "%s",
             strcasecmp(t, "CPU") == 0 ? "CPU" : "SIM");
    snprintf(m->graphs_path, sizeof m->graphs_path, "%s",
             c->save_graphs_path ? c->save_graphs_path : ".");
    return SL_OK;
}

/* Builds the network of the options into a new graph, with its gradients
 * and the optimizer's updates (m->g NULL), or takes the caller's graph as
 * it is (m->g set, m->net naming its nodes); then compiles the steps. */
static int build(sl_model *m)
{
    const sl_model_options *o = &m->opts;
    sl_executor_options eo;
    int rc = SL_OK;

    if (!m->g) {
        if (sl_graph_new(&m->g) != SL_OK)
            return sl__errf(&m->err, SL_ENOMEM, "model: out of memory");
        sl_graph_set_seed(m->g, o->seed);
        rc = sl_network_build(m->g, &o->network, &m->net);
        if (rc == SL_OK)
            rc = sl_graph_backward(m->g, m->net.loss);
        if (rc == SL_OK)
            rc = o->optimizer == SL_OPTIMIZER_SGD
                     ? sl_graph_sgd(m->g, o->learning_rate)
                     : sl_graph_momentum(m->g, o->learning_rate, o->momentum);
    }
    if (rc < 0)
        return sl__errf(&m->err, rc, "model: %s", sl_graph_last_error(m->g));
    sl_executor_options_init(&eo);
    eo.threads = o->context.threads;
    eo.blas_threads = o->context.blas_threads;
    eo.spin_ns = o->compute_spin_ns;
    rc = sl__executor_new_on(&m->ex, &eo, sl__device_core_mask(m->dev));
    if (rc < 0)
        return rc == SL_ESTATE
                   ? sl__errf(&m->err, rc,
                              "model: OpenBLAS's thread count is process-wide and another "
                              "live executor uses %d; ask for the same blas_threads",
                              sl__blas_threads())
                   : sl__errf(&m->err, rc, "model: cannot start the executor: %s",
                              sl_strerror(rc));
    rc = sl__step_new_on(&m->train_step, m->g, m->ex, m->dev, o->context.mode, &m->net.loss, 1, 1);
    if (rc == SL_OK && m->net.logits >= 0)
        rc = sl__step_new_on(&m->eval_step, m->g, m->ex, m->dev, o->context.mode, &m->net.logits, 1,
                             0);
    if (rc < 0)
        return sl__errf(&m->err, rc, "model: %s", sl_graph_last_error(m->g));
    if (o->context.save_graphs) {
        rc = sl__dump_step(m->train_step, m->graphs_path, "train_step", &m->err);
        if (rc == SL_OK && m->eval_step)
            rc = sl__dump_step(m->eval_step, m->graphs_path, "eval_step", &m->err);
    }
    return rc;
}

/* sl_model_new (g NULL) and sl_model_new_from_graph (g taken, net its
 * nodes). */
static int model_new(sl_model **out, const sl_model_options *o, sl_graph *g,
                     const sl_network *net, char *err, size_t err_len)
{
    sl_model *m = calloc(1, sizeof *m);
    int rc;

    *out = NULL;
    if (!m) {
        if (err && err_len)
            snprintf(err, err_len, "model: out of memory");
        sl_graph_free(g);
        return SL_ENOMEM;
    }
    m->g = g;
    if (net)
        m->net = *net;
    atomic_init(&m->stop, 0);
    atomic_init(&m->params_changed, 0);
    atomic_init(&m->sink_steps_run, 0);
    if (pthread_mutex_init(&m->active_lock, NULL) != 0) {
        if (err && err_len)
            snprintf(err, err_len, "model: cannot make a mutex");
        free(m);
        return SL_ENOMEM;
    }
    m->active_lock_made = 1;
    rc = read_options(m, o);
    if (rc == SL_OK)
        rc = check_context(m, &m->opts.context);
    if (rc == SL_OK)
        rc = build(m);
    if (rc < 0) {
        if (err && err_len)
            snprintf(err, err_len, "%s", m->err.msg);
        sl_model_free(m);
        return rc;
    }
    m->opts.context.device_target = m->device_target;
    m->opts.context.save_graphs_path = m->graphs_path;
    *out = m;
    return SL_OK;
}

int sl_model_new(sl_model **out, const sl_model_options *o, char *err, size_t err_len)
{
    return model_new(out, o, NULL, NULL, err, err_len);
}

int sl_model_new_from_graph(sl_model **out, sl_graph *g, const sl_network *net,
                            const sl_model_options *o, char *err, size_t err_len)
{
    sl_tensor_spec spec;
    sl_model_options opts;
    const char *why = NULL;

    *out = NULL;
    if (!g || !net)
        why = "model: no graph or no network nodes given";
    else if (net->loss < 0 || sl_graph_node_spec(g, net->loss, &spec) != SL_OK || spec.ndim != 0)
        why = "model: the graph's loss is not a scalar node";
    else if (net->logits >= 0 && (net->image < 0 || net->label < 0))
        why = "model: a graph that can evaluate (logits given) needs its image and label inputs";
    if (why) {
        if (err && err_len)
            snprintf(err, err_len, "%s", why);
        sl_graph_free(g);
        return SL_EINVAL;
    }
    /* Evaluation pads short batches to the image input's shape. */
    sl_model_options_init(&opts);
    if (o)
        memcpy(&opts, o, o->size < sizeof opts ? o->size : sizeof opts);
    if (net->image >= 0 && sl_graph_node_spec(g, net->image, &spec) == SL_OK && spec.ndim == 4) {
        opts.network.batch = spec.shape[0];
        opts.network.channels = spec.shape[1];
        opts.network.height = spec.shape[2];
        opts.network.width = spec.shape[3];
    }
    if (net->logits >= 0 && sl_graph_node_spec(g, net->logits, &spec) == SL_OK && spec.ndim == 2)
        opts.network.num_classes = spec.shape[1];
    return model_new(out, &opts, g, net, err, err_len);
}

/* --- training -------------------------------------------------------- */

/* The iterator's timeout for the model's data_timeout_ms. */
int sl__model_data_timeout(const sl_model *m)
{
    int64_t ms = m->opts.data_timeout_ms;
    return ms < 0 ? -1 : ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Runs one hook of every callback; the first non-zero result stops. */
int sl__model_run_hooks(sl_model *m, sl_callback *const *cbs, size_t n, size_t hook,
                     const sl_train_info *info)
{
    for (size_t i = 0; i < n; i++) {
        int (*fn)(void *, const sl_train_info *) = NULL;
        int rc;
        switch (hook) {
        case 0: fn = cbs[i]->begin; break;
        case 1: fn = cbs[i]->epoch_begin; break;
        case 2: fn = cbs[i]->step_end; break;
        case 3: fn = cbs[i]->epoch_end; break;
        default: fn = cbs[i]->end; break;
        }
        if (!fn)
            continue;
        m->err.msg[0] = '\0';
        rc = fn(cbs[i]->self, info);
        if (rc < 0) {
            if (!m->err.msg[0])
                sl__errf(&m->err, rc, "callback %zu failed: %s", i, sl_strerror(rc));
            m->err.status = rc;
            return rc;
        }
        if (rc > 0)
            atomic_store(&m->stop, 1);
    }
    /* A callback wrote the model's parameters: every device's replica takes
     * them before the next step (hooks run between steps, the replicas
     * idle). */
    if (atomic_exchange(&m->params_changed, 0) && m->replicas)
        return sl__replicas_sync(m->replicas);
    return SL_OK;
}

void sl_model_parameters_changed(sl_model *m)
{
    atomic_store(&m->params_changed, 1);
}

/* For each input the step reads, the dataset column of the same name. */
/* "'image', 'label'" for people. */
static void list_names(char *buf, size_t len, const char *const *names, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        int k = snprintf(buf + used, len - used, "%s'%s'", i ? ", " : "", names[i]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

int sl__model_pick_columns(sl_model *m, const sl_dataset *ds, const char *const *names, size_t n,
                           const char *what, int *cols)
{
    size_t found = 0, ncols = sl_dataset_num_columns(ds);
    const char *have[SL_MAX_COLUMNS];
    char want_s[256], have_s[256];
    if (n > SL_MAX_COLUMNS)
        return sl__errf(&m->err, SL_EINVAL, "%s: the network reads %zu inputs; at most %d can be "
                        "fed", what, n, SL_MAX_COLUMNS);
    for (size_t i = 0; i < n; i++) {
        cols[i] = sl_dataset_column_index(ds, names[i]);
        found += cols[i] >= 0;
    }
    if (found == n)
        return SL_OK;
    /* As MindSpore feeds a network its dataset's columns: in order; but
     * only when no column has an input's name, lest a column named for one
     * input feed another. */
    if (found == 0 && ncols == n) {
        for (size_t i = 0; i < n; i++)
            cols[i] = (int)i;
        return SL_OK;
    }
    for (size_t i = 0; i < ncols && i < SL_MAX_COLUMNS; i++)
        have[i] = sl_dataset_column_name(ds, i);
    list_names(want_s, sizeof want_s, names, n);
    list_names(have_s, sizeof have_s, have, ncols < SL_MAX_COLUMNS ? ncols : SL_MAX_COLUMNS);
    return sl__errf(&m->err, SL_EINVAL,
                    "%s: the network reads %s; the dataset's columns are %s: give it columns "
                    "of those names, or exactly %zu columns, which feed the network in order",
                    what, want_s, have_s, n);
}

int sl__model_map_columns(sl_model *m, const sl_step *step, const sl_dataset *ds, const char *what,
                          int *cols)
{
    const char *names[SL_MAX_COLUMNS];
    size_t n = sl_step_num_inputs(step);
    for (size_t i = 0; i < n; i++)
        names[i] = sl_graph_node_name(m->g, sl_step_input_node(step, i));
    return sl__model_pick_columns(m, ds, names, n, what, cols);
}

/* 1 when t is a short batch of the model's row shape and dtype. */
int sl__model_is_short_batch(const sl_model *m, const sl_tensor *image, const sl_tensor *label)
{
    const sl_network_options *no = &m->opts.network;
    return image->dtype == SL_FLOAT32 && image->ndim == 4 && image->shape[0] < no->batch &&
           image->shape[1] == no->channels && image->shape[2] == no->height &&
           image->shape[3] == no->width && label->dtype == SL_INT32 && label->ndim == 1 &&
           label->shape[0] == image->shape[0];
}

/* --- evaluation ------------------------------------------------------ */

/* A batch of n < N rows copied into the padding tensors (zeros after). */
static int pad_batch(sl_model *m, const sl_tensor *image, const sl_tensor *label)
{
    const sl_network_options *no = &m->opts.network;
    size_t row_bytes = (size_t)(no->channels * no->height * no->width) * sizeof(float);
    size_t n = (size_t)image->shape[0];
    if (!m->pad_image) {
        /* Both or neither: a later eval must not find half a pad. */
        int64_t is[4] = {no->batch, no->channels, no->height, no->width}, ls[1] = {no->batch};
        sl_tensor *pi = NULL, *pl = NULL;
        int rc = sl_tensor_new(&pi, SL_FLOAT32, 4, is);
        if (rc == SL_OK)
            rc = sl_tensor_new(&pl, SL_INT32, 1, ls);
        if (rc < 0) {
            sl_tensor_release(pi);
            return sl__errf(&m->err, rc, "eval: out of memory for the padded last batch");
        }
        m->pad_image = pi;
        m->pad_label = pl;
    }
    memcpy(m->pad_image->data, image->data, n * row_bytes);
    memset((char *)m->pad_image->data + n * row_bytes, 0, ((size_t)no->batch - n) * row_bytes);
    memcpy(m->pad_label->data, label->data, n * sizeof(int32_t));
    memset((int32_t *)m->pad_label->data + n, 0, ((size_t)no->batch - n) * sizeof(int32_t));
    return SL_OK;
}

int sl_model_eval(sl_model *m, sl_dataset *ds, sl_metrics *out)
{
    sl_iterator_options io;
    sl_iterator *it = NULL, *training;
    int64_t classes = m->opts.network.num_classes, correct = 0, seen = 0;
    double loss_sum = 0.0;
    const char *roles[2];
    int cols[2], image_col, label_col, rc, in_training;

    sl__err_clear(&m->err);
    memset(out, 0, sizeof *out);
    if (!m->eval_step)
        return sl__errf(&m->err, SL_ESTATE,
                        "eval: the model's graph has no logits to evaluate (it was built "
                        "from a training step only)");
    /* The eval step reads the image; the labels are scored here. The
     * network names its two inputs ("image", "label" when built in). */
    if (m->net.image < 0 || m->net.label < 0)
        return sl__errf(&m->err, SL_ESTATE,
                        "eval: the model's network names no image or label input to evaluate");
    roles[0] = sl_graph_node_name(m->g, m->net.image);
    roles[1] = sl_graph_node_name(m->g, m->net.label);
    rc = sl__model_pick_columns(m, ds, roles, 2, "eval", cols);
    if (rc < 0)
        return rc;
    image_col = cols[0];
    label_col = cols[1];
    sl_iterator_options_init(&io);
    io.timeout_ms = sl__model_data_timeout(m);
    /* Called from a callback of the model's own training (evaluating while
     * training, seed 004), it runs between two steps or sinks on the
     * current weights. A stop asked of that training is then kept, not
     * cleared, and its iterator is again the one sl_model_stop wakes once
     * eval is done. */
    pthread_mutex_lock(&m->active_lock);
    training = m->active;
    in_training = m->active || m->active_channel;
    pthread_mutex_unlock(&m->active_lock);
    if (in_training && atomic_load(&m->stop))
        return sl__errf(&m->err, SL_ECANCELED,
                        "eval: the training that called it is stopping");
    rc = sl_iterator_new(&it, ds, &io);
    if (rc < 0)
        return sl__errf(&m->err, rc, "eval: %s", sl_dataset_last_error(ds));
    if (!in_training)
        atomic_store(&m->stop, 0);
    sl__model_set_active(m, it);
    for (int64_t batch = 1;; batch++) {
        sl_row row;
        sl_tensor *feed[2];
        const float *logits;
        const int32_t *labels;
        size_t n;
        int next = sl_iterator_next(it, &row);
        if (next == SL_END_OF_EPOCH || next == SL_END_OF_DATA)
            break;
        if (next == SL_ECANCELED && atomic_load(&m->stop)) {
            rc = sl__errf(&m->err, SL_ECANCELED, "eval: stopped at batch %lld", (long long)batch);
            break;
        }
        if (next < 0) {
            rc = sl__errf(&m->err, next, "eval: batch %lld: %s", (long long)batch,
                          sl_iterator_last_error(it));
            break;
        }
        feed[0] = row.columns[image_col];
        feed[1] = row.columns[label_col];
        n = feed[0]->ndim > 0 ? (size_t)feed[0]->shape[0] : 0;
        if (sl__model_is_short_batch(m, feed[0], feed[1])) {
            rc = pad_batch(m, feed[0], feed[1]);
            if (rc < 0) {
                sl_row_clear(&row);
                break;
            }
            feed[0] = m->pad_image;
            feed[1] = m->pad_label;
        }
        if (feed[1]->dtype != SL_INT32 || feed[1]->ndim != 1 ||
            (size_t)feed[1]->shape[0] < n) {
            char shape[96];
            rc = sl__errf(&m->err, SL_ESHAPE,
                          "eval: batch %lld: labels are %s %s, expected int32 (%zu)",
                          (long long)batch, sl_dtype_name(feed[1]->dtype),
                          sl_shape_str(shape, sizeof shape, feed[1]->ndim, feed[1]->shape), n);
        }
        labels = feed[1]->data;
        if (rc == SL_OK)
            rc = sl_step_run(m->eval_step, feed, 1);
        if (rc < 0) {
            if (!m->err.msg[0])
                sl__errf(&m->err, rc, "eval: batch %lld: %s", (long long)batch,
                         sl_step_last_error(m->eval_step));
            sl_row_clear(&row);
            break;
        }
        logits = sl_step_output(m->eval_step, 0, NULL);
        for (size_t r = 0; r < n; r++) {
            const float *z = logits + r * (size_t)classes;
            int32_t y = labels[r];
            double top = z[0], sum = 0.0;
            int64_t best = 0;
            if (y < 0 || y >= classes) {
                rc = sl__errf(&m->err, SL_EINVAL,
                              "eval: batch %lld: label %d of sample %zu is outside [0, %lld)",
                              (long long)batch, (int)y, r, (long long)classes);
                break;
            }
            for (int64_t c = 1; c < classes; c++)
                if (z[c] > z[best])
                    best = c;
            top = z[best];
            for (int64_t c = 0; c < classes; c++)
                sum += exp((double)z[c] - top);
            loss_sum += log(sum) + top - (double)z[y];
            correct += best == y;
            seen++;
        }
        sl_row_clear(&row);
        if (rc < 0)
            break;
    }
    sl__model_set_active(m, training);
    sl_iterator_free(it);
    if (rc < 0)
        return rc;
    if (seen == 0)
        return sl__errf(&m->err, SL_EINVAL, "eval: the dataset yielded no samples");
    out->samples = seen;
    out->accuracy = (double)correct / (double)seen;
    out->loss = loss_sum / (double)seen;
    return SL_OK;
}

/* --- checkpoints ----------------------------------------------------- */

int sl_model_save(sl_model *m, const char *path)
{
    /* Where the next step reads in the data global_step counts. */
    sl_checkpoint_position pos = m->data;
    int rc;
    if (pos.saved) {
        int64_t done = m->global_step - m->data_origin;
        pos.epoch = done / pos.steps_per_epoch;
        pos.rows = done % pos.steps_per_epoch;
    }
    rc = sl_checkpoint_save_at(m->g, path, m->global_step, &pos);
    if (rc < 0)
        sl__errf(&m->err, rc, "%s", sl_graph_last_error(m->g));
    return rc;
}

int sl_model_load(sl_model *m, const char *path)
{
    sl_checkpoint_position pos;
    int64_t step = 0;
    int rc = sl_checkpoint_load_at(m->g, path, &step, &pos);
    if (rc < 0)
        return sl__errf(&m->err, rc, "%s", sl_graph_last_error(m->g));
    m->global_step = step;
    m->data = pos;
    m->data_origin = pos.saved ? step - (pos.epoch * pos.steps_per_epoch + pos.rows) : step;
    return SL_OK;
}
