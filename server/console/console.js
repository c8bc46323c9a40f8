// The gpulse console's core (docs/console.md): the API with its token, the
// URL that keeps each view's state, and the helpers the views draw with.
// The views themselves are in views.js; Chart.js draws the charts.
'use strict';

const G = {
  views: {},       // name -> async function(main, params), set by views.js
  charts: [],      // the current view's charts, destroyed when it changes
  dataEnd: null,   // ms: the fleet's newest node report (a view's default "now")
};

// --- the API ---------------------------------------------------------------

G.token = () => localStorage.getItem('gpulse.token') || '';

// Calls the server; the answer's JSON, or an Error with the server's message.
// A 401 asks for a token and tries again with it.
G.api = async (path, options = {}) => {
  const headers = Object.assign({}, options.headers || {});
  if (G.token()) headers.Authorization = 'Token ' + G.token();
  const res = await fetch(path, Object.assign({}, options, { headers }));
  if (res.status === 401) {
    await G.askToken(G.token() ? 'That token was refused.' : '');
    return G.api(path, options);
  }
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text }; }
  if (!res.ok) throw new Error((body && body.error) || res.status + ' ' + res.statusText);
  return { body, headers: res.headers };
};

G.json = async (path, options) => (await G.api(path, options)).body;

// Runs InfluxQL statements on the chosen database: their results, each with
// `rows` (objects by column) beside the series, times in ms; a statement's
// error is thrown.
G.query = async (q) => {
  const form = new URLSearchParams({ q, epoch: 'ms' });
  if (G.db()) form.set('db', G.db());
  const started = performance.now();
  const { body, headers } = await G.api('/query', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
  const results = body.results || [];
  for (const r of results) {
    if (r.error) throw new Error(r.error);
    for (const s of r.series || []) {
      s.rows = (s.values || []).map((v) => Object.fromEntries(s.columns.map((c, i) => [c, v[i]])));
    }
    r.series = r.series || [];
  }
  results.ms = performance.now() - started;
  results.seriesRead = Number(headers.get('X-Gpulse-Series-Read') || 0);
  results.pointsRead = Number(headers.get('X-Gpulse-Points-Read') || 0);
  return results;
};

G.askToken = (message) => new Promise((resolve) => {
  const dialog = document.getElementById('login');
  document.getElementById('login-error').textContent = message;
  const form = document.getElementById('login-form');
  form.onsubmit = () => {
    localStorage.setItem('gpulse.token', document.getElementById('login-token').value);
    document.getElementById('signout').hidden = false;
    resolve();
  };
  if (!dialog.open) dialog.showModal();
});

// --- the URL: #view?key=value... ---------------------------------------------

G.route = () => {
  const hash = location.hash.replace(/^#/, '') || 'fleet';
  const [view, query] = hash.split('?');
  return { view, params: Object.fromEntries(new URLSearchParams(query || '')) };
};

// Keeps `changes` in the URL (a view shared is the view seen) and redraws.
G.go = (view, params) => {
  const clean = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== '' && v != null));
  const query = new URLSearchParams(clean).toString();
  location.hash = view + (query ? '?' + query : '');
};

G.db = () => G.route().params.db || '';

// --- drawing -------------------------------------------------------------------

// el('td', {class: 'num'}, '12') and so on: an element with attributes
// (on* are listeners) and children (strings become text).
G.el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== false && v != null) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c != null) e.append(c instanceof Node ? c : String(c));
  return e;
};

// A table of `rows` (objects) under `columns`: [key, heading, format?].
G.table = (columns, rows) => {
  const head = G.el('tr', {}, columns.map(([, h]) => G.el('th', {}, h)));
  const body = rows.map((r) => G.el('tr', {}, columns.map(([k, , f]) => {
    const v = r[k];
    const shown = f ? f(v, r) : v;
    return G.el('td', { class: typeof v === 'number' ? 'num' : null }, shown == null ? '' : shown);
  })));
  return G.el('div', { class: 'table-wrap' }, G.el('table', {}, G.el('thead', {}, head), G.el('tbody', {}, body)));
};

// A chart in a new canvas; destroyed when the view changes.
G.chart = (config, small) => {
  const canvas = G.el('canvas');
  const box = G.el('div', { class: small ? 'chart small' : 'chart' }, canvas);
  config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false,
    interaction: { mode: 'index', intersect: false } }, config.options || {});
  G.charts.push(new Chart(canvas, config));
  return box;
};

// A time axis on epoch milliseconds over [from, to] (when given), ticked
// at whole minutes, hours or days and labelled in UTC.
G.timeAxis = (from, to) => {
  const steps = [60e3, 300e3, 900e3, 3600e3, 3 * 3600e3, 6 * 3600e3, 12 * 3600e3, 86400e3, 7 * 86400e3];
  const axis = { type: 'linear', ticks: { maxTicksLimit: 9, callback: (v) => G.fmtTick(v) } };
  if (from != null && to != null) {
    axis.min = from;
    axis.max = to;
    axis.ticks.stepSize = steps.find((s) => (to - from) / s <= 8) || 30 * 86400e3;
  }
  return axis;
};
G.fmtTick = (ms) => {
  const t = G.fmtTime(ms);
  return t.endsWith(' 00:00:00Z') ? t.slice(0, 10) : t.slice(5, 16);
};

G.fmtTime = (ms) => (ms == null ? '' : new Date(ms).toISOString().replace('.000Z', 'Z').replace('T', ' '));
G.fmtPct = (v, digits = 1) => (v == null ? '' : (100 * v).toFixed(digits) + ' %');
G.fmtNum = (v) => (v == null ? '' : typeof v !== 'number' ? v
  : Number.isInteger(v) ? v.toLocaleString('en-US') : Number(v.toPrecision(4)).toLocaleString('en-US'));
G.fmtAge = (s) => (s == null ? 'never' : s < 120 ? s + ' s' : s < 7200 ? Math.round(s / 60) + ' min'
  : s < 172800 ? Math.round(s / 3600) + ' h' : Math.round(s / 86400) + ' d');
G.iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

G.palette = ['#2a6f97', '#c0392b', '#e67e22', '#8e44ad', '#16a085', '#7f8c8d', '#d35400',
  '#2c3e50', '#27ae60', '#f1c40f', '#95a5a6', '#34495e', '#e84393', '#00b894', '#6c5ce7', '#fd79a8'];

// The newest node report (ms), the default end of a view's range: the data's
// "now", so that a week of demo data shows whenever the page is opened.
G.end = async () => {
  if (G.dataEnd == null) {
    const nodes = await G.json('/api/v1/nodes' + (G.db() ? '?db=' + encodeURIComponent(G.db()) : ''));
    const last = Math.max(0, ...nodes.nodes.map((n) => (n.last_report ? Date.parse(n.last_report) : 0)));
    G.dataEnd = last ? Math.ceil((last + 60000) / 3600000) * 3600000 : Date.now();
  }
  return G.dataEnd;
};

// A view's range from its params (from, to: ISO or epoch ms; span: 24h, 7d).
G.range = async (params, defaultSpan = '7d') => {
  const spans = { '1h': 3600e3, '6h': 6 * 3600e3, '24h': 86400e3, '7d': 7 * 86400e3, '30d': 30 * 86400e3 };
  const to = params.to ? Date.parse(params.to) : await G.end();
  const span = spans[params.span || defaultSpan] || spans[defaultSpan];
  const from = params.from ? Date.parse(params.from) : to - span;
  return { from, to };
};

// The controls every ranged view shares: span presets and an explicit end.
G.rangeControls = (view, params, extra = []) => {
  const span = G.el('select', { name: 'span' }, ['1h', '6h', '24h', '7d', '30d'].map((s) =>
    G.el('option', { value: s, selected: (params.span || params.defaultSpan) === s }, s)));
  const to = G.el('input', { name: 'to', type: 'text', placeholder: 'newest data', value: params.to || '', size: 22 });
  const form = G.el('form', { class: 'controls', onsubmit: (e) => {
    e.preventDefault();
    const next = Object.assign({}, params, Object.fromEntries(new FormData(form)));
    delete next.defaultSpan;
    delete next.from;
    G.go(view, next);
  } }, G.el('label', {}, 'span', span), G.el('label', {}, 'ending (UTC)', to), extra,
  G.el('button', { type: 'submit' }, 'Show'));
  return form;
};

G.error = (e) => G.el('p', { class: 'error', role: 'alert' }, String(e.message || e));

// --- the frame -----------------------------------------------------------------

G.render = async () => {
  const { view, params } = G.route();
  for (const c of G.charts) c.destroy();
  G.charts = [];
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view || (view === 'node' && a.dataset.view === 'nodes'));
  const main = document.getElementById('main');
  main.replaceChildren(G.el('p', { class: 'note' }, 'Loading…'));
  const draw = G.views[view] || G.views.fleet;
  try {
    const content = await draw(params);
    main.replaceChildren(...[].concat(content));
  } catch (e) {
    main.replaceChildren(G.error(e));
  }
  main.dataset.ready = view;  // for tests: the view is drawn
};

G.loadDatabases = async () => {
  const select = document.getElementById('db');
  let names = [];
  try {
    const r = await G.query('SHOW DATABASES');
    names = r[0].series.length ? r[0].series[0].values.map((v) => v[0]) : [];
  } catch (e) { /* a token of no database: the default only */ }
  select.replaceChildren(G.el('option', { value: '' }, '(default)'),
    ...names.map((n) => G.el('option', { value: n, selected: n === G.db() }, n)));
  select.onchange = () => {
    G.dataEnd = null;
    const { view, params } = G.route();
    G.go(view, Object.assign(params, { db: select.value }));
  };
};

window.addEventListener('DOMContentLoaded', async () => {
  document.getElementById('signout').hidden = !G.token();
  document.getElementById('signout').onclick = () => {
    localStorage.removeItem('gpulse.token');
    location.reload();
  };
  window.addEventListener('hashchange', G.render);
  await G.loadDatabases();
  G.render();
});
