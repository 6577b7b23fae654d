/* broken.c — compiled to IR at build time and given to llvm_jit.cc --broken: it calls a
 * function nobody defines, so its link fails (an unresolved symbol) after it compiled. */
long no_such_function_anywhere(long n);

long broken_entry(long n)
{
    return no_such_function_anywhere(n) + 1;
}
