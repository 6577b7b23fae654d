/* entry.c — compiled to IR at build time (clang-14 -g -O1) and run by llvm_jit.cc. */
long middle(long n);
long work(long n);

long jit_entry(long n)
{
    long m = middle(n);
    return m + work(n);
}
