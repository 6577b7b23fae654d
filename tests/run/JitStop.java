// JitStop.java — tests/integration/run_java_gdb.sh: depth() compiled (recursion, so
// several frames of it), HotSpot asked for its perf map (jcmd, as a user would), then
// Thread.sleep(7) called from the compiled code: gdb stops in JVM_Sleep, under the native
// wrapper HotSpot made for Thread.sleep and the compiled depth() frames.
public class JitStop {
    static int depth(int n, long ms) throws InterruptedException {
        if (n == 0) {
            Thread.sleep(ms);
            return 1;
        }
        return depth(n - 1, ms) + 1;
    }

    public static void main(String[] a) throws Exception {
        int s = 0;
        for (int i = 0; i < 5000; i++)
            s += depth(8, 0);
        String pid = Long.toString(ProcessHandle.current().pid());
        new ProcessBuilder("jcmd", pid, "Compiler.perfmap").inheritIO().start().waitFor();
        s += depth(8, 7);
        System.out.println("pid " + pid + " sum " + s);
    }
}
