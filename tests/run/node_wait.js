// node_wait.js PAUSE — for run_attach.sh: compiles (and V8 optimises) inner() and outer(),
// writes its pid to PAUSE, then keeps calling them until PAUSE is gone; prints "done".
const fs = require('fs');
function inner(n) { let s = 0; for (let i = 0; i < n; i++) s += i % 7; return s; }
function outer(n) { return inner(n) + 1; }
for (let i = 0; i < 2000; i++) outer(1000);
fs.writeFileSync(process.argv[2], String(process.pid));
while (fs.existsSync(process.argv[2])) outer(100000);
console.log('done');
