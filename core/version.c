/* version.c: the library's version, from configure. */
#include "config.h"
#include "sluice/version.h"

const char *sl_version(void)
{
    return PACKAGE_VERSION;
}
