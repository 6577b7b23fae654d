// Victim.java — loaded by demo.Hot's "unload" mode in a class loader of its own, run until
// C2 compiles work(), then dropped: the class is unloaded at the next full GC, and its
// compiled code with it (the agent's CompiledMethodUnload).
package demo;

public class Victim implements java.util.function.LongUnaryOperator {
    public long applyAsLong(long x) {
        return work(x);
    }

    static long work(long x) {
        return x * 31 + (x >>> 5);                             // @work
    }
}
