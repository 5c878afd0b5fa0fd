/* error.h: the error message buffer that failing objects carry, assertions
 * for programming bugs, and small helpers shared by every layer. */
#ifndef SLUICE_CORE_ERROR_H
#define SLUICE_CORE_ERROR_H

#include <stddef.h>

#include "sluice/status.h"

#define SL_ERRMSG_LEN 512

/* A status plus the message that explains it. */
typedef struct sl__error {
    int status;
    char msg[SL_ERRMSG_LEN];
} sl__error;

/* Records status and a printf-style message into err (err may be NULL).
 * Returns status, so callers can write `return sl__errf(err, SL_EIO, ...)`. */
int sl__errf(sl__error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes the existing message with more context ("map worker: "). */
void sl__err_prefix(sl__error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sl__err_clear(sl__error *err);
/* Writes a printf-style message into a caller's buffer err of err_len bytes
 * (nothing when err is NULL or err_len 0) and returns status: the
 * `char *err, size_t err_len` of the public calls (status.h). */
int sl__err_out(char *err, size_t err_len, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sl__err_copy(sl__error *dst, const sl__error *src);

/* Assertions are for bugs only; bad input returns a status instead. */
void sl__assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));
#define SL_ASSERT(x) ((x) ? (void)0 : sl__assert_fail(#x, __FILE__, __LINE__))

/* The status for a pthread_*_init call that returned e: SL_ENOMEM for
 * ENOMEM, SL_ETHREAD otherwise (EAGAIN: the system lacks resources). Records
 * "<what>: <strerror(e)>" into err (may be NULL) and returns the status. */
int sl__pthread_errf(sl__error *err, int e, const char *what);

/* size_t multiplication that reports overflow (returns 0 on overflow). */
int sl__mul_size(size_t a, size_t b, size_t *out);

#endif
