/*
 * test_unwind_perfn.c — test_unwind_groups.c with one registration per function, the mode
 * chosen on libgcc 13+ (whose b-tree lookup is logarithmic but refuses overlapping
 * objects). Forced here on GCC 12's libgcc, which accepts it too: every churn phase must
 * still find each live function's FDE, and none of a removed one.
 */
#define UW_FORCE JH__UW_PERFN
#define UW_N 3000
#include "test_unwind_groups.c"
