/* export.h: SL_API marks the symbols libsluice exports; everything else is
 * hidden (the library is built with -fvisibility=hidden). */
#ifndef SLUICE_EXPORT_H
#define SLUICE_EXPORT_H

#if defined(SLUICE_BUILDING) && defined(__GNUC__)
#define SL_API __attribute__((visibility("default")))
#else
#define SL_API
#endif

#endif
