/* huge_pages.c: see huge_pages.h. */
#include "core/huge_pages.h"

#include <stdint.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

void sl__huge_pages_advise(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    uintptr_t begin = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t end = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
    if (end > begin)
        (void)madvise((void *)begin, end - begin, MADV_HUGEPAGE); /* advice: may be refused */
#else
    (void)p;
    (void)n;
#endif
}
