/*
 * page.js: the audit log report's script (tools/log_report.c embeds it; the data's format
 * is described in tools/log_report_data.c). No library and no network: it inflates the
 * embedded data with the browser's DecompressionStream and renders lazily: the table
 * draws only the rows in view, a function's details when it is selected.
 *
 * The address drives it too: #q=TEXT searches, #fn=NAME opens a function.
 */
(function () {
  'use strict';
  const ROW_H = 22;
  const KIND = ['JIT', 'native', 'other', 'kernel'];
  let D, prof, rows = [], view = [], sel = -1;

  function el(tag, attrs, kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    for (const c of kids || []) if (c != null) e.append(c);
    return e;
  }
  const hex = (n) => '0x' + Number(n).toString(16);
  const secs = (us) => (us / 1e6).toFixed(6);
  const pct = (n, of) => (of ? (100 * n / of).toFixed(2) : '0.00') + '%';

  async function load() {
    const d = document.getElementById('data');
    if (d.dataset.enc !== 'deflate') return JSON.parse(d.textContent);
    const s = atob(d.textContent.replace(/\s+/g, ''));
    const b = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    const st = new Blob([b]).stream().pipeThrough(new DecompressionStream('deflate'));
    return JSON.parse(await new Response(st).text());
  }

  /* One entry per row of the table: the profile's rows, or the log's functions. */
  function buildRows() {
    const F = D.fn;
    if (D.rows) {
      const R = D.rows;
      for (let k = 0; k < R.name.length; k++)
        rows.push({ name: R.kind[k] === 1 && R.name[k][0] !== '[' ? '[' + R.name[k].replace(/.*\//, '') + ']' : R.name[k],
          path: R.name[k], kind: R.kind[k], self: R.self[k], total: R.total[k],
          wrong: R.wrong[k], as: R.as[k], many: R.many[k], shared: R.shared[k], fn: R.fn[k],
          lc: R.name[k].toLowerCase() });
    } else {
      for (let i = 0; i < F.name.length; i++)
        rows.push({ name: F.name[i], kind: 0, fn: i, lc: F.name[i].toLowerCase() });
    }
  }

  function summary() {
    const m = D.meta, p = m.profile, s = document.getElementById('summary');
    s.textContent = (m.exe || '') + ' \u00b7 ' + (m.arch || '?') + ' \u00b7 format version ' + m.version +
      ' \u00b7 ' + m.nrecs + ' records: ' + m.nfns + ' functions, ' + m.nmems + ' memory snapshots, ' +
      m.nev + ' events \u00b7 ';
    s.append(m.closed ? el('span', { cls: 'ok', text: 'closed cleanly' })
      : el('span', { cls: 'bad', text: 'not closed: the process ended without jh_close (crash or kill)' }));
    if (m.cut) s.append(el('span', { cls: 'bad', text: ' \u00b7 ' + m.cut + ' record(s) cut mid-write' }));
    if (m.limit || m.dropped)
      s.append(el('span', { cls: 'bad', text: ' \u00b7 size limit reached, ' + m.dropped + ' record(s) dropped' }));
    if (!p) return null;
    const ps = el('p', { cls: 'sum', id: 'profsum' });
    if (p.cg) {
      ps.textContent = p.path + ': ' + p.ours + ' ' + p.event + ' (callgrind: no time); JIT code ' + p.jit +
        ', of which ' + p.shared + ' (' + pct(p.shared, p.jit) + ') at addresses that held several ' +
        'functions over time (shown as "a | b": callgrind merges them)';
      return ps;
    }
    ps.textContent = p.path + ': ' + p.ours + ' samples of ' + p.event + ' in pid ' + m.pid +
      (p.chains ? ', with call chains' : ' (no call chains: total is self; record with -g)') +
      '. JIT code: ' + p.jit + ' samples; ';
    ps.append(el('span', { id: 'mislabel', cls: p.wrong ? 'bad' : 'ok',
      text: 'the perf map would name ' + p.wrong + ' of them (' + pct(p.wrong, p.jit) + ') differently' }));
    if (!p.timed) ps.append(el('span', { cls: 'warn', text: ' \u00b7 not recorded with perf record -k 1: ' +
      'samples named by the code at the end of the log' }));
    if (p.near) ps.append(' \u00b7 ' + p.near + ' samples outside every lifetime, named by the nearest');
    return ps;
  }

  /* ---- the table ------------------------------------------------------------------- */
  function cells(r, k) {
    const F = D.fn, p = D.meta.profile;
    const nm = el('span', { cls: 'nm', title: r.path || r.name, text: r.name });
    if (D.rows) {
      const of = p.ours;
      const out = [el('span', { cls: 'n', text: pct(r.self, of) }), el('span', { cls: 'n self', text: String(r.self) }),
        el('span', { cls: 'n', text: pct(r.total, of) }), el('span', { cls: 'n total', text: String(r.total) }), nm,
        el('span', { cls: 'k k' + r.kind, text: r.shared ? 'shared' : KIND[r.kind] })];
      if (r.wrong) {
        nm.title = r.name + '\nthe perf map names ' + r.wrong + ' of its samples ' + r.as + (r.many ? ' and others' : '');
        nm.append(el('span', { cls: 'pm', text: '  perf map: ' + r.as + (r.many ? '\u2026' : '') + ' \u00d7' + r.wrong }));
      }
      return out;
    }
    const i = r.fn;
    return [el('span', { cls: 'n', text: String(i) }), nm, el('span', { text: hex(F.start[i]) }),
      el('span', { cls: 'n', text: String(F.size[i]) }), el('span', { cls: 'n', text: secs(F.add[i]) }),
      el('span', { cls: 'n', text: F.rm[i] ? secs(F.rm[i] - 1) : 'live' }),
      el('span', { cls: 'nm', title: F.src[i], text: F.src[i] })];
  }

  function drawRows() {
    const v = document.getElementById('hotv'), inner = v.firstChild;
    const from = Math.max(0, Math.floor(v.scrollTop / ROW_H) - 5);
    const to = Math.min(view.length, from + Math.ceil(v.clientHeight / ROW_H) + 12);
    inner.replaceChildren();
    for (let k = from; k < to; k++) {
      const r = rows[view[k]];
      const e = el('div', { cls: 'row' + (view[k] === sel ? ' sel' : ''), 'data-name': r.name, 'data-rank': String(k) },
        cells(r, k));
      e.style.top = (k * ROW_H) + 'px';
      e.onclick = () => select(view[k]);
      inner.append(e);
    }
  }

  function filter() {
    const q = document.getElementById('q').value.trim().toLowerCase();
    const kind = document.getElementById('kind').value;
    view = [];
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      if (q && !r.lc.includes(q)) continue;
      if (kind !== 'all') {
        if (D.rows && String(r.kind) !== kind) continue;
        if (!D.rows && (kind === 'live') !== !D.fn.rm[r.fn]) continue;
      }
      view.push(i);
    }
    const v = document.getElementById('hotv');
    v.firstChild.style.height = (view.length * ROW_H) + 'px';
    v.scrollTop = 0;
    document.getElementById('count').textContent = view.length + ' of ' + rows.length + ' shown';
    drawRows();
    /* open the hottest JIT function in view (the first row, without a profile) */
    if (view.length && (sel < 0 || !view.includes(sel))) select(view.find((i) => rows[i].fn >= 0) ?? view[0]);
  }

  function table() {
    const hdr = D.rows ? ['self%', 'self', 'total%', 'total', 'function', 'kind']
      : ['#', 'function', 'address', 'size', 'added s', 'removed s', 'source'];
    const opts = D.rows ? [['all', 'all kinds'], ['0', 'JIT'], ['1', 'native'], ['3', 'kernel']]
      : [['all', 'all'], ['live', 'live at the end'], ['removed', 'removed']];
    const q = el('input', { id: 'q', type: 'search', placeholder: 'search functions', spellcheck: 'false' });
    const kind = el('select', { id: 'kind' }, opts.map(([v, t]) => el('option', { value: v, text: t })));
    q.oninput = filter;
    kind.onchange = filter;
    const v = el('div', { id: 'hotv' }, [el('div', {})]);
    v.onscroll = () => requestAnimationFrame(drawRows);
    return el('div', {}, [el('div', { cls: 'bar' }, [q, kind, el('span', { id: 'count', cls: 'sum' })]),
      el('div', { id: 'hot', cls: 'tbl ' + (D.rows ? 'prof' : 'plain') },
        [el('div', { cls: 'hd' }, hdr.map((h) => el('span', { cls: /%|self|total|size|#|added|removed/.test(h) ? 'n' : '', text: h }))), v])]);
  }

  /* ---- one function ---------------------------------------------------------------- */
  function select(i) {
    sel = i;
    drawRows();
    const r = rows[i], box = document.getElementById('detail');
    box.replaceChildren(el('div', { cls: 'full', text: r.path || r.name }));
    if (D.rows) box.append(el('div', { cls: 'sum', text: KIND[r.kind] + ' \u00b7 self ' + r.self + ', total ' +
      r.total + (r.wrong ? ' \u00b7 the perf map would name ' + r.wrong + ' of these ' + r.as : '') }));
    if (r.fn < 0) {
      box.append(el('p', { cls: 'muted', text: r.kind === 0 ? '' : 'not JIT code: outside the audit log' }));
      return;
    }
    const F = D.fn, f = r.fn, det = D.detail[f];
    box.append(el('div', { cls: 'sum', text: hex(F.start[f]) + ', ' + F.size[f] + ' bytes \u00b7 added ' +
      secs(F.add[f]) + ' s, ' + (F.rm[f] ? 'removed ' + secs(F.rm[f] - 1) + ' s' : 'live at the end') +
      ' \u00b7 thread ' + F.thread[f] + (F.moves[f] ? ' \u00b7 moved ' + F.moves[f] + '\u00d7' : '') +
      (F.patches[f] ? ' \u00b7 patched ' + F.patches[f] + '\u00d7' : '') + (F.src[f] ? ' \u00b7 ' + F.src[f] : '') }));
    if (!det) {
      box.append(el('p', { cls: 'muted', text: 'details are embedded for the hottest functions only: ' +
        'jitherald log FILE show ' + r.name }));
      return;
    }
    let copies = 0;
    for (let k = 0; k < F.name.length; k++) copies += F.name[k] === F.name[f];
    const here = det.ipc.reduce((a, [, n]) => a + n, 0);
    if (copies > 1 || (D.rows && here !== r.self))
      box.append(el('div', { cls: 'warn', id: 'copies', text: 'compiled ' + copies + ' times under this name: shown is the copy at ' +
        hex(F.start[f]) + (D.rows ? ', with ' + here + ' of the row\'s ' + r.self + ' samples' : '') }));
    box.append(el('h3', { text: 'Compile history' }), history(det));
    const [pre, lines] = disasm(det);
    if (lines.length) {
      box.append(el('h3', { text: 'Hottest source lines' }));
      const t = el('table', { cls: 'h', id: 'hotlines' }, [el('tr', {}, ['samples', 'line', ''].map((h) => el('th', { text: h })))]);
      for (const [src, n, text] of lines.slice(0, 8))
        t.append(el('tr', {}, [el('td', { cls: 'n', text: String(n) }), el('td', { cls: 'nm', title: src, text: src.replace(/.*\//, '') }),
          el('td', { cls: 'nm', title: text, text: text })]));
      box.append(t);
    }
    box.append(el('h3', { text: 'Disassembly' + (D.rows ? ' (samples per instruction and source line)' : '') }), pre);
    if (det.mem.length) {
      box.append(el('h3', { text: 'Logged memory its events name' + (D.meta.dt ? '' : ' (no DWARF: bytes)') }));
      for (const m of det.mem) box.append(el('pre', { cls: 'mem', text: m }));
    }
  }

  function history(det) {
    const t = el('table', { cls: 'h' }, [el('tr', {}, ['time (s)', 'record', 'thread', ''].map((h) => el('th', { text: h })))]);
    for (const [us, kind, th, what] of det.hist)
      t.append(el('tr', {}, [el('td', { cls: 'n', text: secs(us) }), el('td', { text: kind }),
        el('td', { cls: 'n', text: String(th) }), el('td', { cls: 'nm', title: what, text: what })]));
    return t;
  }

  /* The disassembly's lines (log_disasm.c's text), each instruction with its samples, each
   * source line with the sum of its instructions' samples. */
  function disasm(det) {
    const ipc = new Map(det.ipc.map(([a, n]) => [a, n]));
    const pre = el('pre', { cls: 'asm' }), bySrc = new Map(), srcText = new Map();
    let src = null, srcGutter = null, max = 0;
    for (const [, n] of det.ipc) max = Math.max(max, n);
    for (const line of det.asm.split('\n')) {
      if (!line) continue;
      const m = /^\s+([0-9a-f]+):/.exec(line);
      const c = el('span', { cls: 'c' });
      const ln = el('span', { cls: 'ln' }, [c, line]);
      if (m) {
        const n = ipc.get(parseInt(m[1], 16)) || 0;
        if (n) {
          c.textContent = String(n);
          ln.classList.add('hot');
          ln.style.background = 'rgba(240,140,60,' + (0.12 + 0.5 * n / max).toFixed(3) + ')';
          if (src) {
            bySrc.set(src, (bySrc.get(src) || 0) + n);
            srcGutter.textContent = String(bySrc.get(src));
          }
        }
      } else if (/^\S+:\d+/.test(line)) {
        src = line.split(/\s+/)[0];
        srcText.set(src, line.slice(src.length).trim());
        srcGutter = c;
        if (bySrc.get(src)) c.textContent = String(bySrc.get(src));
        ln.classList.add('src');
      }
      pre.append(ln);
    }
    const lines = [...bySrc].map(([k, n]) => [k, n, srcText.get(k) || '']).sort((a, b) => b[1] - a[1]);
    return [pre, lines];
  }

  /* ---- flame graph (root on top: each frame spans its callers' share) ---------------- */
  function flame() {
    const box = el('div', { id: 'flame' });
    const Fl = D.flame;
    if (!Fl) {
      const cg = D.meta.profile && D.meta.profile.cg;
      box.append(el('p', { cls: 'muted', text: cg ? 'callgrind.out: no call chains (its inclusive cost is the total column)'
        : D.rows ? 'no call chains in this profile (perf record -g)'
        : 'no profile: jitherald log FILE report --profile perf.data' }));
      return box;
    }
    const kids = Fl.parent.map(() => []);
    for (let i = 1; i < Fl.parent.length; i++) kids[Fl.parent[i]].push(i);
    for (const k of kids) k.sort((a, b) => Fl.count[b] - Fl.count[a]);
    let zoom = 0;
    function draw() {
      const W = box.clientWidth || 1100, tot = Fl.count[zoom];
      const frames = [];
      let depth = 0;
      (function walk(n, x, d) {
        const w = Fl.count[n] / tot * W;
        if (w < 1 || d > 80 || frames.length > 4000) return;
        frames.push([n, x, w, d]);
        depth = Math.max(depth, d);
        let cx = x;
        for (const c of kids[n]) { walk(c, cx, d + 1); cx += Fl.count[c] / tot * W; }
      })(zoom, 0, 0);
      box.replaceChildren();
      box.style.height = ((depth + 1) * 17 + 2) + 'px';
      for (const [n, x, w, d] of frames) {
        const r = n ? rows[Fl.row[n]] : null;
        const name = r ? r.name : (zoom ? 'back to all samples' : 'all samples');
        const e = el('div', { cls: 'fr ' + (r ? 'k' + r.kind : 'root'), 'data-name': name,
          'data-count': String(Fl.count[n]), title: (r && r.path || name) + ' \u2014 ' + Fl.count[n] + ' samples (' +
          pct(Fl.count[n], Fl.count[0]) + ')', text: name });
        e.style.left = x + 'px';
        e.style.width = w + 'px';
        e.style.top = (d * 17) + 'px';
        e.onclick = () => { zoom = n === zoom ? 0 : n; draw(); if (r && r.fn >= 0) select(Fl.row[n]); };
        box.append(e);
      }
    }
    /* Drawn once the page is built (a microtask: the box is in the document by then, so its
     * width is known), not at the next frame: headless Chromium's --dump-dom on a busy
     * machine could come before any frame, with no flame graph in it. */
    queueMicrotask(draw);
    window.addEventListener('resize', draw);
    return box;
  }

  /* ---- timeline: counts per bin, one lane per kind ---------------------------------- */
  function timeline() {
    const T = D.tl, NS = 'http://www.w3.org/2000/svg', W = 1100, left = 170, lane = 16, top = 22;
    const H = top + T.lanes.length * lane + 8, bins = T.lanes.length ? T.lanes[0].c.length : 1;
    const svg = document.createElementNS(NS, 'svg');
    const span = Math.max(1, T.t1 - T.t0), bw = (W - left - 10) / bins;
    svg.setAttribute('id', 'timeline');
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('width', '100%');
    const add = (tag, at, text) => {
      const e = document.createElementNS(NS, tag);
      for (const k in at) e.setAttribute(k, at[k]);
      if (text != null) e.textContent = text;
      svg.append(e);
      return e;
    };
    /* ticks at round times: 1, 2 or 5 times a power of ten */
    const raw = span / 6, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
    for (let t = Math.ceil(T.t0 / step) * step; t <= T.t1; t += step) {
      const x = left + (t - T.t0) / span * (W - left - 10);
      add('line', { x1: x, x2: x, y1: 14, y2: H - 4, stroke: '#eaeef2' });
      add('text', { x: x, y: 11, 'font-size': 10, 'text-anchor': 'middle', fill: '#57606a' },
        (t / 1e6).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e6)))) + ' s');
    }
    T.lanes.forEach((L, i) => {
      const y = top + i * lane, max = Math.max(...L.c), sum = L.c.reduce((a, b) => a + b, 0);
      const colour = /^samples/.test(L.name) ? '#f08c3c' : /^event/.test(L.name) ? '#bf8700' : '#2f81f7';
      const lab = add('text', { x: 4, y: y + 11, 'font-size': 11 }, L.name + ' (' + sum + ')');
      lab.append(document.createElementNS(NS, 'title'));
      lab.lastChild.textContent = L.name;
      L.c.forEach((n, b) => {
        if (!n) return;
        const r = add('rect', { x: left + b * bw, y: y + 2, width: Math.max(bw, 1), height: lane - 4,
          fill: colour, 'fill-opacity': (0.2 + 0.8 * n / max).toFixed(2) });
        const t = document.createElementNS(NS, 'title');
        t.textContent = L.name + ': ' + n + ' between ' + secs(T.t0 + b * span / bins) + ' and ' +
          secs(T.t0 + (b + 1) * span / bins) + ' s';
        r.append(t);
      });
    });
    return svg;
  }

  function fromHash() {
    const h = decodeURIComponent(location.hash.slice(1));
    const q = /^q=(.*)$/.exec(h), fn = /^fn=(.*)$/.exec(h);
    if (q) { document.getElementById('q').value = q[1]; filter(); }
    if (fn) {
      const i = rows.findIndex((r) => r.name === fn[1]);
      if (i >= 0) select(i);
    }
  }

  const tStart = performance.now();
  load().then((data) => {
    const tData = performance.now();
    D = data;
    buildRows();
    const app = document.getElementById('app'), ps = summary();
    app.replaceChildren();
    if (ps) app.append(ps);
    app.append(el('h2', { text: D.rows ? 'Hot functions' : 'Functions' }),
      el('div', { cls: 'cols' }, [table(), el('div', { id: 'detail' })]),
      el('h2', { text: 'Flame graph (call chains, root on top; click to zoom)' }), flame(),
      el('h2', { text: 'Timeline (counts per bin)' }), timeline());
    filter();
    fromHash();
    window.addEventListener('hashchange', fromHash);
    /* how long it took, for bench/report.sh: from navigation, reading the data, drawing */
    const b = document.body.dataset;
    b.loadMs = Math.round(performance.now());
    b.dataMs = Math.round(tData - tStart);
    b.drawMs = Math.round(performance.now() - tData);
    b.ready = '1';
  }).catch((e) => {
    document.getElementById('app').replaceChildren(el('p', { cls: 'bad', id: 'error', text: 'could not read the data: ' + e }));
  });
}());
