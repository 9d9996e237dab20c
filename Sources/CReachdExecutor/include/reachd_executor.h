#pragma once

/// Makes `hook` Swift Concurrency's global enqueue hook (`swift_task_enqueueGlobal_hook`), if no hook is set yet:
/// 1 if it is now, 0 if another was there. By reference, not by `dlsym`: the static Swift runtime of the installed
/// daemon exports no symbol, so NIO's own take-over cannot find the hook there.
int reachd_install_enqueue_global_hook(void *hook);
