/* error.c: error message formatting and assertion failure. */
#include "core/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sl__errf(sl__error *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

void sl__err_prefix(sl__error *err, const char *fmt, ...)
{
    char prefix[SL_ERRMSG_LEN];
    size_t plen, mlen;
    va_list ap;
    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Shift the old message right and put the prefix in front, truncating
     * the end if the two do not fit. */
    plen = strlen(prefix);
    mlen = strnlen(err->msg, sizeof err->msg - 1);
    if (plen > sizeof err->msg - 1)
        plen = sizeof err->msg - 1;
    if (mlen > sizeof err->msg - 1 - plen)
        mlen = sizeof err->msg - 1 - plen;
    memmove(err->msg + plen, err->msg, mlen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen + mlen] = '\0';
}

int sl__err_out(char *err, size_t err_len, int status, const char *fmt, ...)
{
    if (err && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return status;
}

void sl__err_clear(sl__error *err)
{
    if (err) {
        err->status = SL_OK;
        err->msg[0] = '\0';
    }
}

void sl__err_copy(sl__error *dst, const sl__error *src)
{
    if (dst && src && dst != src)
        memcpy(dst, src, sizeof *dst);
}

void sl__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "sluice: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

int sl__pthread_errf(sl__error *err, int e, const char *what)
{
    return sl__errf(err, e == ENOMEM ? SL_ENOMEM : SL_ETHREAD, "%s: %s", what, strerror(e));
}

int sl__mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (size_t)-1 / a)
        return 0;
    *out = a * b;
    return 1;
}
