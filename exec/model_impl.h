/* model_impl.h: the model's fields, shared by model.c, callbacks.c and
 * dump.c. */
#ifndef SLUICE_EXEC_MODEL_IMPL_H
#define SLUICE_EXEC_MODEL_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "sluice/iterator.h"
#include "sluice/model.h"
#include "core/error.h"

struct sl_model {
    sl_model_options opts;
    char device_target[16];
    char graphs_path[4096];
    sl_graph *g;
    sl_network net;
    sl_executor *ex;
    sl_step *train_step;   /* forward, loss, backward, updates; output: loss */
    sl_step *eval_step;    /* forward; output: logits */
    sl_tensor *pad_image;  /* eval: a short last batch padded to full size */
    sl_tensor *pad_label;
    int64_t global_step;
    atomic_int stop;
    /* The iterator train or eval is reading, so that sl_model_stop, from
     * any thread, can wake a wait for data; guarded by active_lock. */
    pthread_mutex_t active_lock;
    sl_iterator *active;
    int active_lock_made;
    sl__error err;
};

/* Writes step as dir/<name>.ir (text) and dir/<name>.dot (Graphviz), each
 * through a temporary file renamed into place. */
int sl__dump_step(const sl_step *s, const char *dir, const char *name, sl__error *err);

/* Formats a float32 as numpy prints it: the fewest digits that read back
 * as the same float32, positional between 1e-4 and 1e16. */
void sl__format_float32(char *buf, size_t len, float v);

#endif
