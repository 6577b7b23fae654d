/*
 * run_close.h — not public API: jitherald run's preload's own (adapters/preload/preload.c),
 * exported beside jh_* as the LuaJIT adapter's calls are (src/jitherald.map), defined in
 * core/context.c. Declared here, in base, because the preload may include base but not
 * core (scripts/check-layers.sh): one declaration for both.
 */
#ifndef JH__BASE_RUN_CLOSE_H
#define JH__BASE_RUN_CLOSE_H

#include "jitherald.h"

/*
 * The audit log of a live context closed now, as jh_close would close it (its `close`
 * record written: `jitherald log` says the process ended), while the context and its other
 * channels stay open for the threads still running (the preload calls it at exit: gdb and
 * unwind must name the code to the end). Code added afterwards is not recorded, and the
 * channel is not switched on again: jh_channels_set asking for it returns -ESHUTDOWN, the
 * other channels switched as asked (a `jitherald attach --on auditlog` arriving during
 * exit would otherwise start a log that never gets its `close`).
 *
 * The contract, which the public API cannot keep and why this is not public: no
 * jh_log_memory or jh_log_event on ctx may run at the same time or later. Those run
 * without the context lock (the audit log's lock-free entry points), and so switching the
 * log off (jh_channels_set, a failure) keeps its file open until jh_close; here its state
 * is freed at once. The preload never calls them. Adds, removals and moves from other
 * threads are safe: this takes the context lock. Returns 1 if a log was closed, 0 if ctx
 * had none open, -EINVAL for ctx NULL.
 */
JH_API int jh_run_auditlog_close(jh_ctx *ctx);

#endif
