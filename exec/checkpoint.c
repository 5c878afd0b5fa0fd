/* checkpoint.c: saving and loading parameters (format in checkpoint.h). */
#include "sluice/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/atomic_file.h"
#include "core/tensor_impl.h"
#include "exec/graph_impl.h"

#define MAGIC "SLUICECK"
#define VERSION 2u /* 1: no data position; still read */
#define HEADER_BYTES (8 + 4 + 4 + 8)
#define POSITION_BYTES (4 + 4 + 8 + 8 + 8 + 8)

/* --- little-endian encoding ------------------------------------------ */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Writes n bytes and folds them into the running CRC. */
static int write_crc(FILE *f, const void *p, size_t n, uLong *crc)
{
    *crc = crc32(*crc, p, (uInt)n);
    return fwrite(p, 1, n, f) == n ? 0 : -1;
}

/* The values as little-endian float32, whatever the host's byte order. */
static int write_floats(FILE *f, const float *v, size_t n, uLong *crc)
{
    unsigned char buf[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], 4);
        put_u32(buf + k, bits);
        k += 4;
        if (k == sizeof buf || i + 1 == n) {
            if (write_crc(f, buf, k, crc) < 0)
                return -1;
            k = 0;
        }
    }
    return 0;
}

int sl_checkpoint_save(sl_graph *g, const char *path, int64_t global_step)
{
    return sl_checkpoint_save_at(g, path, global_step, NULL);
}

int sl_checkpoint_save_at(sl_graph *g, const char *path, int64_t global_step,
                          const sl_checkpoint_position *pos)
{
    unsigned char head[HEADER_BYTES], buf[2 + SL_NODE_NAME_LEN + 2 + 8 * SL_MAX_DIMS];
    uLong crc = crc32(0L, Z_NULL, 0);
    sl__atomic_file af;
    size_t nparams = 0;
    int failed = 0, rc;

    rc = sl__atomic_open(&af, path, &g->err);
    if (rc < 0) {
        sl__err_prefix(&g->err, "checkpoint ");
        return rc;
    }
    for (size_t i = 0; i < g->nnodes; i++)
        nparams += g->nodes[i].op == SL__OP_PARAM;
    memcpy(head, MAGIC, 8);
    put_u32(head + 8, VERSION);
    put_u32(head + 12, (uint32_t)nparams);
    put_u64(head + 16, (uint64_t)global_step);
    failed = write_crc(af.f, head, sizeof head, &crc) < 0;
    for (size_t i = 0; i < g->nnodes && !failed; i++) {
        const sl__graph_node *n = &g->nodes[i];
        size_t len = strlen(n->name), k = 0;
        if (n->op != SL__OP_PARAM)
            continue;
        buf[k++] = (unsigned char)(len & 0xff);
        buf[k++] = (unsigned char)(len >> 8);
        memcpy(buf + k, n->name, len);
        k += len;
        buf[k++] = (unsigned char)SL_FLOAT32;
        buf[k++] = (unsigned char)n->ndim;
        for (int d = 0; d < n->ndim; d++, k += 8)
            put_u64(buf + k, (uint64_t)n->shape[d]);
        failed = write_crc(af.f, buf, k, &crc) < 0 ||
                 write_floats(af.f, n->data, n->numel, &crc) < 0;
    }
    if (!failed) {
        unsigned char posn[POSITION_BYTES];
        memset(posn, 0, sizeof posn);
        if (pos && pos->saved) {
            /* bit 0: a position; bits 8..23: the ranks beyond one (0: one,
             * as files from before ranks read) */
            put_u32(posn, 1u | (pos->ranks > 1 ? (uint32_t)pos->ranks << 8 : 0u));
            put_u32(posn + 4, pos->devices > 1 ? (uint32_t)pos->devices : 0u);
            put_u64(posn + 8, pos->seed);
            put_u64(posn + 16, (uint64_t)pos->steps_per_epoch);
            put_u64(posn + 24, (uint64_t)pos->epoch);
            put_u64(posn + 32, (uint64_t)pos->rows);
        }
        failed = write_crc(af.f, posn, sizeof posn, &crc) < 0;
    }
    if (!failed) {
        unsigned char tail[4];
        put_u32(tail, (uint32_t)crc);
        failed = fwrite(tail, 1, 4, af.f) != 4;
    }
    rc = sl__atomic_close(&af, failed, &g->err);
    if (rc < 0)
        sl__err_prefix(&g->err, "checkpoint ");
    return rc;
}

/* --- loading --------------------------------------------------------- */

/* One entry of a file being read: where its values are. */
typedef struct entry {
    int node;                   /* the graph's parameter, or -1 (skipped) */
    const unsigned char *values; /* numel little-endian floats */
} entry;

static int read_file(sl_graph *g, const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    if (!f)
        return sl__errf(&g->err, SL_EIO, "checkpoint %s: cannot open: %s", path,
                        strerror(errno));
    for (;;) {
        size_t got;
        if (n == cap) {
            unsigned char *nb;
            cap = cap ? cap * 2 : 1 << 16;
            nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return sl__errf(&g->err, SL_ENOMEM, "checkpoint %s: out of memory", path);
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        return sl__errf(&g->err, SL_EIO, "checkpoint %s: read error", path);
    }
    fclose(f);
    *data = buf;
    *size = n;
    return SL_OK;
}

static int find_param(const sl_graph *g, const char *name)
{
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == SL__OP_PARAM && strcmp(g->nodes[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Parses and checks the whole file against g; fills entries. Returns 1
 * (and no message) when the file ends too early. */
static int parse(sl_graph *g, const char *path, const unsigned char *p, size_t body,
                 entry *entries, uint32_t count, char *seen)
{
    size_t at = HEADER_BYTES;
    for (uint32_t e = 0; e < count; e++) {
        char name[SL_NODE_NAME_LEN], want[96], got[96];
        int64_t shape[SL_MAX_DIMS];
        size_t len, numel = 1;
        int ndim, id;
        const sl__graph_node *n;
        if (body - at < 2)
            goto truncated;
        len = (size_t)p[at] | (size_t)p[at + 1] << 8;
        at += 2;
        if (len == 0 || len >= SL_NODE_NAME_LEN)
            return sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: entry %u has a name of %zu bytes",
                            path, e, len);
        if (body - at < len + 2)
            goto truncated;
        memcpy(name, p + at, len);
        name[len] = '\0';
        at += len;
        if (p[at] != SL_FLOAT32)
            return sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: '%s' has dtype %u, not float32",
                            path, name, p[at]);
        ndim = p[at + 1];
        at += 2;
        if (ndim < 1 || ndim > SL_MAX_DIMS)
            return sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: '%s' has rank %d", path, name,
                            ndim);
        if (body - at < (size_t)ndim * 8)
            goto truncated;
        for (int d = 0; d < ndim; d++, at += 8) {
            shape[d] = (int64_t)get_u64(p + at);
            if (shape[d] < 1 || (uint64_t)shape[d] > (body / 4) ||
                !sl__mul_size(numel, (size_t)shape[d], &numel))
                return sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: '%s' has a bad size %lld",
                                path, name, (long long)shape[d]);
        }
        if (numel > (body - at) / 4)
            goto truncated;
        entries[e].values = p + at;
        at += numel * 4;
        id = find_param(g, name);
        if (id < 0 && strncmp(name, "moments.", 8) == 0) {
            entries[e].node = -1; /* an accumulator this graph has no optimizer for */
            continue;
        }
        if (id < 0)
            return sl__errf(&g->err, SL_EFORMAT,
                            "checkpoint %s: has '%s', which this network has no parameter "
                            "for (a checkpoint of another network?)",
                            path, name);
        n = &g->nodes[id];
        if (seen[id])
            return sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: '%s' appears twice", path, name);
        if (!sl__shape_equal(ndim, shape, n->ndim, n->shape))
            return sl__errf(&g->err, SL_EFORMAT,
                            "checkpoint %s: '%s' is %s in the file but %s in the network", path,
                            name, sl_shape_str(got, sizeof got, ndim, shape),
                            sl__graph_node_shape_str(n, want, sizeof want));
        seen[id] = 1;
        entries[e].node = id;
    }
    if (at != body)
        return sl__errf(&g->err, SL_EFORMAT,
                        "checkpoint %s: %zu unexpected bytes after the last entry", path,
                        body - at);
    return SL_OK;
truncated:
    return 1;
}

/* Reads the data position section at q, checking it fits global step
 * `step`: at most that many batches lie before it. */
static int read_position(sl_graph *g, const char *path, const unsigned char *q, int64_t step,
                         sl_checkpoint_position *out)
{
    sl_checkpoint_position pos;
    memset(&pos, 0, sizeof pos);
    if (!(get_u32(q) & 1)) {
        *out = pos;
        return SL_OK;
    }
    pos.saved = 1;
    pos.ranks = (int32_t)((get_u32(q) >> 8) & 0xffffu);
    pos.devices = (int32_t)get_u32(q + 4);
    pos.seed = get_u64(q + 8);
    pos.steps_per_epoch = (int64_t)get_u64(q + 16);
    pos.epoch = (int64_t)get_u64(q + 24);
    pos.rows = (int64_t)get_u64(q + 32);
    if (pos.devices < 0 || pos.devices > 64)
        return sl__errf(&g->err, SL_EFORMAT,
                        "checkpoint %s: its data position was trained on %d devices", path,
                        (int)pos.devices);
    if (pos.steps_per_epoch < 1 || pos.epoch < 0 || pos.rows < 0 ||
        pos.rows >= pos.steps_per_epoch || step < pos.rows ||
        pos.epoch > (step - pos.rows) / pos.steps_per_epoch)
        return sl__errf(&g->err, SL_EFORMAT,
                        "checkpoint %s: its data position (epoch %lld, batch %lld of %lld) does "
                        "not fit its global step %lld",
                        path, (long long)pos.epoch, (long long)pos.rows,
                        (long long)pos.steps_per_epoch, (long long)step);
    *out = pos;
    return SL_OK;
}

int sl_checkpoint_load(sl_graph *g, const char *path, int64_t *global_step)
{
    return sl_checkpoint_load_at(g, path, global_step, NULL);
}

int sl_checkpoint_load_at(sl_graph *g, const char *path, int64_t *global_step,
                          sl_checkpoint_position *pos)
{
    sl_checkpoint_position posn;
    unsigned char *p = NULL;
    uint32_t version;
    size_t body; /* where the entries end */

    memset(&posn, 0, sizeof posn);
    entry *entries = NULL;
    char *seen = NULL;
    size_t size = 0;
    uint32_t count, stored, computed;
    int rc = read_file(g, path, &p, &size);

    if (rc < 0)
        return rc;
    if (size < HEADER_BYTES + 4 || memcmp(p, MAGIC, 8) != 0) {
        rc = sl__errf(&g->err, SL_EFORMAT,
                      size >= 8 && memcmp(p, MAGIC, 8) == 0
                          ? "checkpoint %s: truncated (%zu bytes)"
                          : "checkpoint %s: not a sluice checkpoint (%zu bytes, no SLUICECK "
                            "header)",
                      path, size);
        goto out;
    }
    version = get_u32(p + 8);
    if (version != 1 && version != VERSION) {
        rc = sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: version %u; this sluice reads 1 to %u",
                      path, version, VERSION);
        goto out;
    }
    if (version >= 2 && size < HEADER_BYTES + POSITION_BYTES + 4) {
        rc = sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: truncated (%zu bytes)", path, size);
        goto out;
    }
    body = size - 4 - (version >= 2 ? POSITION_BYTES : 0);
    count = get_u32(p + 12);
    if (count > size / 4) {
        rc = sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: claims %u entries in %zu bytes", path,
                      count, size);
        goto out;
    }
    entries = calloc((size_t)count + 1, sizeof *entries);
    seen = calloc(g->nnodes + 1, 1);
    if (!entries || !seen) {
        rc = sl__errf(&g->err, SL_ENOMEM, "checkpoint %s: out of memory", path);
        goto out;
    }
    stored = get_u32(p + size - 4);
    computed = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)(size - 4));
    rc = parse(g, path, p, body, entries, count, seen);
    /* A short file is "truncated"; otherwise a bad CRC explains any oddity
     * better than what parsing the damaged bytes tripped on. */
    if (rc == 1) {
        rc = sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: truncated (%zu bytes)", path, size);
        goto out;
    }
    if (stored != computed) {
        rc = sl__errf(&g->err, SL_EFORMAT,
                      "checkpoint %s: corrupt (CRC-32 %08x stored, %08x computed)", path,
                      stored, computed);
        goto out;
    }
    if (rc < 0)
        goto out;
    if (version >= 2 && (rc = read_position(g, path, p + body, (int64_t)get_u64(p + 16), &posn)) < 0)
        goto out;
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == SL__OP_PARAM && g->nodes[i].trainable && !seen[i]) {
            rc = sl__errf(&g->err, SL_EFORMAT, "checkpoint %s: has no '%s'", path,
                          g->nodes[i].name);
            goto out;
        }
    /* Everything checked: now copy. */
    for (uint32_t e = 0; e < count; e++) {
        sl__graph_node *n;
        if (entries[e].node < 0)
            continue;
        n = &g->nodes[entries[e].node];
        for (size_t k = 0; k < n->numel; k++) {
            uint32_t bits = get_u32(entries[e].values + 4 * k);
            memcpy(&n->data[k], &bits, 4);
        }
    }
    if (global_step)
        *global_step = (int64_t)get_u64(p + 16);
    if (pos)
        *pos = posn;
out:
    free(p);
    free(entries);
    free(seen);
    return rc;
}
