/* row.h: what travels between pipeline stages. A row is a fixed array of
 * column tensors plus where it came from (source index, source epoch). Rows
 * move in chunks, so queues and threads hand over many rows per lock; a
 * chunk is either rows or one marker: end of epoch, end of data, or an
 * error with its message. */
#ifndef SLUICE_PIPELINE_ROW_H
#define SLUICE_PIPELINE_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/dataset.h"
#include "core/error.h"

typedef struct sl__row {
    sl_tensor *col[SL_MAX_COLUMNS]; /* unused columns are NULL */
    int64_t index; /* sample index in the source (batch number after batch) */
    int64_t epoch; /* which pass over the source made it */
    size_t unread_bytes; /* not read yet (columns NULL): about what reading it
                          * will bring, so chunks of unread rows stay small */
} sl__row;

/* A bad sample that was skipped or replaced (sl_error_samples_options),
 * on its way to the consumer, which counts and reports it. Records ride
 * in the chunk that held the sample, in sample order. */
typedef struct sl__bad_record {
    struct sl__bad_record *next;
    int64_t index, epoch;
    int64_t stand_in;  /* replace: the sample in its place; skip: -1 */
    int status;
    int replaced;
    int pad;           /* skip: still to be filled at the end of the epoch by
                        * the next sequential stage */
    char sample[256];  /* the source's name for it */
    char reason[SL_ERRMSG_LEN];
} sl__bad_record;

typedef enum sl__chunk_kind {
    SL__CHUNK_ROWS = 0,
    SL__CHUNK_EOE,   /* end of epoch */
    SL__CHUNK_EOF,   /* end of data: nothing follows */
    SL__CHUNK_ERROR  /* nothing follows; `error` says what failed. A map
                      * stage's error may carry the rows it finished before
                      * the failing one: they come before the error. */
} sl__chunk_kind;

typedef struct sl__chunk {
    sl__chunk_kind kind;
    size_t nrows;
    size_t cap;
    size_t nbytes;   /* data bytes of the rows, to bound chunk sizes */
    sl__error error; /* for SL__CHUNK_ERROR */
    int64_t group_index, group_epoch; /* a batch's rows on their way to collation */
    struct sl__chunk *next; /* in an output builder's list of chunks not yet sent */
    sl__bad_record *bad, *bad_tail; /* bad samples met among its rows, in order (a
                                     * chunk of rows may hold none but these) */
    sl__row rows[];  /* cap entries */
} sl__chunk;

/* A chunk with room for cap rows (cap may be 0 for markers), or NULL. */
sl__chunk *sl__chunk_new(sl__chunk_kind kind, size_t cap);
/* Releases every tensor in the chunk and frees it. */
void sl__chunk_free(sl__chunk *chunk);
/* For sl__queue_drain. */
void sl__chunk_free_item(void *chunk);
/* Appends row (its tensors move into the chunk); the chunk must have room. */
void sl__chunk_push_row(sl__chunk *chunk, sl__row *row);
/* Appends record, or the list starting at it, to the chunk's records. */
void sl__chunk_add_bad(sl__chunk *chunk, sl__bad_record *record);
/* Moves src's records to the end of dst's. */
void sl__chunk_move_bad(sl__chunk *dst, sl__chunk *src);
void sl__bad_records_free(sl__bad_record *list);

/* An error chunk carrying a copy of err (NULL on allocation failure). */
sl__chunk *sl__chunk_error(const sl__error *err);

void sl__row_clear(sl__row *row);
size_t sl__row_nbytes(const sl__row *row);

#endif
