/* status.c: names and descriptions of sl_status codes. */
#include "sluice/status.h"

const char *sl_strerror(int status)
{
    switch (status) {
    case SL_OK: return "success";
    case SL_EINVAL: return "invalid argument";
    case SL_ENOMEM: return "out of memory";
    case SL_EIO: return "input/output error";
    case SL_EFORMAT: return "malformed data";
    case SL_ESHAPE: return "wrong shape or type";
    case SL_ECLOSED: return "closed";
    case SL_ETIMEDOUT: return "timed out";
    case SL_ETHREAD: return "cannot make a thread or lock";
    case SL_ESTATE: return "invalid state";
    case SL_ENUMERIC: return "numeric error (NaN or infinity)";
    case SL_ECANCELED: return "interrupted";
    case SL_END_OF_EPOCH: return "end of epoch";
    case SL_END_OF_DATA: return "end of data";
    }
    return "unknown status";
}

const char *sl_status_name(int status)
{
    switch (status) {
    case SL_OK: return "SL_OK";
    case SL_EINVAL: return "SL_EINVAL";
    case SL_ENOMEM: return "SL_ENOMEM";
    case SL_EIO: return "SL_EIO";
    case SL_EFORMAT: return "SL_EFORMAT";
    case SL_ESHAPE: return "SL_ESHAPE";
    case SL_ECLOSED: return "SL_ECLOSED";
    case SL_ETIMEDOUT: return "SL_ETIMEDOUT";
    case SL_ETHREAD: return "SL_ETHREAD";
    case SL_ESTATE: return "SL_ESTATE";
    case SL_ENUMERIC: return "SL_ENUMERIC";
    case SL_ECANCELED: return "SL_ECANCELED";
    case SL_END_OF_EPOCH: return "SL_END_OF_EPOCH";
    case SL_END_OF_DATA: return "SL_END_OF_DATA";
    }
    return "SL_UNKNOWN";
}
