/* status.h: the status codes every fallible sluice call returns.
 *
 * The rule: every fallible call returns a status, SL_OK (0) or a negative
 * code that sl_strerror() names. The message (file, sample, stage) goes into
 * the object the call was made on, read with sl_<object>_last_error(). A
 * call that has no object yet (a constructor that can fail on its
 * arguments), or whose object is shared read-only between threads (an op),
 * takes a caller buffer named `char *err, size_t err_len` (may be NULL, 0). */
#ifndef SLUICE_STATUS_H
#define SLUICE_STATUS_H

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_status {
    SL_OK = 0,
    SL_EINVAL = -1,    /* an argument is out of range or inconsistent */
    SL_ENOMEM = -2,    /* an allocation failed */
    SL_EIO = -3,       /* a file could not be opened or read */
    SL_EFORMAT = -4,   /* a file's content is malformed (magic, size, codec) */
    SL_ESHAPE = -5,    /* a tensor has the wrong shape or type for an op */
    SL_ECLOSED = -6,   /* the queue or pipeline was shut down */
    SL_ETIMEDOUT = -7, /* a blocking call waited longer than allowed */
    SL_ETHREAD = -8,   /* a thread, lock or condition variable could not be made */
    SL_ESTATE = -9,    /* the call is not valid in the object's state */
    SL_ENUMERIC = -10, /* a computation gave NaN or infinity (a diverging loss) */
    SL_ECANCELED = -11 /* the call was interrupted (a stop was asked for) */
} sl_status;

/* Positive results of sl_iterator_next(): not errors, events. */
enum {
    SL_END_OF_EPOCH = 1, /* the current epoch ended; call next again for the next one */
    SL_END_OF_DATA = 2   /* every epoch has been delivered */
};

/* A short, static description of a status ("invalid argument"). */
SL_API const char *sl_strerror(int status);
/* The enum name of a status ("SL_EINVAL"). */
SL_API const char *sl_status_name(int status);

#ifdef __cplusplus
}
#endif
#endif
