/* budget.h: the old name of sluice/thread_budget.h, kept so that programs
 * written against it still build (docs/api-changes.md). */
#include "sluice/thread_budget.h"
