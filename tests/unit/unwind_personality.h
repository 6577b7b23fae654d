/*
 * unwind_personality.h — exceptions through JIT frames that have a personality routine,
 * checked with the unwinder itself (unwind_personality.c): the personality and LSDA given
 * in struct jh_code reach the unwinder, which calls the personality for the JIT frame and
 * lands where it says; and unwind information the process already has for some code (a
 * JIT's own __register_frame, with its own personality, as LuaJIT does) is never shadowed
 * by the channel's. test_unwind_{personality,perfn,llvm} run it with each unwinder.
 */
#ifndef JH_TEST_UNWIND_PERSONALITY_H
#define JH_TEST_UNWIND_PERSONALITY_H

struct unwind_personality {
    int force_mode;             /* 0: the mode the channel detects; else JH__UW_* forced */
    void *unwinder;             /* dlopen handle of the unwinder whose _Unwind_* to use;
                                   NULL: libgcc_s.so.1 */
    int llvm;                   /* the unwinder is LLVM's: a foreign FDE is registered with
                                   __unw_add_dynamic_fde (its __register_frame takes one) */
};

/* Runs every case; returns the exit status (0 pass, 1 fail) after printing the tally. */
int unwind_personality_run(const struct unwind_personality *cfg);

#endif
