// The gpulse console's views (docs/console.md): each is an async function
// of the URL's parameters that returns what to show. They ask the server
// the product's own questions (NORTHSTAR, DECOMPOSE, SHOW STALE) and read
// its REST API; console.js has the helpers.
'use strict';

const LOSSES = ['hardware', 'software', 'scheduling', 'data_io', 'network', 'lost_work', 'unobserved', 'slack'];
const LOSS_COLORS = { hardware: '#c0392b', software: '#e67e22', scheduling: '#8e44ad', data_io: '#16a085',
  network: '#2980b9', lost_work: '#d35400', unobserved: '#7f8c8d', slack: '#cfd8dc' };
const q = (s) => "'" + String(s).replace(/\\/g, '\\\\').replace(/'/g, "\\'") + "'";
const ident = (s) => '"' + String(s).replace(/"/g, '\\"') + '"';
const timeRange = (from, to) => `time >= ${q(G.iso(from))} AND time < ${q(G.iso(to))}`;
const bucketFor = (span) => (span <= 6 * 3600e3 ? '5m' : span <= 86400e3 ? '15m' : span <= 7 * 86400e3 ? '1h' : '6h');
const dbParam = (sep = '?') => (G.db() ? sep + 'db=' + encodeURIComponent(G.db()) : '');

// BASELINE's band for each of `rows` (time, value): the median of the same
// time of day on the earlier days (up to 7) of the same kind, weekday or
// weekend, +/- 3 x 1.4826 x MAD (docs/metric-framework.md).
function band(rows, history) {
  const byTime = new Map(history.map((r) => [r.time, r.goodput]));
  const weekend = (ms) => [0, 6].includes(new Date(ms).getUTCDay());
  return rows.map((r) => {
    const past = [];
    for (let d = 1; d <= 14 && past.length < 7; ++d) {
      const t = r.time - d * 86400e3;
      if (weekend(t) === weekend(r.time) && byTime.get(t) != null) past.push(byTime.get(t));
    }
    if (past.length < 2) return { lower: null, upper: null, expected: null };
    const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
    const expected = median(past);
    const spread = 3 * 1.4826 * Math.max(median(past.map((x) => Math.abs(x - expected))), 0.005);
    return { expected, lower: Math.max(0, expected - spread), upper: Math.min(1, expected + spread) };
  });
}

// --- Fleet: goodput, its losses, its band, its cost ------------------------------

G.views.fleet = async (p) => {
  const { from, to } = await G.range(p, '7d');
  const every = bucketFor(to - from);
  const dims = { region: 'tag', cluster: 'tag', sku: 'tag', team: 'attribution' };
  const dim = dims[p.dim] ? p.dim : '';
  const value = dim ? p.value || '' : '';
  const where = (a, b) => (dim && value && dims[dim] === 'tag' ? `${ident(dim)} = ${q(value)} AND ` : '') + timeRange(a, b);
  const by = dim === 'team' ? ' BY team' : '';
  const mine = (s) => !(dim === 'team' && value) || (s.tags && s.tags.team === value);
  const [now, past, whole] = await Promise.all([
    G.query(`NORTHSTAR${by} WHERE ${where(from, to)} EVERY ${every}`),
    G.query(`NORTHSTAR${by} WHERE ${where(from - 14 * 86400e3, from)} EVERY ${every}`).catch(() => [{ series: [] }]),
    G.query(`NORTHSTAR${by} WHERE ${where(from, to)}`),
  ]);
  const rowsOf = (r) => r[0].series.filter(mine).flatMap((s) => s.rows);
  const rows = rowsOf(now);
  const total = rowsOf(whole)[0] || {};
  const limits = band(rows, rowsOf(past).concat(rows));

  // The picker: a dimension and one of its values.
  let values = [];
  if (dims[dim] === 'tag') {
    const r = await G.query(`SHOW TAG VALUES FROM gpu WITH KEY = ${ident(dim)}`);
    values = r[0].series.flatMap((s) => s.rows.map((x) => x.value));
  } else if (dim === 'team') {
    values = whole[0].series.map((s) => (s.tags || {}).team).filter(Boolean);
  }
  const picker = [
    G.el('label', {}, 'group', G.el('select', { name: 'dim' }, G.el('option', { value: '' }, 'whole fleet'),
      Object.keys(dims).map((d) => G.el('option', { value: d, selected: d === dim }, d)))),
    G.el('label', {}, 'value', G.el('select', { name: 'value' }, G.el('option', { value: '' }, 'all'),
      values.map((v) => G.el('option', { value: v, selected: v === value }, v)))),
  ];
  const tile = (label, v) => G.el('div', { class: 'tile' }, G.el('div', { class: 'label' }, label), G.el('div', { class: 'value' }, v));
  const t = rows.map((r) => r.time);
  const goodput = G.chart({
    type: 'line',
    data: { labels: t, datasets: [
      { label: 'usual range (high)', data: limits.map((b) => b.upper), borderWidth: 0, pointRadius: 0, fill: '+1', backgroundColor: 'rgba(42,111,151,0.12)' },
      { label: 'usual range (low)', data: limits.map((b) => b.lower), borderWidth: 0, pointRadius: 0, fill: false },
      { label: 'goodput', data: rows.map((r) => r.goodput), borderColor: '#2a6f97', pointRadius: 0, borderWidth: 2 },
    ] },
    options: { scales: { x: G.timeAxis(from, to), y: { min: 0, max: 1, ticks: { callback: (v) => G.fmtPct(v, 0) } } },
      plugins: { tooltip: { callbacks: { title: (i) => G.fmtTime(i[0].parsed.x), label: (i) => i.dataset.label + ': ' + G.fmtPct(i.parsed.y) } } } },
  });
  const losses = G.chart({
    type: 'line',
    data: { labels: t, datasets: LOSSES.map((l) => ({ label: l, data: rows.map((r) => r[l]), fill: true, pointRadius: 0,
      borderWidth: 1, borderColor: LOSS_COLORS[l], backgroundColor: LOSS_COLORS[l] })) },
    options: { scales: { x: G.timeAxis(from, to), y: { stacked: true, min: 0, ticks: { callback: (v) => G.fmtPct(v, 0) } } },
      plugins: { tooltip: { callbacks: { title: (i) => G.fmtTime(i[0].parsed.x), label: (i) => i.dataset.label + ': ' + G.fmtPct(i.parsed.y) } } } },
  }, true);
  return [
    G.el('h1', {}, 'Goodput', dim && value ? ` of ${dim} ${value}` : ' of the fleet'),
    G.rangeControls('fleet', Object.assign({ defaultSpan: '7d' }, p), picker),
    G.el('div', { class: 'tiles' },
      tile('goodput', G.fmtPct(total.goodput)),
      tile('capacity', G.fmtNum(Math.round((total.capacity_gpu_minutes || 0) / 60)) + ' GPU-h'),
      tile('cost per productive GPU-hour', total.usd_per_productive_gpu_hour == null ? 'no prices' : '$' + total.usd_per_productive_gpu_hour.toFixed(2)),
      tile('failed jobs', G.fmtNum(total.failed_jobs || 0))),
    G.el('div', { class: 'panel', id: 'goodput-chart', 'data-points': rows.length },
      G.el('h2', {}, `Goodput every ${every}, with its usual range`), goodput),
    G.el('div', { class: 'panel' }, G.el('h2', {}, 'Where the rest went (share of capacity)'), losses),
    G.el('p', { class: 'note' }, `NORTHSTAR${by} WHERE ${where(from, to)} EVERY ${every}`),
  ];
};

// --- Why: DECOMPOSE as a waterfall ----------------------------------------------

G.views.why = async (p) => {
  const end = p.a2 ? Date.parse(p.a2) : await G.end();
  const a1 = p.a1 ? Date.parse(p.a1) : end - 86400e3;
  const b2 = p.b2 ? Date.parse(p.b2) : a1;
  const b1 = p.b1 ? Date.parse(p.b1) : b2 - (end - a1);
  const r = await G.query(`DECOMPOSE NORTHSTAR BETWEEN ${q(G.iso(b1))} AND ${q(G.iso(b2))} VERSUS ${q(G.iso(a1))} AND ${q(G.iso(end))}`);
  const main = r[0].series.find((s) => s.name === 'decompose');
  const rows = main ? main.rows : [];
  const good = rows.find((x) => x.loss === 'goodput') || { before: 0, after: 0 };
  const losses = rows.filter((x) => x.loss !== 'goodput');
  // Bars from goodput before, through each loss's change (a loss that grew
  // takes goodput down), to goodput after.
  let level = good.before;
  const bars = [[0, good.before]];
  for (const l of losses) {
    const next = level - (l.after - l.before);
    bars.push([level, next]);
    level = next;
  }
  bars.push([0, good.after]);
  const labels = ['goodput before', ...losses.map((l) => l.loss), 'goodput after'];
  const colors = bars.map(([a, b], i) => (i === 0 || i === bars.length - 1 ? '#2a6f97' : b < a ? '#c0392b' : '#27ae60'));
  const chart = G.chart({
    type: 'bar',
    data: { labels, datasets: [{ label: 'goodput', data: bars, backgroundColor: colors }] },
    options: { scales: { y: { min: Math.max(0, Math.floor(20 * Math.min(...bars.slice(1, -1).flat(), good.before, good.after)) / 20 - 0.05), ticks: { callback: (v) => G.fmtPct(v, 0) } } },
      plugins: { legend: { display: false }, tooltip: { callbacks: { label: (i) => { const [a, b] = i.raw; return G.fmtPct(a) + ' → ' + G.fmtPct(b); } } } } },
  });
  const top = losses.slice().sort((x, y) => x.rank - y.rank)[0];
  const pick = p.loss || (top && top.loss);
  const contributors = r[0].series.filter((s) => s.name === 'contributors' && s.tags && s.tags.loss === pick).flatMap((s) => s.rows);
  const input = (name, ms) => G.el('input', { name, value: G.iso(ms), size: 22 });
  const form = G.el('form', { class: 'controls', onsubmit: (e) => { e.preventDefault(); G.go('why', Object.assign({}, p, Object.fromEntries(new FormData(form)))); } },
    G.el('label', {}, 'before: from', input('b1', b1)), G.el('label', {}, 'to', input('b2', b2)),
    G.el('label', {}, 'after: from', input('a1', a1)), G.el('label', {}, 'to', input('a2', end)),
    G.el('button', { type: 'submit' }, 'Compare'));
  return [
    G.el('h1', {}, 'Why goodput moved'),
    form,
    G.el('div', { class: 'panel', id: 'waterfall', 'data-bars': bars.length }, G.el('h2', {}, `Goodput ${G.fmtPct(good.before)} → ${G.fmtPct(good.after)}, loss by loss`), chart),
    G.el('div', { class: 'panel' }, G.el('h2', {}, 'Each loss'), G.table([
      ['rank', 'rank'], ['loss', 'loss', (v) => G.el('a', { href: '#why?' + new URLSearchParams(Object.assign({}, p, { loss: v })) }, v)],
      ['before', 'before', (v) => G.fmtPct(v)], ['after', 'after', (v) => G.fmtPct(v)],
      ['change_points', 'change (points)', G.fmtNum], ['noise_points', 'usual noise (points)', G.fmtNum],
      ['significance', 'significance', G.fmtNum], ['verdict', 'verdict'], ['evidence', 'evidence']], losses),
      ...(r[0].notes || []).map((note) => G.el('p', { class: 'note' }, note))),
    G.el('div', { class: 'panel', id: 'contributors' }, G.el('h2', {}, `Where ${pick || 'the largest loss'} changed`),
      contributors.length ? G.table([['rank', 'rank'], ['dimension', 'dimension'], ['value', 'value'],
        ['before', 'before', (v) => G.fmtPct(v)], ['after', 'after', (v) => G.fmtPct(v)],
        ['change_points', 'change (points)', G.fmtNum], ['share_of_change', 'share of change', (v) => G.fmtPct(v)]], contributors)
        : G.el('p', { class: 'note' }, 'No contributor stands out for this loss.')),
  ];
};

// --- Alerts ---------------------------------------------------------------------

G.views.alerts = async () => {
  let body;
  try {
    body = await G.json('/api/v1/alerts');
  } catch (e) {
    return [G.el('h1', {}, 'Alerts'), G.error(e)];
  }
  const group = (g) => Object.entries(g || {}).map(([k, v]) => `${k}=${v}`).join(', ');
  const resolve = (a) => (a.state === 'resolved' ? '' : G.el('button', { class: 'quiet', onclick: async () => {
    await G.json(`/api/v1/alerts/${encodeURIComponent(a.id)}/resolve`, { method: 'POST' });
    G.render();
  } }, 'Resolve'));
  return [
    G.el('h1', {}, 'Alerts'),
    G.el('div', { class: 'panel', id: 'alert-list' }, G.el('h2', {}, 'Firing, pending and recently resolved'),
      body.alerts.length ? G.table([
        ['state', 'state', (v) => G.el('span', { class: 'state-' + v }, v)],
        ['severity', 'severity', (v) => G.el('span', { class: 'severity-' + v }, v)],
        ['rule', 'rule'], ['group', 'where', group], ['owner', 'owner'],
        ['active_since', 'since'], ['fired_at', 'fired'], ['resolved_at', 'resolved'],
        ['id', '', (v, a) => resolve(a)]], body.alerts) : G.el('p', { class: 'note' }, 'No alert is firing or pending.')),
    G.el('div', { class: 'panel' }, G.el('h2', {}, 'Rules'), G.table([
      ['name', 'rule'], ['severity', 'severity'], ['owner', 'owner'], ['firing', 'firing'], ['pending', 'pending'],
      ['last_fired', 'last fired', (v) => v || 'not since the server started'], ['action', 'action'],
      ['error', 'last error', (v) => (v ? G.el('span', { class: 'error' }, v) : '')],
      ['definition', 'definition']], body.rules)),
  ];
};

// --- Freshness ------------------------------------------------------------------

G.views.freshness = async () => {
  const [stale, nodes] = await Promise.all([G.query('SHOW STALE'), G.json('/api/v1/nodes' + dbParam())]);
  const findings = stale[0].series.flatMap((s) => s.rows);
  const clusters = new Map();
  for (const n of nodes.nodes) {
    const c = clusters.get(n.cluster) || { cluster: n.cluster, region: n.region, nodes: 0, age: null };
    c.nodes += 1;
    if (n.last_report_age_s != null && (c.age == null || n.last_report_age_s < c.age)) c.age = n.last_report_age_s;
    clusters.set(n.cluster, c);
  }
  return [
    G.el('h1', {}, 'Freshness'),
    G.el('div', { class: 'panel', id: 'clusters' }, G.el('h2', {}, 'Each cluster\'s newest data, against the 1-hour promise'),
      G.table([['cluster', 'cluster'], ['region', 'region'], ['nodes', 'nodes'],
        ['age', 'newest data', (v) => G.el('span', { class: v != null && v <= 3600 ? 'fresh' : 'stale' }, G.fmtAge(v) + (v != null && v <= 3600 ? ' (kept)' : ' (broken)'))]],
      [...clusters.values()])),
    G.el('div', { class: 'panel', id: 'stale' }, G.el('h2', {}, 'SHOW STALE: silent agents, missing GPUs, idle allocations'),
      findings.length ? G.table(stale[0].series[0].columns.map((c) => [c, c, c === 'time' || c === 'last_seen' ? G.fmtTime : null]), findings)
        : G.el('p', { class: 'note' }, 'Nothing is stale.')),
  ];
};

// --- Nodes ----------------------------------------------------------------------

G.views.nodes = async (p) => {
  const body = await G.json('/api/v1/nodes' + dbParam());
  const filter = (p.filter || '').toLowerCase();
  const rows = body.nodes.filter((n) => !filter || [n.node, n.cluster, n.region, n.sku, n.status, n.driver].some((x) => String(x).toLowerCase().includes(filter)));
  const form = G.el('form', { class: 'controls', onsubmit: (e) => { e.preventDefault(); G.go('nodes', Object.assign({}, p, { filter: form.filter.value })); } },
    G.el('label', {}, 'filter', G.el('input', { name: 'filter', value: p.filter || '', placeholder: 'node, cluster, status…' })), G.el('button', { type: 'submit' }, 'Filter'));
  const link = (v, n) => G.el('a', { href: '#node?' + new URLSearchParams(Object.assign({ id: v }, n.database ? { db: n.database } : {})) }, v);
  return [
    G.el('h1', {}, `Nodes (${rows.length} of ${body.nodes.length})`), form,
    G.el('div', { class: 'panel', id: 'node-list' }, G.table([
      ['node', 'node', link], ['region', 'region'], ['cluster', 'cluster'], ['sku', 'SKU'],
      ['gpus_seen', 'GPUs', (v, n) => `${v} / ${n.gpus_expected}`], ['driver', 'driver'],
      ['last_report_age_s', 'last report', G.fmtAge],
      ['status', 'status', (v) => G.el('span', { class: 'status-' + v }, v)], ['active_alerts', 'alerts']], rows)),
  ];
};

G.views.node = async (p) => {
  const id = p.id || '';
  const base = `/api/v1/nodes/${encodeURIComponent(id)}`;
  const node = await G.json(base + dbParam());
  const to = p.to ? Date.parse(p.to) : Math.ceil((Date.parse(node.last_report || G.iso(Date.now())) + 60e3) / 60e3) * 60e3;
  const spans = { '1h': 3600e3, '6h': 6 * 3600e3, '24h': 86400e3, '7d': 7 * 86400e3 };
  const from = to - (spans[p.span] || spans['24h']);
  const fields = ['util', 'temp', 'power', 'sm_clock', 'xid'];
  const [metrics, actions] = await Promise.all([
    G.json(`${base}/metrics?fields=${fields.join(',')}&start=${from / 1000}&end=${to / 1000}${dbParam('&')}`),
    G.json(`/api/v1/actions?node=${encodeURIComponent(id)}${dbParam('&')}`),
  ]);
  const charts = fields.map((f) => {
    const series = metrics.series.filter((s) => s.field === f);
    return G.el('div', { class: 'panel', 'data-field': f, 'data-points': series.reduce((n, s) => n + s.points.length, 0) },
      G.el('h2', {}, f),
      G.chart({ type: f === 'xid' ? 'scatter' : 'line', data: { datasets: series.map((s, i) => ({
        label: 'GPU ' + s.gpu, data: s.points.map(([x, y]) => ({ x: x * 1000, y })), borderColor: G.palette[i % 16],
        backgroundColor: G.palette[i % 16], pointRadius: f === 'xid' ? 3 : 0, borderWidth: 1 })) },
      options: { parsing: false, scales: { x: G.timeAxis(from, to) } } }, true));
  });
  const status = G.el('select', { name: 'status' }, ['healthy', 'degraded', 'maintenance'].map((s) => G.el('option', { value: s, selected: s === node.status }, s)));
  const message = G.el('span', { class: 'note' });
  const form = G.el('form', { class: 'controls', id: 'status-form', onsubmit: async (e) => {
    e.preventDefault();
    try {
      await G.json(base + '/status' + dbParam(), { method: 'PUT', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ status: form.status.value, reason: form.reason.value, by: form.by.value }) });
      G.render();
    } catch (err) { message.replaceChildren(G.error(err)); }
  } }, G.el('label', {}, 'status', status), G.el('label', {}, 'why', G.el('input', { name: 'reason', required: true, size: 30 })),
  G.el('label', {}, 'who', G.el('input', { name: 'by', size: 12 })), G.el('button', { type: 'submit' }, 'Set'), message);
  return [
    G.el('h1', {}, `Node ${node.node} `, G.el('span', { class: 'status-' + node.status }, node.status)),
    G.el('p', {}, `${node.region} / ${node.cluster}, ${node.sku}, ${node.gpus_seen} of ${node.gpus_expected} GPUs, driver ${node.driver || '?'}, last report ${node.last_report || 'never'}`,
      node.status_set ? ` — set by ${node.status_actor} at ${node.status_since}: ${node.status_reason}` : ''),
    G.rangeControls('node', Object.assign({ defaultSpan: '24h' }, p)),
    G.el('div', { class: 'panel' }, G.el('h2', {}, 'Status'), form),
    ...charts,
    G.el('div', { class: 'panel' }, G.el('h2', {}, 'GPUs at their last report'), G.table([['gpu', 'GPU'], ['job', 'job'],
      ...['util', 'temp', 'power', 'sm_clock', 'fb_used', 'xid'].map((f) => [f, f, (v, g) => G.fmtNum(g.latest[f])]), ['last_report', 'time']], node.gpus)),
    G.el('div', { class: 'panel', id: 'actions' }, G.el('h2', {}, 'Status changes and actions'),
      G.table([['time', 'time'], ['action', 'action'], ['before', 'before'], ['after', 'after'], ['actor', 'by'], ['reason', 'why']], actions.actions)),
  ];
};

// --- Chargeback ------------------------------------------------------------------

G.views.chargeback = async (p) => {
  const { from, to } = await G.range(p, '7d');
  const by = p.by === 'user' ? 'user' : 'team';
  const every = p.every === '1mo' ? '1mo' : '1d';
  const r = await G.query(`NORTHSTAR BY ${by} WHERE ${timeRange(from, to)} EVERY ${every}`);
  const rows = r[0].series.flatMap((s) => s.rows.map((x) => ({
    time: x.time, [by]: (s.tags || {})[by] || '(unallocated)', gpu_hours: x.capacity_gpu_minutes / 60,
    productive_gpu_hours: x.productive_gpu_minutes / 60, cost_usd: x.cost_usd })))
    .filter((x) => x.gpu_hours > 0).sort((a, b) => a.time - b.time || String(a[by]).localeCompare(b[by]));
  const csv = () => {
    const lines = [['time', by, 'gpu_hours', 'productive_gpu_hours', 'cost_usd'].join(',')].concat(rows.map((x) =>
      [G.iso(x.time), '"' + String(x[by]).replace(/"/g, '""') + '"', x.gpu_hours, x.productive_gpu_hours, x.cost_usd ?? ''].join(',')));
    const a = G.el('a', { href: URL.createObjectURL(new Blob([lines.join('\n') + '\n'], { type: 'text/csv' })), download: `gpulse-chargeback-${by}-${every}.csv` });
    a.click();
  };
  const extra = [
    G.el('label', {}, 'by', G.el('select', { name: 'by' }, ['team', 'user'].map((x) => G.el('option', { selected: x === by }, x)))),
    G.el('label', {}, 'every', G.el('select', { name: 'every' }, ['1d', '1mo'].map((x) => G.el('option', { selected: x === every }, x)))),
  ];
  return [
    G.el('h1', {}, `GPU-hours and cost by ${by}`),
    G.rangeControls('chargeback', Object.assign({ defaultSpan: '7d' }, p), extra),
    G.el('p', {}, G.el('button', { type: 'button', id: 'csv', onclick: csv }, 'Download CSV')),
    G.el('div', { class: 'panel', id: 'chargeback' }, G.table([['time', every === '1d' ? 'day' : 'month', (v) => G.iso(v).slice(0, every === '1d' ? 10 : 7)],
      [by, by], ['gpu_hours', 'GPU-hours', G.fmtNum], ['productive_gpu_hours', 'productive GPU-hours', G.fmtNum],
      ['cost_usd', 'cost (USD)', (v) => (v == null ? 'no price' : v.toFixed(2))]], rows)),
  ];
};

// --- Query ------------------------------------------------------------------------

G.views.query = async (p) => {
  const lang = p.lang === 'promql' ? 'promql' : 'influxql';
  const text = p.q || '';
  const history = JSON.parse(localStorage.getItem('gpulse.history') || '[]');
  const box = G.el('textarea', { name: 'q', spellcheck: 'false' }, text);
  const form = G.el('form', { onsubmit: (e) => {
    e.preventDefault();
    const entry = { lang: form.lang.value, q: box.value };
    const kept = [entry].concat(history.filter((h) => h.q !== entry.q || h.lang !== entry.lang)).slice(0, 20);
    localStorage.setItem('gpulse.history', JSON.stringify(kept));
    G.go('query', Object.assign({}, p, entry));
  } },
  G.el('div', { class: 'controls' }, G.el('label', {}, 'language', G.el('select', { name: 'lang' },
    G.el('option', { value: 'influxql', selected: lang === 'influxql' }, 'InfluxQL'),
    G.el('option', { value: 'promql', selected: lang === 'promql' }, 'PromQL (over the last 24 h of data)'))),
  G.el('button', { type: 'submit' }, 'Run')), box);
  const past = G.el('ul', { class: 'history' }, history.map((h) => G.el('li', { onclick: () => G.go('query', Object.assign({}, p, h)) }, `[${h.lang}] ${h.q}`)));
  const out = [G.el('h1', {}, 'Query'), G.el('div', { class: 'panel' }, form, G.el('h2', {}, 'History'), past)];
  if (!text) return out;
  const answer = G.el('div', { class: 'panel', id: 'answer' });
  out.push(answer);
  try {
    if (lang === 'influxql') {
      const results = await G.query(text);
      answer.append(G.el('p', { class: 'note', id: 'answer-stats' }, `${results.ms.toFixed(0)} ms; read ${G.fmtNum(results.seriesRead)} series, ${G.fmtNum(results.pointsRead)} stored values`));
      for (const r of results) {
        for (const note of r.notes || []) answer.append(G.el('p', { class: 'note' }, note));
        const timed = r.series.filter((s) => s.columns[0] === 'time' && s.rows.length > 1);
        if (timed.length) {
          const datasets = timed.flatMap((s) => s.columns.slice(1).filter((c) => typeof s.rows[0][c] === 'number' || s.rows.some((x) => typeof x[c] === 'number')).map((c) => ({
            label: [s.name, c, ...Object.entries(s.tags || {}).map(([k, v]) => `${k}=${v}`)].join(' '),
            data: s.rows.map((x) => ({ x: x.time, y: x[c] })) })))
            .slice(0, 16).map((d, i) => Object.assign(d, { borderColor: G.palette[i], backgroundColor: G.palette[i], pointRadius: 0, borderWidth: 1 }));
          const xs = datasets.flatMap((d) => d.data.map((pt) => pt.x));
          if (datasets.length) answer.append(G.chart({ type: 'line', data: { datasets }, options: { parsing: false, scales: { x: G.timeAxis(Math.min(...xs), Math.max(...xs)) } } }));
        }
        for (const s of r.series) {
          answer.append(G.el('h2', {}, s.name, s.tags ? ' ' + JSON.stringify(s.tags) : ''));
          answer.append(G.table(s.columns.map((c) => [c, c, c === 'time' ? G.fmtTime : G.fmtNum]), s.rows.slice(0, 500)));
        }
      }
    } else {
      const end = (await G.end()) / 1000;
      const started = performance.now();
      const body = await G.json(`/api/v1/query_range?query=${encodeURIComponent(text)}&start=${end - 86400}&end=${end}&step=300${dbParam('&')}`);
      answer.append(G.el('p', { class: 'note', id: 'answer-stats' }, `${(performance.now() - started).toFixed(0)} ms; ${body.data.result.length} series`));
      const label = (m) => Object.entries(m).map(([k, v]) => `${k}="${v}"`).join(', ');
      const datasets = body.data.result.slice(0, 16).map((s, i) => ({ label: label(s.metric), data: s.values.map(([x, y]) => ({ x: x * 1000, y: Number(y) })),
        borderColor: G.palette[i], backgroundColor: G.palette[i], pointRadius: 0, borderWidth: 1 }));
      answer.append(G.chart({ type: 'line', data: { datasets }, options: { parsing: false, scales: { x: G.timeAxis((end - 86400) * 1000, end * 1000) } } }));
      answer.append(G.table([['metric', 'series', label], ['values', 'last value', (v) => v[v.length - 1][1]]], body.data.result));
    }
  } catch (e) {
    answer.append(G.error(e));
    // A parse error names its line and column: point at it as the shell does.
    const at = /line (\d+), column (\d+)/.exec(e.message);
    const line = at && text.split('\n')[Number(at[1]) - 1];
    if (line != null) answer.append(G.el('pre', { class: 'caret' }, line + '\n' + ' '.repeat(Number(at[2]) - 1) + '^'));
  }
  return out;
};
