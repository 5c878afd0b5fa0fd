/* idx.h: reading IDX files (the MNIST format), plain or gzip-compressed,
 * streamed through zlib (which reads plain files unchanged). The header is
 * a 4-byte magic (0, 0, type, ndim) and ndim big-endian uint32 sizes. */
#ifndef SLUICE_PIPELINE_IDX_H
#define SLUICE_PIPELINE_IDX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define SL__IDX_MAX_DIMS 4

typedef struct sl__idx_header {
    int type;                 /* 0x08: unsigned byte (the only one we read) */
    int ndim;
    uint32_t dims[SL__IDX_MAX_DIMS];
    size_t payload;           /* bytes after the header: the product of dims */
    int compressed;           /* the file is gzip */
    uint64_t file_bytes;      /* the file's size when the header was read */
} sl__idx_header;

/* Reads and checks path's header: the type must be ubyte and ndim equal
 * expect_ndim; the size product must not overflow. For plain files the file
 * size must match the header exactly; for gzip files the announced size
 * must fit the file (deflate compresses at most 1032:1). */
int sl__idx_read_header(const char *path, int expect_ndim, sl__idx_header *hdr,
                        sl__error *err);
/* Reads the payload of path into buf (hdr->payload bytes). Stops with
 * SL_ECLOSED when *stop becomes non-zero. Truncated or corrupt data gives
 * SL_EFORMAT naming the file and the byte offset reached; a gzip file is
 * read to the end of its stream, so its CRC is checked, a stream without
 * its trailer is refused and so is data past the announced size. */
int sl__idx_read_payload(const char *path, const sl__idx_header *hdr, void *buf,
                         const atomic_int *stop, sl__error *err);

#endif
