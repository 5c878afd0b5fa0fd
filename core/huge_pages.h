/* huge_pages.h: asking the kernel to back a large array read at random
 * with huge pages. A sample source that keeps a whole dataset in memory
 * (MNIST: 47 MB) reads one sample here, the next one far away: with 4 KiB
 * pages nearly every sample costs a TLB miss, and the page walk stalls the
 * prefetch that should hide the sample's cache misses. With 2 MiB pages
 * the whole array fits the TLB. */
#ifndef SLUICE_CORE_HUGE_PAGES_H
#define SLUICE_CORE_HUGE_PAGES_H

#include <stddef.h>

/* Advises huge pages for the 2 MiB-aligned pages inside [p, p + n), to be
 * called before the memory is first written. Best effort: where the kernel
 * has transparent huge pages off, or the range holds no aligned 2 MiB
 * page, nothing changes and nothing fails. */
void sl__huge_pages_advise(void *p, size_t n);

#endif
