// node_trap.js — tests/integration/run_node_gdb.sh: process.kill(SIGTRAP) from JS that V8
// optimised the moment before (outer, by %OptimizeFunctionOnNextCall without concurrent
// recompilation), through a function called for the first time (trap) and process.kill,
// compiled at its first call too. outer's loop runs inner enough to matter; the trap
// branch is taken in every call, so the optimised code does not deoptimise at it.
let armed = false;
function trap() { if (armed) process.kill(process.pid, 'SIGTRAP'); }
function inner(n) { let s = 0; for (let i = 0; i < n; i++) s += i % 7; return s; }
function outer(k) {
  let s = 0;
  for (let i = 0; i < 100; i++) s += inner(50 + k);
  trap();
  return s;
}
%PrepareFunctionForOptimization(outer);
outer(0); outer(1);
%OptimizeFunctionOnNextCall(outer);
outer(2);
armed = true;
outer(3);
