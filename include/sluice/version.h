/* version.h: the version of the library a program runs against. */
#ifndef SLUICE_VERSION_H
#define SLUICE_VERSION_H

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
SL_API const char *sl_version(void);

#ifdef __cplusplus
}
#endif
#endif
