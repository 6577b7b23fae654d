// Hot.java — the Java program of the JVMTI agent's tests (tests/integration/jvmti_*.sh) and
// benchmark (bench/jvmti.sh). The tests find its lines by the markers at their ends.
//   java demo.Hot gdb            warm recurse up, wait until the agent has announced it
//                                (awaitNamed), then call it armed once: stop's native
//                                code calls jh_java_hit, where gdb breaks
//   java demo.Hot spin SECONDS   spin() for that long (perf samples it)
//   java demo.Hot late READY     warm up, write READY, then spin and call recurse armed
//                                about every 50 ms, for ever (the test kills it)
//   java demo.Hot unload         demo.Victim in a class loader of its own, compiled, then
//                                dropped and unloaded by full GCs (Victim.java)
//   java demo.Hot bench N        JIT-heavy: N rounds over many small generated-looking
//                                methods, so much of the run is compiling
package demo;

import java.nio.file.Files;
import java.nio.file.Paths;

public class Hot {
    static native void stop(int armed);

    static volatile long sink;

    static int recurse(int n, int armed) {
        if (n == 0) {
            stop(armed);                                       // @stop
            return 1;
        }
        return recurse(n - 1, armed) + 1;                      // @recurse
    }

    static long spin(long n) {
        long s = 0;
        for (long i = 0; i < n; i++) {
            s += (i * i) ^ (s >>> 3);                          // @spin
        }
        return s;
    }

    static int fence(int x) {
        return x + 1;
    }

    // HotSpot posts CompiledMethodLoad from its ServiceThread after the code is installed:
    // compiled code may run before the agent has announced it, and on a busy machine it
    // does. The agent's perf map (the test asks for it beside gdb) says when: fence, compiled
    // after recurse and stop, is announced after them (one queue, in order), and once its
    // line is there every channel has heard of them.
    static void awaitNamed(String name) throws Exception {
        java.nio.file.Path map = Paths.get("/tmp/perf-" + ProcessHandle.current().pid() + ".map");
        long end = System.nanoTime() + 300_000_000_000L;
        while (System.nanoTime() < end) {
            if (Files.exists(map))
                for (String l : Files.readAllLines(map))
                    if (l.endsWith(" " + name)) return;
            Thread.sleep(50);
        }
        throw new IllegalStateException(name + " never announced in " + map);
    }

    // Many distinct methods, each compiled by C1 then C2: the agent's work per method.
    interface Op { long apply(long x); }

    static long bench(int rounds) {
        Op[] ops = new Op[64];
        for (int k = 0; k < ops.length; k++) {
            final int c = k;
            switch (k % 4) {
                case 0: ops[k] = x -> x * 31 + c; break;
                case 1: ops[k] = x -> (x ^ (x >>> 7)) + c; break;
                case 2: ops[k] = x -> Long.rotateLeft(x, c % 13) - c; break;
                default: ops[k] = x -> x / (c + 1) + x % (c + 3); break;
            }
        }
        long s = 0;
        StringBuilder sb = new StringBuilder();
        for (int r = 0; r < rounds; r++) {
            for (Op op : ops) s = op.apply(s);
            sb.setLength(0);
            sb.append(r).append(':').append(s);
            s += sb.toString().hashCode();
            s += String.format("%d", r % 100).length();
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        System.load(System.getProperty("hot.native"));
        switch (args[0]) {
        case "gdb":
            for (int i = 0; i < 20000; i++) sink += recurse(6, 0);
            for (int i = 0; i < 20000; i++) sink += fence(i);
            awaitNamed("demo.Hot.fence");
            sink += recurse(6, 1);
            break;
        case "spin": {
            long end = System.nanoTime() + (long) (Double.parseDouble(args[1]) * 1e9);
            while (System.nanoTime() < end) sink += spin(1000000);
            break;
        }
        case "late":
            for (int i = 0; i < 20000; i++) sink += recurse(6, 0);
            for (int i = 0; i < 200; i++) sink += spin(100000);
            Files.write(Paths.get(args[1]), "ready\n".getBytes());
            for (;;) {
                sink += spin(2000000);
                sink += recurse(6, 1);
                Thread.sleep(20);
            }
        case "unload": {
            java.net.URL[] cp = { Paths.get(System.getProperty("hot.classes")).toUri().toURL() };
            java.net.URLClassLoader l = new java.net.URLClassLoader(cp, null);
            java.util.function.LongUnaryOperator v = (java.util.function.LongUnaryOperator)
                l.loadClass("demo.Victim").getDeclaredConstructor().newInstance();
            for (int i = 0; i < 20000; i++) sink += v.applyAsLong(i);
            System.out.println("compiled");
            v = null;
            l.close();
            l = null;
            for (int i = 0; i < 5; i++) { System.gc(); Thread.sleep(200); }
            break;
        }
        case "bench":
            sink += bench(Integer.parseInt(args[1]));
            break;
        default:
            throw new IllegalArgumentException(args[0]);
        }
        System.out.println(sink != 42 ? "done" : "");
    }
}
