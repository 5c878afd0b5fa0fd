/* version.h: the version of the library a program runs against. */
#ifndef SLUICE_VERSION_H
#define SLUICE_VERSION_H

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
SL_API const char *sl_version(void);
/* The vector path the kernels run: "avx512", "avx2" or "generic", chosen
 * once per process from what the CPU supports, capped by the environment
 * variable SLUICE_CPU (one of those names) to run a lesser machine's path. */
SL_API const char *sl_cpu_path(void);
/* 1 if name is one of the paths SLUICE_CPU may name. */
SL_API int sl_cpu_path_valid(const char *name);

#ifdef __cplusplus
}
#endif
#endif
