function step(x) { return (x * 1103515245 + 12345) % 2147483648; }
function spin(ms) {
  const end = Date.now() + ms;
  let x = 1;
  for (;;) {
    for (let i = 0; i < 100000; i++) x = step(x);
    if (Date.now() > end) return x;
  }
}
spin(200);                                   // optimized, and announced, before the signal
const { Worker } = require('worker_threads');
new Worker('setTimeout(() => process.kill(process.pid, "SIGUSR2"), 500)', { eval: true });
console.log(spin(3000) > 0);
