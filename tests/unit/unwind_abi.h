/*
 * unwind_abi.h — the part of the unwinder's ABI (the Itanium C++ ABI's level 1, as libgcc
 * and LLVM's libunwind implement it) that the unwind tests raise and catch with, declared
 * here: -Isrc makes <unwind.h> find another header.
 */
#ifndef JH_TEST_UNWIND_ABI_H
#define JH_TEST_UNWIND_ABI_H

#include <stdint.h>

struct uexc {
    uint64_t exclass;
    void (*cleanup)(int, struct uexc *);
    uintptr_t private1, private2;
} __attribute__((aligned));
struct _Unwind_Context;
enum { URC_NO_REASON = 0, URC_END_OF_STACK = 5, URC_HANDLER_FOUND = 6,
       URC_INSTALL_CONTEXT = 7, URC_CONTINUE_UNWIND = 8 };
enum { UA_SEARCH_PHASE = 1, UA_CLEANUP_PHASE = 2, UA_HANDLER_FRAME = 4 };

#endif
