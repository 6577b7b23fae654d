/*
 * test_unwind_perfn.c — unwind_groups.c with one registration per function, the mode
 * chosen on libgcc 13+ (whose b-tree lookup is logarithmic but refuses overlapping
 * objects). Forced here on GCC 12's libgcc, which accepts it too: every churn phase must
 * still find each live function's FDE, and none of a removed one; and personalities
 * and foreign registrations (unwind_personality.c) must work as in the grouped mode.
 */
#include "unwind_groups.h"
#include "unwind_personality.h"
#include "channels/unwind_stats.h"

int main(void)
{
    struct unwind_groups cfg = { .force_mode = JH__UW_PERFN, .n = 3000 };
    int rc = unwind_groups_run(&cfg);
    struct unwind_personality pcfg = { .force_mode = JH__UW_PERFN };
    int rc2 = unwind_personality_run(&pcfg);
    return rc ? rc : rc2;
}
