(function () {
  'use strict';
  // Data: flat pre-order nodes [name, depth, total, self, counters..., (A's total, A's self)]
  // (see flame_html.rs); the last two only in a differential graph (D.diff).
  const D = JSON.parse(document.getElementById('fg-data').textContent);
  const K = D.counters.length, S = D.stride, A = D.nodes, N = A.length / S;
  const FRAME_H = 16, MIN_PX = 0.4;
  const nm = new Int32Array(N), dp = new Int32Array(N), par = new Int32Array(N), end = new Int32Array(N);
  const tot = new Float64Array(N), slf = new Float64Array(N), x = new Float64Array(N);
  const cnt = new Float64Array(N * K);
  const aTot = new Float64Array(D.diff ? N : 0), aSelf = new Float64Array(D.diff ? N : 0);
  let maxDepth = 0;
  {
    const next = [0], open = [];
    for (let i = 0; i < N; i++) {
      const o = i * S, d = A[o + 1];
      nm[i] = A[o]; dp[i] = d; tot[i] = A[o + 2]; slf[i] = A[o + 3];
      for (let k = 0; k < K; k++) cnt[i * K + k] = A[o + 4 + k];
      if (D.diff) { aTot[i] = A[o + 4 + K]; aSelf[i] = A[o + 5 + K]; }
      while (open.length > d) end[open.pop()] = i;
      par[i] = d > 0 ? open[d - 1] : -1;
      open.push(i);
      x[i] = d > 0 ? next[d] : 0;
      next[d] = x[i] + tot[i];
      next[d + 1] = x[i];
      if (d > maxDepth) maxDepth = d;
    }
    while (open.length) end[open.pop()] = N;
  }

  const canvas = document.getElementById('fg'), ctx = canvas.getContext('2d');
  // The tree as last drawn, without the hover outline: moving the mouse copies it back and
  // outlines one frame instead of drawing every frame again (100,000 frames take ~0.2 s).
  const clean = document.createElement('canvas'), cleanCtx = clean.getContext('2d');
  const tip = document.getElementById('tip'), status = document.getElementById('status');
  const search = document.getElementById('search'), matchedEl = document.getElementById('matched');
  const icicle = document.getElementById('icicle');
  let zoom = 0, width = 0, hover = -1, matchName = null;

  // Colours: a range per frame family (D.families, the same table the SVG uses), varied per
  // name (FNV-1a) so neighbours stay distinct.
  function famColour(f, v) {
    const p = D.families[f] || D.families[0];
    return 'rgb(' + [0, 1, 2].map(function (c) { return Math.round(p.base[c] + p.span[c] * v[p.vary[c]]); }).join(',') + ')';
  }
  const colours = D.names.map(function (name, i) {
    let h = 0x811c9dc5;
    for (let j = 0; j < name.length; j++) h = Math.imul(h ^ (name.charCodeAt(j) & 0xff), 0x01000193) >>> 0;
    return famColour(D.fam[i], [(h & 0xff) / 255, ((h >>> 8) & 0xff) / 255]);
  });
  // A differential graph: each frame's change in share of all samples, B's minus A's.
  const change = new Float64Array(D.diff ? N : 0);
  let maxChange = 0;
  if (D.diff) {
    for (let i = 0; i < N; i++) {
      change[i] = (tot[0] > 0 ? tot[i] / tot[0] : 0) - (D.diff.aTotal > 0 ? aTot[i] / D.diff.aTotal : 0);
      maxChange = Math.max(maxChange, Math.abs(change[i]));
    }
  }
  // Red grew, blue shrank, grey unchanged; deeper for larger changes (full at the largest).
  function changeColour(c) {
    const t = maxChange > 0 ? Math.min(1, Math.abs(c) / maxChange) : 0, v = Math.round(225 - 175 * t);
    if (Math.abs(c) < 1e-12) return 'rgb(225,225,225)';
    return c > 0 ? 'rgb(255,' + v + ',' + v + ')' : 'rgb(' + v + ',' + v + ',255)';
  }
  {
    const legend = document.getElementById('legend');
    const swatch = function (colour, text) {
      const sw = document.createElement('span');
      sw.className = 'sw';
      sw.style.background = colour;
      legend.appendChild(sw);
      legend.appendChild(document.createTextNode(text));
    };
    if (D.diff) {
      swatch(changeColour(maxChange), 'grew');
      swatch(changeColour(-maxChange), 'shrank');
      swatch(changeColour(0), 'same share; widths from B, deepest colour \u00b1' + (maxChange * 100).toFixed(2) + ' points');
    } else {
      const seen = new Set(D.fam);
      D.families.forEach(function (f, i) { if (seen.has(i)) swatch(famColour(i, [0.5, 0.5]), f.name); });
    }
  }

  function fmt(v) { return Math.round(v).toLocaleString('en-US'); }
  function pct(a, b) { return b > 0 ? (a * 100 / b).toFixed(2) + '%' : '-'; }
  function ratio(a, b) {
    if (!(b > 0)) return '-';
    const r = a / b;
    return r >= 1000 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r >= 0.01 || r === 0 ? r.toFixed(2) : r.toExponential(2);
  }
  function yOf(d) { return (icicle.checked ? d : maxDepth - d) * FRAME_H; }

  function resize() {
    const dpr = window.devicePixelRatio || 1;
    width = canvas.clientWidth;
    const h = (maxDepth + 1) * FRAME_H;
    canvas.style.height = h + 'px';
    canvas.width = clean.width = Math.max(1, Math.round(width * dpr));
    canvas.height = clean.height = Math.max(1, Math.round(h * dpr));
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw();
  }

  function box(i, px, pw, faded) {
    const y = yOf(dp[i]);
    ctx.fillStyle = matchName && matchName[nm[i]] ? '#e03ce0' : D.diff ? changeColour(change[i]) : colours[nm[i]];
    ctx.globalAlpha = faded ? 0.55 : 1;
    ctx.fillRect(px, y, Math.max(pw - 0.5, 0.5), FRAME_H - 1);
    if (pw > 24) {
      const name = D.names[nm[i]], room = Math.floor((pw - 6) / charW);
      if (room >= 2) {
        ctx.fillStyle = '#000';
        ctx.fillText(name.length > room ? name.slice(0, room - 1) + '\u2026' : name, px + 3, y + FRAME_H - 4);
      }
    }
    ctx.globalAlpha = 1;
  }

  let charW = 7;
  function draw() {
    ctx.clearRect(0, 0, width, (maxDepth + 1) * FRAME_H);
    ctx.font = '12px Verdana, Arial, sans-serif';
    charW = ctx.measureText('mmmmmmmmmm').width / 10 * 0.85;
    if (N === 0 || !(tot[zoom] > 0)) return;
    for (let a = par[zoom]; a >= 0; a = par[a]) box(a, 0, width, true);
    const x0 = x[zoom], scale = width / tot[zoom];
    let i = zoom;
    while (i < end[zoom]) {
      const pw = tot[i] * scale;
      if (pw < MIN_PX) { i = end[i]; continue; }
      box(i, (x[i] - x0) * scale, pw, false);
      i++;
    }
    cleanCtx.clearRect(0, 0, clean.width, clean.height);
    cleanCtx.drawImage(canvas, 0, 0);
    outline(hover);
  }

  // Where draw() put frame i: [x, width] in CSS pixels, or null when it is not drawn.
  function place(i) {
    if (i < 0 || N === 0 || !(tot[zoom] > 0)) return null;
    if (i < zoom) return end[i] > zoom ? [0, width] : null;
    if (i >= end[zoom]) return null;
    const scale = width / tot[zoom], pw = tot[i] * scale;
    return pw < MIN_PX ? null : [(x[i] - x[zoom]) * scale, pw];
  }
  function outline(i) {
    const p = place(i);
    if (!p) return;
    ctx.strokeStyle = '#000';
    ctx.strokeRect(p[0] + 0.5, yOf(dp[i]) + 0.5, Math.max(p[1] - 1.5, 0.5), FRAME_H - 2);
  }
  // The hovered frame changed: the clean tree again, and the new frame's outline.
  function setHover(i) {
    hover = i;
    ctx.save();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(clean, 0, 0);
    ctx.restore();
    outline(hover);
  }

  function hit(mx, my) {
    if (N === 0 || !(tot[zoom] > 0)) return -1;
    const row = Math.floor(my / FRAME_H), d = icicle.checked ? row : maxDepth - row;
    if (d < 0 || d > maxDepth) return -1;
    if (d < dp[zoom]) { let a = zoom; while (dp[a] > d) a = par[a]; return a; }
    const t = x[zoom] + mx * tot[zoom] / width;
    let i = zoom;
    if (t < x[i] || t >= x[i] + tot[i]) return -1;
    while (dp[i] < d) {
      let c = i + 1, found = -1;
      while (c < end[i]) {
        if (t >= x[c] && t < x[c] + tot[c]) { found = c; break; }
        c = end[c];
      }
      if (found < 0) return -1;
      i = found;
    }
    return i;
  }

  // Details of a frame: samples, shares, self, and counters with their ratios.
  function describe(i) {
    const unit = D.unit, lines = [D.names[nm[i]]];
    let l = fmt(tot[i]) + ' ' + unit + ', ' + pct(tot[i], tot[0]) + ' of total';
    if (zoom !== 0 && i !== zoom && end[zoom] > i && i > zoom) l += ', ' + pct(tot[i], tot[zoom]) + ' of zoomed frame';
    lines.push(l);
    lines.push('self: ' + fmt(slf[i]) + ' ' + unit + ' (' + pct(slf[i], tot[0]) + ')');
    for (let k = 0; k < K; k++) {
      const v = cnt[i * K + k];
      let c = D.counters[k] + ': ' + fmt(v) + ' (' + pct(v, cnt[k]) + ' of all)';
      if (!D.cpi && unit === 'samples') c += ', ' + ratio(v, tot[i]) + ' per sample';
      lines.push(c);
    }
    if (D.cpi) lines.push('CPI (cycles/instructions): ' + ratio(cnt[i * K + D.cpi[0]], cnt[i * K + D.cpi[1]]));
    if (D.diff) {
      const a = D.diff.aTotal, pts = function (v) { return (v >= 0 ? '+' : '') + (v * 100).toFixed(2) + ' points'; };
      lines.push('A: ' + pct(aTot[i], a) + ' of samples \u2192 B: ' + pct(tot[i], tot[0]) + ' (' + pts(change[i]) + ')');
      const sc = (tot[0] > 0 ? slf[i] / tot[0] : 0) - (a > 0 ? aSelf[i] / a : 0);
      lines.push('self: A ' + pct(aSelf[i], a) + ' \u2192 B ' + pct(slf[i], tot[0]) + ' (' + pts(sc) + ')');
    }
    return lines;
  }

  canvas.addEventListener('mousemove', function (e) {
    const r = canvas.getBoundingClientRect(), i = hit(e.clientX - r.left, e.clientY - r.top);
    if (i !== hover) setHover(i);
    if (i < 0) { tip.hidden = true; return; }
    const lines = describe(i);
    tip.textContent = lines.join('\n');
    tip.hidden = false;
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    tip.style.left = Math.max(0, Math.min(e.clientX + 12, window.innerWidth - tw - 4)) + 'px';
    tip.style.top = (e.clientY + 16 + th > window.innerHeight ? e.clientY - th - 8 : e.clientY + 16) + 'px';
    status.textContent = lines.join(' | ');
  });
  canvas.addEventListener('mouseleave', function () { tip.hidden = true; setHover(-1); });
  canvas.addEventListener('click', function (e) {
    const r = canvas.getBoundingClientRect(), i = hit(e.clientX - r.left, e.clientY - r.top);
    if (i >= 0) setZoom(i);
  });

  function setZoom(i) {
    zoom = i;
    document.getElementById('reset').disabled = i === 0;
    updateMatched();
    draw();
  }
  document.getElementById('reset').addEventListener('click', function () { setZoom(0); });
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Escape') { if (document.activeElement === search) { search.value = ''; runSearch(); } setZoom(0); }
    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search.focus(); search.select(); }
  });
  icicle.addEventListener('change', draw);

  // Search: a regular expression, or plain text when the input is not a valid one.
  function runSearch() {
    const q = search.value;
    search.classList.remove('bad');
    if (!q) { matchName = null; updateMatched(); draw(); return; }
    let test;
    try { const re = new RegExp(q); test = function (s) { return re.test(s); }; }
    catch (err) { search.classList.add('bad'); test = function (s) { return s.indexOf(q) >= 0; }; }
    matchName = new Uint8Array(D.names.length);
    for (let j = 0; j < D.names.length; j++) matchName[j] = test(D.names[j]) ? 1 : 0;
    updateMatched();
    draw();
  }
  // Matched share: each sample counted once, at the outermost matching frame.
  function matchedIn(from, to) {
    let sum = 0, i = from;
    while (i < to) { if (matchName[nm[i]]) { sum += tot[i]; i = end[i]; } else i++; }
    return sum;
  }
  function updateMatched() {
    if (!matchName) { matchedEl.textContent = ''; return; }
    let all = 0;
    for (let i = 0; i < N;) { if (matchName[nm[i]]) { all += tot[i]; i = end[i]; } else i++; }
    let t = 'Matched: ' + pct(all, tot[0]) + ' (' + fmt(all) + ' ' + D.unit + ')';
    if (zoom !== 0) {
      let z = matchedIn(zoom, end[zoom]);
      for (let a = par[zoom]; a >= 0; a = par[a]) if (matchName[nm[a]]) z = tot[zoom];
      t += ', ' + pct(z, tot[zoom]) + ' of zoomed frame';
    }
    matchedEl.textContent = t;
  }
  let timer = 0;
  search.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(runSearch, 150); });

  window.addEventListener('resize', resize);
  document.getElementById('reset').disabled = true;
  resize();
})();
