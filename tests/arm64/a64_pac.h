/*
 * a64_pac.h — whether a run of a tests/arm64 control proved anything, and running it again
 * when it did not (C and C++; not a test: included by test_a64_*.c/.cc).
 * A process signs with keys of its own, and Linux (qemu-user too) leaves the top byte of a
 * user address to the program (TBI), so a pointer-authentication code is 7 bits (48-54):
 * one signing in 128 gives a code of 0, and the "signed" return address is the plain one,
 * which every unwinder takes as it is. An authentication with the wrong key succeeds when
 * the other key's code for that address and modifier happens to be the same: 1 in 128 too.
 * A control that expects a signed address to break a walk (or a throw) proves nothing in
 * such a run, so it reads the value that was signed (A64_CALLER_RECORD) and says so
 * (a64_inconclusive), and runs again with another code: a fork child keeps its parent's
 * keys, but the modifier is the stack pointer at signing, which each try moves 16 bytes
 * lower (a64_fork_control). A retry happens on that condition only, never on the outcome
 * the control asserts; a control with no conclusive try fails.
 */
#ifndef JH_TESTS_A64_PAC_H
#define JH_TESTS_A64_PAC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* How often a control runs before it gives up (the chance that all give code 0: 128^-5),
 * and the exit status of a control's child whose run proved nothing. */
enum { A64_TRIES = 5, A64_INCONCLUSIVE = 4 };

/* The frame record {x29, x30} of the JIT function that called the C function this is
 * expanded in, directly or through frameless code (which keeps x29): built with
 * -fno-omit-frame-pointer, that function's own record holds the x29 it was entered with. */
#define A64_CALLER_RECORD() (*(const uintptr_t *const *)__builtin_frame_address(0))

/* v with its code cleared (xpaclri, a hint: v itself without pointer authentication) */
static inline uintptr_t a64_strip(uintptr_t v)
{
    register uintptr_t x30 __asm__("x30") = v;
    __asm__("hint #7" : "+r"(x30));
    return x30;
}

/* p signed with the A key and modifier m (pacia1716, a hint) */
static inline uintptr_t a64_pacia(uintptr_t p, uintptr_t m)
{
    register uintptr_t x17 __asm__("x17") = p;
    register uintptr_t x16 __asm__("x16") = m;
    __asm__("hint #8" : "+r"(x17) : "r"(x16));
    return x17;
}

/* Whether the return address in rec, a frame record pushed right after pac*sp (stp x29,
 * x30, [sp, #-16]!: the modifier, the stack pointer at signing, is rec + 16), proves
 * nothing to a control: its code is 0; with a_said_b (B-key code described as A-key
 * code), also when the A key authenticates it. Prints what it read. */
static inline bool a64_inconclusive(const uintptr_t *rec, bool a_said_b, const char *what)
{
    uintptr_t v = rec[1], plain = a64_strip(v), m = (uintptr_t)rec + 16;
    bool zero = v == plain, a_auth = a_said_b && a64_pacia(plain, m) == v;
    printf("%s: return address %#lx signed as %#lx: %s\n", what, (unsigned long)plain,
           (unsigned long)v, zero ? "a code of 0, the run proves nothing" :
           a_auth ? "the A key authenticates it too, the run proves nothing" : "signed");
    return zero || a_auth;
}

/* Calls fn(arg) with the stack pointer 16 * t bytes lower than with t = 0. */
__attribute__((noinline, unused)) static int a64_lowered(int t, int (*fn)(void *), void *arg)
{
    volatile char *pad = (volatile char *)__builtin_alloca(16 * (size_t)t + 16);
    pad[0] = 0;
    int r = fn(arg);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* A control run in a fork child (where the process may crash, as expected): child(arg)
 * returns the child's exit status, A64_INCONCLUSIVE when its run proved nothing; each try
 * runs it lower on the stack (another modifier, so another code). Returns the wait status
 * of the last try; fails (CHECK) when none proved anything. The child has 60 s and writes
 * no core. */
__attribute__((unused)) static int a64_fork_control(int (*child)(void *), void *arg,
                                                    const char *what)
{
    int st = 0;
    for (int t = 0; t < A64_TRIES; t++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(60);                          /* a walk that loops fails too */
            struct rlimit no_core = { 0, 0 };
            setrlimit(RLIMIT_CORE, &no_core);   /* qemu would write the child's core */
            _exit(a64_lowered(t, child, arg));
        }
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != A64_INCONCLUSIVE)
            return st;
        printf("%s, try %d of %d: inconclusive; again, signed 16 bytes lower on the stack\n",
               what, t + 1, (int)A64_TRIES);
    }
    printf("%s: no try was conclusive\n", what);
    CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != A64_INCONCLUSIVE);
    return st;
}

#endif
