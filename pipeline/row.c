/* row.c: chunk allocation and row bookkeeping. */
#include "pipeline/row.h"

#include <stdlib.h>
#include <string.h>

#include "core/tensor_impl.h"

sl__chunk *sl__chunk_new(sl__chunk_kind kind, size_t cap)
{
    sl__chunk *c;
    if (cap > (SIZE_MAX - sizeof *c) / sizeof(sl__row))
        return NULL;
    c = malloc(sizeof *c + cap * sizeof(sl__row));
    if (!c)
        return NULL;
    c->kind = kind;
    c->nrows = 0;
    c->cap = cap;
    c->nbytes = 0;
    c->next = NULL;
    c->bad = c->bad_tail = NULL;
    c->group_index = 0;
    c->group_epoch = 0;
    sl__err_clear(&c->error);
    return c;
}

void sl__row_clear(sl__row *row)
{
    for (int i = 0; i < SL_MAX_COLUMNS; i++) {
        sl_tensor_release(row->col[i]);
        row->col[i] = NULL;
    }
}

size_t sl__row_nbytes(const sl__row *row)
{
    size_t n = 0;
    for (int i = 0; i < SL_MAX_COLUMNS; i++)
        if (row->col[i])
            n += row->col[i]->nbytes;
    return n ? n : row->unread_bytes;
}

void sl__chunk_free(sl__chunk *chunk)
{
    if (!chunk)
        return;
    for (size_t i = 0; i < chunk->nrows; i++)
        sl__row_clear(&chunk->rows[i]);
    sl__bad_records_free(chunk->bad);
    free(chunk);
}

void sl__bad_records_free(sl__bad_record *list)
{
    while (list) {
        sl__bad_record *next = list->next;
        free(list);
        list = next;
    }
}

void sl__chunk_add_bad(sl__chunk *chunk, sl__bad_record *record)
{
    if (!record)
        return;
    if (chunk->bad_tail)
        chunk->bad_tail->next = record;
    else
        chunk->bad = record;
    while (record->next)
        record = record->next;
    chunk->bad_tail = record;
}

void sl__chunk_move_bad(sl__chunk *dst, sl__chunk *src)
{
    sl__chunk_add_bad(dst, src->bad);
    src->bad = src->bad_tail = NULL;
}

void sl__chunk_free_item(void *chunk)
{
    sl__chunk_free(chunk);
}

void sl__chunk_push_row(sl__chunk *chunk, sl__row *row)
{
    SL_ASSERT(chunk->nrows < chunk->cap);
    chunk->nbytes += sl__row_nbytes(row);
    chunk->rows[chunk->nrows++] = *row;
    memset(row->col, 0, sizeof row->col);
}

sl__chunk *sl__chunk_error(const sl__error *err)
{
    sl__chunk *c = sl__chunk_new(SL__CHUNK_ERROR, 0);
    if (c)
        sl__err_copy(&c->error, err);
    return c;
}
