/*
 * test_unwind_groups.c — unwind_groups.c in the mode the channel detects here (GCC 12's
 * libgcc: grouped, sorted runs), looked up with libgcc's _Unwind_Find_FDE.
 */
#include "unwind_groups.h"

int main(void)
{
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    struct unwind_groups cfg = { .n = 4000 };   /* the same paths, in the sanitizers' time */
#else
    struct unwind_groups cfg = { .n = 20000 };
#endif
    return unwind_groups_run(&cfg);
}
