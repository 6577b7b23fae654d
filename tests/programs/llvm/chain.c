/* chain.c — two frameless functions at -O1 (no frame pointer): unwinding them takes the
 * object's CFI. host_callback is the test JIT's, in the host. */
long host_callback(long n);

__attribute__((noinline)) long leaf(long n)
{
    long r = host_callback(n);
    return r * 3;
}

__attribute__((noinline)) long middle(long n)
{
    long r = leaf(n + 1);
    return r + 7;
}
