/*
 * test_unwind_personality.c — unwind_personality.c with libgcc in the mode the channel
 * detects here (GCC 12: grouped runs): a JIT's personality and LSDA reach the unwinder,
 * and a JIT's own registration is never shadowed.
 */
#include "unwind_personality.h"

int main(void)
{
    struct unwind_personality cfg = { 0 };
    return unwind_personality_run(&cfg);
}
