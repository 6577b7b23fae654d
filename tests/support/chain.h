/*
 * chain.h — the call chain every unwind test walks through, and the check of a walk.
 * minijit code calls down to the host:
 *
 *     host main -> mj_run -> main -> a -> b -> c -> d -> callback(x) (the host's hook)
 *
 * From the hook, an unwinder must cross the five JIT frames (d, c, b, a, main: innermost
 * first) and reach the host's own root function (main, or a thread's start routine).
 * Shared by tests/unit/test_unwind_*.cc and the programs of tests/programs/unwind_*.
 * Nothing here keeps state between calls: threads use it at once.
 */
#ifndef JH_TEST_CHAIN_H
#define JH_TEST_CHAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <unwind.h>

#include "jitherald.h"
#include "minijit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fn d(x) calls callback(x + 1); c, b, a each call the next with x + 1; main calls a(1).
 * Every function adds 1 to what it got back: main returns callback(5) + 5. */
extern const char *const chain_source;

/* chain_source compiled as "chain.mini" (file) and announced on jh (NULL: not announced);
 * NULL, with the compiler's message on stderr, on error. */
mj_program *chain_compile(jh_ctx *jh, const char *file);

/* A context with exactly these channels, the environment ignored, JH_OPT_STRICT; NULL
 * (and a message on stderr) if it cannot open. */
jh_ctx *chain_open(unsigned channels);

/* pc -> the start of its function, by some unwinder's own lookup. */
typedef void *chain_enclosing_fn(void *pc);

/* One walk, fed return addresses innermost first. */
struct chain_walk {
    const mj_program *p;
    const char *const *order;   /* the JIT functions expected, innermost first */
    int want, found;            /* found: how many of them were seen, in order */
    int stray;                  /* frames in a JIT function of p, out of order */
    bool root_reached;          /* the root's frame seen after every JIT frame */
    const void *root;
    chain_enclosing_fn *enclosing;
};

/* entry: the JIT function the host called ("main", or "a" for the four inner frames);
 * root: the host function the walk must reach; enclosing NULL: this program's
 * _Unwind_FindEnclosingFunction. */
void chain_walk_begin(struct chain_walk *w, const mj_program *p, const char *entry,
                      const void *root, chain_enclosing_fn *enclosing);
void chain_walk_pc(struct chain_walk *w, uintptr_t return_address);
/* The next JIT function the walk should meet, NULL once all were met. */
const struct mj_function *chain_walk_next(const struct chain_walk *w);
bool chain_walk_complete(const struct chain_walk *w);
/* "N frames, F of W JIT frames in order, root reached|NOT reached" into buf. */
const char *chain_walk_summary(const struct chain_walk *w, int frames, char *buf, size_t len);

/* Return addresses of the calling thread, innermost first, up to max: by this program's
 * _Unwind_Backtrace, or (both non-NULL) by another unwinder's pair of functions. */
typedef _Unwind_Reason_Code chain_trace_fn(_Unwind_Trace_Fn fn, void *arg);
typedef uintptr_t chain_getip_fn(struct _Unwind_Context *uc);
int chain_unwind_backtrace(void **pcs, int max, chain_trace_fn *trace, chain_getip_fn *getip);

/* What the host's callback does below the JIT frames (the tests' cb_mode). */
enum chain_mode { CHAIN_PASS, CHAIN_THROW, CHAIN_BACKTRACE, CHAIN_UNWIND_BACKTRACE };

/* For CHAIN_BACKTRACE (glibc's backtrace()) and CHAIN_UNWIND_BACKTRACE
 * (chain_unwind_backtrace with this program's unwinder): the calling thread's return
 * addresses into pcs, their number returned. Other modes collect nothing: 0. */
int chain_collect(int mode, void **pcs, int max);

/* The walk over pcs[0..n): complete or not. Unless quiet, its summary is printed,
 * prefixed by what, and so is every JIT frame met out of order. */
bool chain_check(const mj_program *p, const char *entry, const void *root,
                 chain_enclosing_fn *enclosing, void *const *pcs, int n, const char *what,
                 bool quiet);

#ifdef __cplusplus
}
#endif

#endif
