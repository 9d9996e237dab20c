#include "reachd_executor.h"
#include <stddef.h>

// Defined by the Swift runtime (libswift_Concurrency), static or shared.
extern void *swift_task_enqueueGlobal_hook;

int reachd_install_enqueue_global_hook(void *hook) {
    void *expected = NULL;
    return __atomic_compare_exchange_n(&swift_task_enqueueGlobal_hook, &expected, hook, 0, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
}
