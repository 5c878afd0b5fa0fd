/* idx.c: IDX header checks and payload streaming through zlib. */
#include "pipeline/idx.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_TYPE_UBYTE 0x08
#define IDX_READ_BLOCK (1u << 20) /* check for a stop request every MiB */
#define DEFLATE_MAX_RATIO 1032u   /* zlib's bound on uncompressed / compressed */
/* zlib's input buffer when reading a payload (its output buffer is twice
 * that): IDX_BUFFER_MAX for large files, the file's size for smaller ones,
 * but not under zlib's default. A fixed 256 KiB made reading a 10-byte
 * label file allocate 768 KiB. */
#define IDX_BUFFER_MAX (256u * 1024u)
#define IDX_BUFFER_MIN (8u * 1024u)

/* The error text of a failed gzread: zlib's message, or errno's. */
/* The error text of a failed gzread: zlib's message (without the file name
 * zlib puts in front, which our messages already give), or errno's. */
static const char *gz_message(gzFile gz, const char *path)
{
    int zerr = 0;
    const char *msg = gzerror(gz, &zerr);
    size_t n = strlen(path);
    if (zerr == Z_ERRNO)
        return strerror(errno);
    if (!msg || !*msg)
        return "unexpected end of file";
    if (strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        return msg + n + 2;
    return msg;
}

static int read_exact(gzFile gz, void *buf, size_t n, size_t *got)
{
    size_t total = 0;
    while (total < n) {
        unsigned want = (unsigned)(n - total > IDX_READ_BLOCK ? IDX_READ_BLOCK : n - total);
        int r = gzread(gz, (char *)buf + total, want);
        if (r <= 0)
            break;
        total += (size_t)r;
    }
    *got = total;
    return total == n ? 0 : -1;
}

int sl__idx_read_header(const char *path, int expect_ndim, sl__idx_header *hdr,
                        sl__error *err)
{
    unsigned char head[4 + 4 * SL__IDX_MAX_DIMS];
    size_t got = 0;
    struct stat st;
    gzFile gz;

    memset(hdr, 0, sizeof *hdr);
    if (stat(path, &st) != 0)
        return sl__errf(err, SL_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sl__errf(err, SL_EIO, "%s: not a regular file", path);
    gz = gzopen(path, "rb");
    if (!gz)
        return sl__errf(err, SL_EIO, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    if (read_exact(gz, head, 4, &got) != 0) {
        int rc = sl__errf(err, SL_EFORMAT, "%s: truncated header (%zu of 4 magic bytes)", path, got);
        gzclose(gz);
        return rc;
    }
    hdr->compressed = !gzdirect(gz);
    hdr->file_bytes = (uint64_t)st.st_size;
    if (head[0] != 0 || head[1] != 0 || head[2] != IDX_TYPE_UBYTE || head[3] != expect_ndim) {
        gzclose(gz);
        return sl__errf(err, SL_EFORMAT,
                        "%s: wrong magic number 0x%02x%02x%02x%02x (expected 0x000008%02x: an IDX "
                        "file of unsigned bytes with %d dimensions)",
                        path, head[0], head[1], head[2], head[3], expect_ndim, expect_ndim);
    }
    hdr->type = head[2];
    hdr->ndim = head[3];
    if (read_exact(gz, head + 4, 4 * (size_t)hdr->ndim, &got) != 0) {
        gzclose(gz);
        return sl__errf(err, SL_EFORMAT, "%s: truncated header (%zu of %d dimension bytes)", path,
                        got, 4 * hdr->ndim);
    }
    gzclose(gz);
    hdr->payload = 1;
    for (int i = 0; i < hdr->ndim; i++) {
        const unsigned char *p = head + 4 + 4 * i;
        hdr->dims[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (!sl__mul_size(hdr->payload, hdr->dims[i], &hdr->payload))
            return sl__errf(err, SL_EFORMAT, "%s: dimensions overflow (dimension %d is %u)", path,
                            i, hdr->dims[i]);
    }
    if (hdr->compressed) {
        /* Deflate never compresses more than 1032:1, so a header announcing
         * more is bogus: refuse it now rather than allocate for it. */
        if (hdr->payload / DEFLATE_MAX_RATIO > (uint64_t)st.st_size)
            return sl__errf(err, SL_EFORMAT,
                            "%s: header announces %zu bytes of data but a gzip file of %lld "
                            "bytes cannot hold more than %llu (corrupt header?)",
                            path, hdr->payload, (long long)st.st_size,
                            (unsigned long long)st.st_size * DEFLATE_MAX_RATIO);
    } else {
        size_t header_bytes = 4 + 4 * (size_t)hdr->ndim;
        if ((uint64_t)st.st_size != header_bytes + hdr->payload)
            return sl__errf(err, SL_EFORMAT,
                            "%s: file is %lld bytes but its header announces %zu bytes of data "
                            "after %zu header bytes (%s)",
                            path, (long long)st.st_size, hdr->payload, header_bytes,
                            (uint64_t)st.st_size < header_bytes + hdr->payload ? "truncated"
                                                                                : "trailing bytes");
    }
    return SL_OK;
}

int sl__idx_read_payload(const char *path, const sl__idx_header *hdr, void *buf,
                         const atomic_int *stop, sl__error *err)
{
    size_t header_bytes = 4 + 4 * (size_t)hdr->ndim;
    unsigned char skip[4 + 4 * SL__IDX_MAX_DIMS];
    size_t total = 0, got = 0, body;
    int rc = SL_OK;
    unsigned buffer = hdr->file_bytes < IDX_BUFFER_MAX ? (unsigned)hdr->file_bytes : IDX_BUFFER_MAX;
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return sl__errf(err, SL_EIO, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    gzbuffer(gz, buffer > IDX_BUFFER_MIN ? buffer : IDX_BUFFER_MIN);
    if (read_exact(gz, skip, header_bytes, &got) != 0) {
        rc = sl__errf(err, SL_EFORMAT, "%s: truncated header", path);
        goto done;
    }
    /* Of a gzip payload, the last byte is left for the read of the end of
     * the stream below. */
    body = hdr->compressed && hdr->payload > 0 ? hdr->payload - 1 : hdr->payload;
    while (total < body) {
        size_t want = body - total;
        int r;
        if (stop && atomic_load_explicit(stop, memory_order_relaxed)) {
            rc = sl__errf(err, SL_ECLOSED, "%s: reading stopped", path);
            goto done;
        }
        if (want > IDX_READ_BLOCK)
            want = IDX_READ_BLOCK;
        r = gzread(gz, (char *)buf + total, (unsigned)want);
        if (r < 0) {
            rc = sl__errf(err, SL_EFORMAT, "%s: corrupt data after %zu bytes of %zu: %s", path,
                          total, hdr->payload, gz_message(gz, path));
            goto done;
        }
        if (r == 0) {
            int zerr = 0;
            gzerror(gz, &zerr);
            rc = sl__errf(err, SL_EFORMAT, "%s: truncated data: %zu of %zu bytes (%s)", path,
                          total, hdr->payload,
                          zerr != Z_OK ? gz_message(gz, path) : "unexpected end of file");
            goto done;
        }
        total += (size_t)r;
    }
    if (hdr->compressed) {
        /* The end of the stream: the payload's last byte and one byte more,
         * asked for at once. Asking for more than the stream holds makes
         * zlib inflate to its end, where it checks the CRC and length in
         * the gzip trailer (corruption the inflater could not see) or finds
         * the stream cut short; a byte past the announced size is refused,
         * as for plain files. A read that stopped at the last byte of data
         * would not do: once zlib has used up the file, it reports its end
         * with no error even when the trailer is missing. */
        unsigned char tail[2];
        unsigned want = (unsigned)(hdr->payload - total) + 1;
        int zerr = Z_OK;
        int r = gzread(gz, tail, want);
        gzerror(gz, &zerr);
        if (r < 0)
            rc = sl__errf(err, SL_EFORMAT, "%s: corrupt data after %zu bytes of %zu: %s", path,
                          total, hdr->payload, gz_message(gz, path));
        else if ((unsigned)r + 1 < want)
            rc = sl__errf(err, SL_EFORMAT, "%s: truncated data: %zu of %zu bytes (%s)", path,
                          total, hdr->payload,
                          zerr != Z_OK ? gz_message(gz, path) : "unexpected end of file");
        else if (zerr != Z_OK)
            rc = sl__errf(err, SL_EFORMAT, "%s: corrupt gzip stream after its %zu bytes of data: %s",
                          path, hdr->payload, gz_message(gz, path));
        else if ((unsigned)r == want)
            rc = sl__errf(err, SL_EFORMAT,
                          "%s: more data than the %zu bytes its header announces (trailing bytes)",
                          path, hdr->payload);
        else if (want == 2)
            ((unsigned char *)buf)[total] = tail[0];
    }
done:
    gzclose(gz);
    return rc;
}
