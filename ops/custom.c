/* custom.c: the custom op, which calls a function of the caller's on every
 * sample (see sluice/op.h). Bindings build their callables on it (a Python
 * function in a map), so it checks what the function returns as carefully
 * as the pipeline checks files: a wrong dtype or shape, or no tensor at
 * all, becomes an error naming the op, never a crash further down. */
#include "ops/op_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"

#define CUSTOM_NAME_LEN 48

typedef struct custom_op {
    sl_op base;
    sl_op_custom_options o;
    char name[CUSTOM_NAME_LEN];
} custom_op;

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t custom_options_v1_size =
    offsetof(sl_op_custom_options, reserved0) + sizeof(int32_t);
_Static_assert(sizeof(sl_op_custom_options) ==
                   offsetof(sl_op_custom_options, reserved0) + sizeof(int32_t),
               "sl_op_custom_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_op_custom_options_init_sized(sl_op_custom_options *o, size_t size)
{
    sl_op_custom_options d;
    memset(&d, 0, sizeof d);
    d.name = "custom";
    sl__options_init(o, size, &d, sizeof d);
}

static int custom_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                        sl__error *err)
{
    const custom_op *c = (const custom_op *)op;
    char msg[SL_ERRMSG_LEN] = "";
    int rc;
    if (!c->o.infer) {
        *out = *in;
        for (int d = 0; d < out->ndim; d++)
            out->shape[d] = -1;
        return SL_OK;
    }
    rc = c->o.infer(c->o.user, in, out, msg, sizeof msg);
    if (rc != SL_OK)
        return sl__errf(err, rc < 0 ? rc : SL_ESHAPE, "%s: %s", c->name,
                        msg[0] ? msg : sl_strerror(rc < 0 ? rc : SL_ESHAPE));
    if (out->ndim < 0 || out->ndim > SL_MAX_DIMS || sl_dtype_size(out->dtype) == 0)
        return sl__errf(err, SL_ESHAPE, "%s: its infer function gave an invalid spec (dtype %d, "
                        "%d dimensions)", c->name, (int)out->dtype, out->ndim);
    return SL_OK;
}

/* SL_OK if t agrees with what infer says op makes of in's spec. */
static int check_output(const custom_op *c, const sl_tensor *in, const sl_tensor *t,
                        sl__error *err)
{
    sl_tensor_spec ins, want;
    char a[96], b[96];
    int rc, ok;
    ins.dtype = in->dtype;
    ins.ndim = in->ndim;
    memcpy(ins.shape, in->shape, sizeof ins.shape);
    rc = custom_infer(&c->base, &ins, &want, err);
    if (rc != SL_OK)
        return rc;
    ok = t->dtype == want.dtype && t->ndim == want.ndim;
    for (int d = 0; ok && d < t->ndim; d++)
        ok = want.shape[d] < 0 || want.shape[d] == t->shape[d];
    if (ok)
        return SL_OK;
    return sl__errf(err, SL_ESHAPE, "%s: returned %s %s where its infer function said %s %s",
                    c->name, sl_dtype_name(t->dtype), sl_shape_str(a, sizeof a, t->ndim, t->shape),
                    sl_dtype_name(want.dtype), sl_shape_str(b, sizeof b, want.ndim, want.shape));
}

static int custom_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const custom_op *c = (const custom_op *)op;
    char msg[SL_ERRMSG_LEN] = "";
    uint64_t seed = op->random ? sl__rng_next(&ctx->rng) : 0;
    sl_tensor *res = NULL;
    int rc;
    *out = NULL;
    /* fn may keep a reference past the call (a Python function may store
     * the array it was given): the tensor then holds its pool, as a row
     * handed to the user does. This worker owns the row, so it may. */
    sl__tensor_escape(in);
    rc = c->o.fn(c->o.user, in, &res, seed, msg, sizeof msg);
    if (rc != SL_OK) {
        /* A function that says it failed but returns a tensor: drop it. */
        sl_tensor_release(res);
        sl_tensor_release(in);
        rc = rc < 0 ? rc : SL_EINVAL;
        return sl__errf(ctx->err, rc, "%s: %s", c->name, msg[0] ? msg : sl_strerror(rc));
    }
    if (!res) {
        sl_tensor_release(in);
        return sl__errf(ctx->err, SL_ESTATE, "%s: returned success but no tensor", c->name);
    }
    if (c->o.infer && (rc = check_output(c, in, res, ctx->err)) != SL_OK) {
        sl_tensor_release(res);
        sl_tensor_release(in);
        return rc;
    }
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static void custom_destroy(sl_op *op)
{
    custom_op *c = (custom_op *)op;
    if (c->o.destroy)
        c->o.destroy(c->o.user);
}

/* Every custom op shares this table; its own name is in the struct
 * (sl_op_name asks sl__op_custom_name). */
static const sl_op_iface custom_iface = {
    .name = "custom",
    .infer = custom_infer,
    .run = custom_run,
    .destroy = custom_destroy,
};

const char *sl__op_custom_name(const sl_op *op)
{
    return op->iface == &custom_iface ? ((const custom_op *)op)->name : NULL;
}

int sl_op_custom_new(sl_op **out, const sl_op_custom_options *user, char *err, size_t err_len)
{
    sl_op_custom_options o;
    sl__error e;
    sl_op *op = NULL;
    custom_op *c;
    int rc;
    *out = NULL;
    sl__err_clear(&e);
    sl_op_custom_options_init(&o);
    rc = sl__options_read(&o, sizeof o, custom_options_v1_size, user, "sl_op_custom_options",
                          &e);
    if (rc == SL_OK && !user)
        rc = sl__errf(&e, SL_EINVAL, "custom op: no options given");
    if (rc == SL_OK && !o.fn)
        rc = sl__errf(&e, SL_EINVAL, "custom op: fn is not set");
    if (rc == SL_OK && (!o.name || !o.name[0] || strlen(o.name) >= CUSTOM_NAME_LEN))
        rc = sl__errf(&e, SL_EINVAL, "custom op: name must have 1 to %d characters",
                      CUSTOM_NAME_LEN - 1);
    if (rc == SL_OK && o.reserved0 != 0)
        rc = sl__errf(&e, SL_EINVAL, "custom op: reserved0 must be 0");
    if (rc == SL_OK && o.random != 0 && o.random != 1)
        rc = sl__errf(&e, SL_EINVAL, "custom op: random must be 0 or 1, got %d", o.random);
    if (rc == SL_OK && (rc = sl__op_alloc(&op, sizeof *c, &custom_iface, o.random)) != SL_OK)
        sl__errf(&e, rc, "custom op: out of memory");
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "%s", e.msg);
    c = (custom_op *)op;
    c->o = o;
    snprintf(c->name, sizeof c->name, "%s", o.name);
    c->o.name = c->name;
    *out = &c->base;
    return SL_OK;
}
