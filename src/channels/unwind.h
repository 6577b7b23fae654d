/*
 * unwind.h — the unwind channel's shared state and its parts (see unwind.c for the design):
 *   unwind.c          one function at a time, and the channel's hooks
 *   unwind_detect.c   which unwinders the process has, and how to reach them
 *   unwind_runs.c     grouping functions into sorted runs over disjoint ranges
 *   unwind_near.c     memory for runs within 2 GiB of their code (libunwind's tables)
 *   unwind_reclaim.c  freeing what an unwinder may still be reading, after a grace period
 *   unwind_host.c     code inside a region the JIT registered its own FDE over (LuaJIT)
 *   unwind_shadow.c   whether our FDE would hide unwind information already there
 * State is process-wide, not per context: runs of two JIT engines must not interleave.
 */
#ifndef JH__CHANNELS_UNWIND_H
#define JH__CHANNELS_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/lock.h"
#include "channels/channel.h"
#include "channels/unwind_stats.h"

/* Defaults of jh__uw.grace_ns and jh__uw.dyn_delay_ns (tests may change them:
 * jh__unwind_tune_delays). libunwind readers walk its list without a lock: an entry
 * superseded by a new one at the head stays linked DYN_DELAY_NS, for walks that started
 * before the new one was there. */
#define GRACE_NS 2000000000ull
#define DYN_DELAY_NS 20000000ull
#define SPAN_MAX ((uintptr_t)1 << 30)   /* keeps a run's table offsets in int32 */

/* nongnu libunwind's unw_dyn_info_t (libunwind-dynamic.h, stable since 2002), declared here
 * so that the library neither needs libunwind to build nor links it. */
struct uw_dyn_info {
    struct uw_dyn_info *next, *prev;
    uintptr_t start_ip, end_ip, gp;
    int32_t format, pad;
    uintptr_t load_offset;
    struct { uintptr_t name_ptr, segbase, table_len, table_data; } rti;
};
#define UW_INFO_FORMAT_REMOTE_TABLE 2

struct uw_seg;
struct uw_ctx;

/* Memory near JIT code for runs libunwind reads (see img_alloc): mmap'd, carved in order,
 * unmapped when every run carved from it is freed. */
struct uw_chunk {
    uint8_t *base;
    size_t size, used, refs;
};
#define CHUNK_SIZE ((size_t)4 << 20)
#define NCHUNK 8

/* A batch's functions in one allocation and their FDE bytes in another, the buffer they
 * were encoded into (unwind.c: add_held), freed with the last of them: node's 2,182
 * builtins were two allocations each (a fifth of the unwind channel's batch, issue 30),
 * and their ~70 KB of FDEs were then copied once more into the block. */
struct uw_block {
    size_t refs;
    uint8_t *bytes;
};

/* One function with an FDE. */
struct uw_fn {
    uintptr_t start, end;
    uint8_t *run;               /* CIE + FDE + terminator from the CFI encoder; NULL once dead
                                   (in a block: the block's FDE bytes, run_len 0) */
    uint32_t run_len, fde_off, fde_len;
    uint32_t cie;               /* its CIE: index into jh__uw.cies */
    bool dead;
    bool filler;                /* a hosted run's gap (unwind_host.c): never in a seg; its
                                   FDE a template whose range img_build writes in */
    struct uw_seg *seg;         /* NULL when runs are not grouped */
    struct uw_block *block;     /* u and its FDE live in this batch's block: jh__uw_fn_free */
    struct uw_ctx *owner;
    struct uw_fn *prev, *next;  /* owner's live functions */
};

/* A CIE, as the encoder wrote it (fmt/cfi.c: 48 bytes at most). */
struct uw_cie {
    uint8_t b[64];
    uint32_t len;
};

/* A hosted run's filler FDE for one personality (unwind_host.c): encoded once. */
struct uw_filler {
    uint64_t personality;
    struct uw_fn fn;
};

/* One registered run: what libgcc and libunwind read. */
struct uw_img {
    uint8_t *buf;
    size_t len, maplen;         /* maplen != 0: buf was mmap'd near the code */
    struct uw_chunk *chunk;     /* or buf was carved from this chunk */
    void *ob[8];                /* libgcc's struct object (7 words in GCC 12), ours to keep */
    struct uw_dyn_info di;
    int32_t *table;             /* libunwind: (start - buf, fde - buf) pairs */
    bool gcc, dyn;
};

/* A region the JIT registered one FDE of its own over, with its personality (LuaJIT: each
 * machine-code area), whose functions the JIT asked jitherald to describe by passing that
 * same personality: unwind_host.c. */
struct uw_host {
    uintptr_t lo, hi;           /* the JIT's FDE's range */
    uint64_t personality;
};

struct uw_seg {
    uintptr_t lo, hi;           /* lowest start, highest end, dead functions included
                                   (a hosted run: the range it fills, up to the next run
                                   of its region or host.hi) */
    struct uw_fn **fn;          /* sorted by start */
    size_t n, ndead;
    struct uw_img *img;
    bool hosted;                /* a run of host's region, gaps filled (unwind_host.c) */
    struct uw_host host;
};

struct uw_ctx {
    const struct jh__chan_env *env;
    struct uw_fn *live;
    bool told_shadow;           /* the diagnostic about code left to another's FDE, once */
    bool told_host;             /* the one about code described inside such a region */
    _Atomic unsigned said;      /* per-function warnings said once (jh__diag_once) */
    bool batching;              /* inside a batch (jh_code_add_many): adds are held */
    struct jh__entry **held;    /* the batch's entries, grouped at its end */
    size_t nheld, capheld;
    struct uw_fn *tmp;          /* add_held's scratch: the held functions, then into a block */
    struct jh__buf fdes;        /* and their FDEs */
};

struct uw_retired {
    uint64_t when;
    void *p;
    bool img;
};

/* A FIFO of retired things, oldest first. */
struct uw_queue {
    struct uw_retired *a;
    size_t head, len, cap;
};

struct jh__uw_state {
    bool detected;
    int forced, mode;           /* mode: libgcc's side, JH__UW_NONE/LIST/PERFN */
    bool llvm, dyn;             /* LLVM libunwind and nongnu libunwind fed too */
    void (*reg_info)(const void *, void *);
    void *(*dereg_info)(const void *);
    void (*reg_frame)(void *);
    void (*dereg_frame)(void *);
    void (*llvm_add)(uintptr_t);
    void (*llvm_remove)(uintptr_t);
    void (*dyn_register)(struct uw_dyn_info *);
    void (*dyn_cancel)(struct uw_dyn_info *);
    struct uw_seg **seg;
    size_t nseg, segcap;
    struct uw_queue retired;    /* freed grace_ns after retirement */
    struct uw_queue uncancel;   /* libunwind entries to unlink dyn_delay_ns after release */
    uint64_t grace_ns, dyn_delay_ns;
    struct uw_cie *cies;        /* the distinct CIEs ever used (one per personality), */
    size_t ncies, ciecap;       /* which runs copy in front of their FDEs */
    /* Never shadow: each unwinder's own lookup, asked before registering (unwind.c). */
    const void *(*find_fde_gcc)(void *pc, void *bases);
    const void *(*find_fde_llvm)(void *pc, void *bases);
    size_t shadowed;            /* functions left to the unwind info already there */
    size_t hosted;              /* functions described inside such a region, on request */
    struct uw_filler *fillers;  /* one per personality of a hosted region */
    size_t nfillers, capfillers;
    /* jh__uw_host_fill's lists, kept for the next rebuild of a hosted run: a malloc and a
     * free of each at every rebuild (one a LuaJIT trace) otherwise */
    struct uw_fn **fill_all, *fill_gap;
    size_t fill_all_cap, fill_gap_cap;
    uint64_t fill_grown;
    size_t max_fdes, max_runs;
    size_t live, dead, far;
    struct uw_chunk *chunk[NCHUNK];     /* open for carving */
    uint64_t copied, rebuilds;
    uint64_t reused;            /* runs copied from one encoded alike (unwind.c: memo) */
    size_t page;
};
extern struct jh__uw_state jh__uw;
extern struct jh__lock jh__uw_lock;    /* guards jh__uw; inside a context lock */


static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline bool grouped(void) { return jh__uw.mode == JH__UW_LIST || jh__uw.dyn; }
static inline bool per_function(void) { return jh__uw.mode == JH__UW_PERFN || jh__uw.llvm; }

/* unwind.c */
int jh__uw_fn_encode(struct uw_fn *u, const struct jh__func *f);
void jh__uw_fn_free(struct uw_fn *u);       /* u and its FDE bytes */
/* unwind_detect.c */
void jh__uw_detect(void);
const char *jh__uw_mode_name(int mode);
/* unwind_near.c */
uint8_t *jh__uw_img_alloc(struct uw_img *im, size_t len, uintptr_t lo, uintptr_t hi, bool *near);
void jh__uw_img_free(struct uw_img *im);
/* unwind_reclaim.c */
bool jh__uw_queue_push(struct uw_queue *q, void *p, bool img);
void jh__uw_retire(void *p, bool img);
void jh__uw_sweep(void);
void jh__uw_img_release(struct uw_img *im);
/* unwind_host.c */
int jh__uw_host_of(const struct uw_fn *u, uint64_t personality, struct uw_host *h);
int jh__uw_host_fill(const struct uw_seg *s, struct uw_fn ***all, size_t *n);
/* unwind_shadow.c: would u's FDE shadow another's (jh__uw_lock held)? For n functions at
 * once, best sorted by start: shadowed[i] for u[i]. */
bool jh__uw_shadows(const struct uw_fn *u);
void jh__uw_shadows_many(struct uw_fn *const *u, size_t n, bool *shadowed);
/* unwind_runs.c */
struct uw_img *jh__uw_img_build(struct uw_fn **fn, size_t n, uintptr_t lo, uintptr_t hi);
void jh__uw_img_register(struct uw_img *im);
int jh__uw_seg_rebuild(size_t i0, size_t i1, struct uw_fn *add, const struct uw_host *h);
int jh__uw_group_add(struct uw_fn *u, const struct uw_host *h);
/* n functions (not hosted) into runs of their own, as one run where they lie apart from
 * every run (sorted by start, not overlapping): 0, 1 when they do not (add them one at a
 * time), or < 0. */
int jh__uw_group_add_many(struct uw_fn **fn, size_t n);
size_t jh__uw_seg_upper(uintptr_t addr);
int jh__uw_group_clear(uintptr_t start, uintptr_t end);
int jh__uw_group_remove(struct uw_fn *u);
bool jh__uw_run_holds(uintptr_t pc, const void *p);

#endif
