/*
 * minijit.h — the demo JIT's compiler as a library.
 *
 * minijit compiles a tiny language (see examples/README.md) straight to x86-64 machine code
 * at run time and announces every function it compiles through jitherald, with its name,
 * a line table (offset -> file:line:column) and frame-pointer unwind information:
 *
 *     jh_ctx *jh;
 *     jh_open(&jh, &(struct jh_options){ .sz = sizeof(struct jh_options), .engine = "minijit" });
 *     char err[256];
 *     mj_program *p = mj_compile("fn sq(x) { return x * x }", "sq.mini", jh, err, sizeof err);
 *     if (!p) { fprintf(stderr, "%s\n", err); ... }      // err: "sq.mini:1:5: error: ..."
 *     int64_t (*sq)(int64_t) = (int64_t (*)(int64_t))mj_lookup(p, "sq");
 *     sq(7);                                              // 49, from JIT code
 *     mj_free(p);                                         // jh_code_remove + release the code
 *     jh_close(jh);
 *
 * Every function starts with `push rbp; mov rbp,rsp` (announced as fp_push_end = 1,
 * fp_set_end = 4) and keeps rbp valid up to its single `leave; ret` at the very end, so a
 * frame-pointer unwinder works from any instruction after the prologue (unless
 * mj_set_no_frame_pointer: no frame record then, raw CFI; see codegen_x64.c). Calls into C (the
 * builtins print() and callback()) are made with a 16-byte aligned stack, so C code, C++
 * exceptions and backtrace() work below JIT frames.
 *
 * Code lives in one process-wide arena of mmap'd chunks (4 MiB each, more added as needed):
 * functions are bump-allocated at 16-byte alignment, so several functions — of several
 * programs and threads — share a page. A program's functions are published as one batch:
 * written while their pages are writable, then made read+exec (mprotect) before any of them
 * is announced and run. A page that already holds published code keeps PROT_EXEC while the
 * batch is copied into it (RWX for that copy only), because another thread may be running
 * code on it. Freed code
 * (mj_free) is reused by later compiles, first fit, so a recompile of the same program
 * after mj_free lands on the same addresses.
 *
 * Thread safety: mj_compile, mj_run, mj_remove_all and mj_free may be called from any thread;
 * distinct programs are independent; one program must not be freed while it runs. The
 * hooks (mj_set_callback, mj_set_print) are process-wide: set them before running code.
 *
 * jh may be NULL everywhere: the code is then compiled and run without being announced.
 */
#ifndef MINIJIT_H
#define MINIJIT_H

#include <stddef.h>
#include <stdint.h>

#include "jitherald.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MJ_MAX_PARAMS 6

typedef struct mj_program mj_program;

/*
 * What minijit knows about one compiled function. With MJ_LOG_STRUCTS these bytes are
 * snapshot into the audit log (jh_log_memory(..., "struct mj_function")), to be decoded
 * offline with this binary's DWARF types: keep the layout plain.
 */
struct mj_function {
    const char *name;           /* NUL-terminated, owned by the program */
    int32_t nparams;
    uint32_t line, column;      /* where `fn` is in the source */
    uint32_t end_line;          /* line of the closing brace */
    void *code;                 /* first byte of the machine code */
    uint64_t code_size;         /* bytes, as announced */
    uint64_t jh_id;             /* jitherald's id (valid while announced != 0) */
    int32_t announced;          /* 1 between jh_code_add and jh_code_remove */
    uint32_t nlines;            /* rows of the line table */
    const struct jh_line *lines;/* the line table announced for the function */
    uint32_t frame_slots;       /* 8-byte locals (params + vars) below rbp */
    uint32_t index;             /* position in the source, 0-based */
};

/* Flags for mj_compile_ex. */
enum {
    /* After announcing each function, log its struct mj_function with jh_log_memory and a
     * "compile" event (name, code, size, function = struct address) with jh_log_event. */
    MJ_LOG_STRUCTS = 1 << 0
};

/*
 * Parse source and compile every function in it, announcing each one on jh (if not NULL)
 * with jh_code_add. filename (may be NULL: "<input>") appears in errors and line tables.
 * Returns NULL on error, with "file:line:col: error: message" in err[0..errlen).
 * An announcement refused by jitherald is an error too (the description would be wrong).
 */
mj_program *mj_compile(const char *source, const char *filename, jh_ctx *jh,
                       char *err, size_t errlen);
mj_program *mj_compile_ex(const char *source, const char *filename, jh_ctx *jh,
                          unsigned flags, char *err, size_t errlen);

/* Entry point of function fn, callable as int64_t (*)(int64_t, ...) with the function's
 * number of int64 arguments (at most 6). NULL if there is no such function. */
void *mj_lookup(mj_program *p, const char *fn);

/* Describe functions: count, by index (source order), by name. NULL when out of range. */
int mj_function_count(const mj_program *p);
const struct mj_function *mj_function_at(const mj_program *p, int i);
const struct mj_function *mj_function_get(const mj_program *p, const char *fn);

/*
 * Call fn with nargs arguments (missing parameters are 0, extra arguments ignored).
 * mj_call returns 0 and stores the result, or -ENOENT (no such function) / -EINVAL.
 * mj_run returns the result directly, or 0 when fn does not exist.
 */
int mj_call(mj_program *p, const char *fn, const int64_t *args, int nargs, int64_t *result);
int64_t mj_run(mj_program *p, const char *fn, const int64_t *args, int nargs);

/* jh_code_remove every announced function of p (the code stays callable and allocated).
 * Returns 0 or the first error jitherald reported. Calling it twice is harmless. */
int mj_remove_all(mj_program *p);

/* Remove what is still announced, release the code to the arena for reuse, free p.
 * Accepts NULL. */
void mj_free(mj_program *p);

/*
 * Host hooks reached from the language. callback(x) calls cb(x) (a real `call` from JIT
 * code through a C function, with a valid frame-pointer chain: the hook may throw a C++
 * exception or call backtrace()); with no hook, callback(x) returns x. print(x) calls
 * fn(x); with no hook it prints x and a newline to stdout (flushed). NULL restores the
 * default.
 */
void mj_set_callback(int64_t (*cb)(int64_t));
void mj_set_print(void (*fn)(int64_t));

/* Read a whole file into a NUL-terminated malloc'd string (free() it), or NULL with a
 * message in err. */
char *mj_read_file(const char *path, char *err, size_t errlen);

/* Bytes of code currently allocated in the arena (for tests of reuse). */
size_t mj_arena_used(void);

/* on: code published from now on stays writable and executable (RWX), as HotSpot, Mono and
 * node keep theirs; off (the default): read+exec once published (W^X). For tests of what
 * tools do with RWX code (elfmap leaves it anonymous, and says so). */
void mj_set_code_rwx(int on);
/* Compile functions from now on without a frame record (rbp is not a frame pointer a
 * walker can follow), described to jitherald as raw CFI (JH_UNWIND_CFI): what a profiler
 * that unwinds with DWARF alone meets. Process-wide; set it before compiling. */
void mj_set_no_frame_pointer(int on);
/* Announce functions from now on with JH_UNWIND_NONE: the control of tests that show a
 * tool unwinds through JIT frames because of what jitherald told it. */
void mj_set_no_unwind_info(int on);

#ifdef __cplusplus
}
#endif

#endif /* MINIJIT_H */
