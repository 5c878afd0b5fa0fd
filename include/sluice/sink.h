/* sink.h: MindSpore's data_sink and DatasetHelper for C. A handle binds a model's training
 * step to a dataset; every call runs sink_size steps on the model's device,
 * the executor taking each batch from the device queue (GetNext) that a
 * transfer thread keeps filled, and returns the last step's loss. Calls
 * continue the traversal where the previous one stopped, across epochs,
 * so two calls of 500 steps equal one of 1000. The pipeline and the
 * transfer thread run from sl_data_sink_new until sl_data_sink_free. */
#ifndef SLUICE_SINK_H
#define SLUICE_SINK_H

#include <stdint.h>

#include "sluice/dataset.h"
#include "sluice/export.h"
#include "sluice/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_data_sink sl_data_sink;

/* Starts the pipeline of dataset (rows with the model's "image" and
 * "label" columns) and the transfer thread into the model's device queue.
 * o may be NULL; its queue_capacity, queue_max_bytes and
 * getnext_timeout_ms apply (dataset_sink_mode and sink_size do not).
 * Errors (sink_size < 1, bad options, a pipeline that cannot start) leave
 * their message in sl_model_last_error(m). *out is yours (sl_data_sink_free);
 * free it before the model. */
SL_API int sl_data_sink_new(sl_data_sink **out, sl_model *m, sl_dataset *dataset,
                            int64_t sink_size, const sl_train_options *o);
/* Runs sink_size steps; *loss (may be NULL) is the last step's. Returns 0,
 * or an error (message in sl_model_last_error): a GetNext timeout naming
 * what starves the queue, a pipeline error, a batch of the wrong shape, a
 * NaN loss; SL_ECANCELED when sl_model_stop ended the call early (the
 * next call continues). */
SL_API int sl_data_sink_call(sl_data_sink *s, float *loss);
/* Stops and joins the transfer thread and the pipeline. NULL is ignored. */
SL_API void sl_data_sink_free(sl_data_sink *s);

/* The dataset helper of custom training loops (MindSpore's DatasetHelper
 * connected to a step network, seed 004): iterating it trains. In sink
 * mode each epoch yields once, after one sink of sink_size steps (-1: the
 * whole epoch) run on the device; without sinking it yields after every
 * step. A loop over epochs reads:
 *
 *   for (e = 0; e < epoch_num; e++)
 *       while ((rc = sl_dataset_helper_next(h, &loss)) == SL_OK)
 *           ;                 (rc: SL_END_OF_EPOCH, or an error)
 *
 * o may be NULL; its queue and timeout fields apply. */
typedef struct sl_dataset_helper sl_dataset_helper;
SL_API int sl_dataset_helper_new(sl_dataset_helper **out, sl_model *m, sl_dataset *dataset,
                                 int dataset_sink_mode, int64_t sink_size, int64_t epoch_num,
                                 const sl_train_options *o);
/* SL_OK after a sink (or a step) with *loss (may be NULL) the last step's;
 * SL_END_OF_EPOCH when the epoch's iterations are done; SL_END_OF_DATA
 * after epoch_num epochs; or an error (message in sl_model_last_error). */
SL_API int sl_dataset_helper_next(sl_dataset_helper *h, float *loss);
SL_API void sl_dataset_helper_free(sl_dataset_helper *h);

#ifdef __cplusplus
}
#endif
#endif
