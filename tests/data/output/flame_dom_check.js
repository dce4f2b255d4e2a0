// Runs the script of an `hpm flamegraph` HTML page against a minimal fake DOM and canvas in
// Node, and checks drawing, hover, zoom and search on the `small.collapsed` fixture; with
// `diff`, the differential page `hpm diff` writes for `ours.collapsed` -> `other.collapsed`
// (tests/data/analysis): colours by change, the legend, the tooltip's shares.
// usage: node flame_dom_check.js PAGE.html [diff]    (exit status 0 when every check passes)
'use strict';
const fs = require('fs');
const vm = require('vm');

const html = fs.readFileSync(process.argv[2], 'utf8');
const dataOpen = '<script type="application/json" id="fg-data">';
const d0 = html.indexOf(dataOpen) + dataOpen.length;
const data = html.slice(d0, html.indexOf('</script>', d0));
const c0 = html.indexOf('<script>', d0) + '<script>'.length;
const code = html.slice(c0, html.indexOf('</script>', c0));

let rects = [], texts = [];
const ctx = {
  fillStyle: '', strokeStyle: '', globalAlpha: 1, font: '',
  setTransform() {}, clearRect() { rects = []; texts = []; },
  fillRect(x, y, w, h) { rects.push({ x, y, w, h, fill: this.fillStyle, alpha: this.globalAlpha }); },
  strokeRect() {}, fillText(t, x, y) { texts.push({ t, x, y }); },
  save() {}, restore() {}, drawImage() {},
  measureText(s) { return { width: s.length * 8 }; },
};
const elements = {};
function el(id) {
  const e = {
    id, hidden: false, textContent: '', value: '', checked: false, disabled: false, style: {}, className: '',
    offsetWidth: 200, offsetHeight: 60, clientWidth: 1000, width: 0, height: 0, listeners: {}, children: [],
    classList: { s: new Set(), add(c) { this.s.add(c); }, remove(c) { this.s.delete(c); }, contains(c) { return this.s.has(c); } },
    addEventListener(t, f) { (this.listeners[t] = this.listeners[t] || []).push(f); },
    fire(t, ev) { (this.listeners[t] || []).forEach(f => f(ev || {})); },
    appendChild(c) { this.children.push(c); }, focus() { document.activeElement = this; }, select() {},
    getBoundingClientRect() { return { left: 0, top: 0 }; }, getContext() { return ctx; },
  };
  elements[id] = e;
  return e;
}
const document = {
  activeElement: null, listeners: {},
  getElementById(id) {
    if (id === 'fg-data') return { textContent: data };
    return elements[id] || el(id);
  },
  createElement(tag) {
    const e = el('anon' + Math.random());
    // The page's off-screen copy of the tree (a canvas of its own): drawn into, never checked.
    if (tag === 'canvas') e.getContext = () => ({ clearRect() {}, drawImage() {} });
    return e;
  },
  createTextNode(t) { return { textContent: t }; },
  addEventListener(t, f) { (this.listeners[t] = this.listeners[t] || []).push(f); },
};
const window = { devicePixelRatio: 1, innerWidth: 1200, innerHeight: 800, addEventListener() {} };

const failures = [];
function check(cond, what) { if (!cond) failures.push(what); }

vm.runInNewContext(code, { document, window, setTimeout, clearTimeout, console });
const canvas = elements.fg, tip = elements.tip, status = elements.status;

if (process.argv[3] === 'diff') {
  // B: java.lang.Thread.run;Other.task 30. A: Main.work and Main.hot under Thread.run.
  check(rects.length === 3, 'diff: 3 frames drawn (root, Thread.run, Other.task), got ' + rects.length);
  const fills = rects.map(r => r.fill);
  check(fills[0] === 'rgb(225,225,225)' && fills[1] === 'rgb(225,225,225)', 'unchanged frames grey: ' + fills);
  check(fills[2] === 'rgb(255,50,50)', 'Other.task grew from 0% to 100%: deepest red, got ' + fills[2]);
  const legend = elements.legend.children.map(c => c.textContent || '').join('|');
  check(legend.includes('grew') && legend.includes('shrank') && legend.includes('\u00b1100.00 points'), 'legend: ' + legend);
  const task = texts.find(t => t.t.startsWith('Other.task'));
  canvas.fire('mousemove', { clientX: task.x + 5, clientY: task.y - 5 });
  check(tip.textContent.includes('A: 0.00% of samples \u2192 B: 100.00% (+100.00 points)'), 'tooltip: ' + tip.textContent);
  check(tip.textContent.includes('self: A 0.00% \u2192 B 100.00% (+100.00 points)'), 'tooltip self: ' + tip.textContent);
  if (failures.length) { console.error('FAILED:\n' + failures.join('\n')); process.exit(1); }
  console.log('flame.js diff checks passed');
  process.exit(0);
}

check(rects.length === 9, 'initial draw: 9 frames drawn, got ' + rects.length);
const label = name => texts.find(t => t.t.startsWith(name.slice(0, 6)) && name.startsWith(t.t.replace('\u2026', '')));
const hot = label('app.Hot.loop');
check(hot, 'label for app.Hot.loop drawn');
const at = t => ({ clientX: t.x + 5, clientY: t.y - 5 });
canvas.fire('mousemove', at(hot));
check(!tip.hidden && tip.textContent.startsWith('app.Hot.loop\n85 samples, 84.16% of total'),
  'tooltip for app.Hot.loop: ' + JSON.stringify(tip.textContent));
check(tip.textContent.includes('self: 60 samples'), 'tooltip self samples');
check(status.textContent.includes('app.Hot.loop | 85 samples'), 'status line: ' + status.textContent);

// Names sort as `Evil.<init>` < `[GC]` < `app...`: the 1-sample tower is leftmost.
canvas.fire('mousemove', { clientX: 3, clientY: 16 + 8 });
check(tip.textContent.startsWith('Foo$Bar."quoted"</script>\n1 samples, 0.99% of total'),
  'escaped name decoded back: ' + JSON.stringify(tip.textContent));
canvas.fire('mousemove', { clientX: 3, clientY: 32 + 8 });
check(tip.textContent.startsWith('Evil.<init>\n'), 'escaped name decoded back: ' + JSON.stringify(tip.textContent));

canvas.fire('click', at(hot));
const full = rects.filter(r => r.w >= 999 && r.alpha === 1);
check(full.length === 1, 'zoomed frame spans the width: ' + full.length);
check(rects.filter(r => r.alpha < 1).length === 2, 'ancestors drawn faded');
check(!elements.reset.disabled, 'reset enabled after zoom');

const search = elements.search;
search.value = 'HashMap|trim_queue';
search.fire('input');
setTimeout(() => {
  check(elements.matched.textContent.startsWith('Matched: 32.67% (33 samples)'),
    'matched share: ' + elements.matched.textContent);
  check(elements.matched.textContent.includes('29.41% of zoomed frame'), 'matched in zoom: ' + elements.matched.textContent);
  check(rects.some(r => r.fill === '#e03ce0'), 'matches highlighted');
  elements.reset.fire('click');
  check(rects.length === 9 && elements.reset.disabled, 'reset shows everything again');
  search.value = 'Foo$Bar."quoted"(';
  search.fire('input');
  setTimeout(() => {
    check(search.classList.contains('bad'), 'invalid regex flagged');
    check(elements.matched.textContent.startsWith('Matched: 0.00%'), 'substring fallback: ' + elements.matched.textContent);
    search.value = 'quoted"</script>';
    search.fire('input');
    setTimeout(() => {
      check(elements.matched.textContent.startsWith('Matched: 0.99%'), 'substring match: ' + elements.matched.textContent);
      if (failures.length) { console.error('FAILED:\n' + failures.join('\n')); process.exit(1); }
      console.log('flame.js checks passed');
    }, 200);
  }, 200);
}, 200);
