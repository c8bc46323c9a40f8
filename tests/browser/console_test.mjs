// The console as a person uses it (docs/console.md), in Debian's Chromium
// driven by playwright-core: on the demo's week, served with a token, the
// page asks for the token, draws goodput over the week, decomposes the
// driver-upgrade day into software and the upgraded driver, resolves an
// alert that the API then shows resolved, sets a node to maintenance and
// shows the change in the audit trail, and puts a caret under a query's
// error. It never asks anything of a host but the server. Then a server
// without tokens, fed by `gpulse simulate --url`, shows its fleet without
// asking for one. Screenshots of each view go to the folder given.
//
//   node console_test.mjs GPULSE_BINARY SCREENSHOT_DIR
//
// Exit status 0 when every check passes; the first failure is printed and
// ends the run with status 1.

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [gpulse, shots] = process.argv.slice(2);
if (!gpulse || !shots) {
  console.error('usage: node console_test.mjs GPULSE_BINARY SCREENSHOT_DIR');
  process.exit(2);
}
const TOKEN = 'console-test-token-123';
const scratch = mkdtempSync(join(tmpdir(), 'gpulse-console-'));
mkdirSync(shots, { recursive: true });
let server = null;
let browser = null;

function check(ok, what) {
  if (!ok) throw new Error('check failed: ' + what);
  console.log('ok: ' + what);
}

const freePort = () => new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

async function api(base, path, options = {}) {
  const res = await fetch(base + path, Object.assign({}, options, {
    headers: Object.assign({ Authorization: 'Token ' + TOKEN }, options.headers || {}),
  }));
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function main() {
  // The demo's week, and the windows its DECOMPOSE question compares.
  const demo = execFileSync(gpulse, ['demo', '--data', join(scratch, 'data')], { encoding: 'utf8' });
  const windows = /DECOMPOSE NORTHSTAR BETWEEN '([^']+)' AND '([^']+)' VERSUS '([^']+)' AND '([^']+)'/.exec(demo);
  check(windows != null, 'the demo asks DECOMPOSE');
  check(/gpulse serve --data .* then open http:\/\/127\.0\.0\.1:8086\//.test(demo), 'the demo says to open the console');
  const truth = JSON.parse(readFileSync(join(scratch, 'data', 'simulation-truth.json'), 'utf8'));
  const upgrade = truth.incidents.find((i) => i.kind === 'driver-upgrade');

  const config = join(scratch, 'config.json');
  writeFileSync(config, JSON.stringify({ auth: { tokens: [{ name: 'console', token: TOKEN, read: ['*'], write: ['*'] }] } }));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  server = spawn(gpulse, ['serve', '--data', join(scratch, 'data'), '--listen', `127.0.0.1:${port}`, '--config', config],
    { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; ++i) {
    if ((await fetch(base + '/ping').catch(() => ({ status: 0 }))).status === 204) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  check((await fetch(base + '/api/v1/nodes')).status === 401, 'the API wants the token');

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const elsewhere = [];
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('blob:')) elsewhere.push(r.url()); });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const view = async (hash, name) => {
    await page.evaluate(() => { delete document.getElementById('main').dataset.ready; });
    await page.goto(`${base}/#${hash}`);
    await page.waitForSelector(`main[data-ready="${name}"]`, { timeout: 60000 });
  };

  // Fleet: the token asked for, then goodput over the week.
  await page.goto(base + '/#fleet');
  await page.waitForSelector('dialog#login[open]');
  await page.fill('#login-token', TOKEN);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('main[data-ready="fleet"]', { timeout: 60000 });
  const points = Number(await page.getAttribute('#goodput-chart', 'data-points'));
  const spread = await page.evaluate(() => {
    const labels = G.charts[0].data.labels;
    const goodput = G.charts[0].data.datasets[2].data;
    return { days: (labels[labels.length - 1] - labels[0]) / 86400e3, values: goodput.filter((v) => v != null).length };
  });
  check(points >= 24 * 7 - 1 && spread.days >= 6.9, `the goodput chart has hourly points over the week (${points}, ${spread.days.toFixed(2)} days)`);
  check(spread.values === points, 'every hour has a goodput');
  await page.screenshot({ path: join(shots, 'fleet.png'), fullPage: true });

  // Why: the driver-upgrade day against the working day before it.
  const [b1, b2, a1, a2] = windows.slice(1);
  await view(`why?b1=${b1}&b2=${b2}&a1=${a1}&a2=${a2}`, 'why');
  const first = await page.$$eval('table', (tables) => tables[0].querySelector('tbody tr td:nth-child(2)').textContent);
  check(first === 'software', `the upgrade day's first loss is software (${first})`);
  const evidence = await page.$$eval('table', (tables) => tables[0].querySelector('tbody tr td:nth-child(9)').textContent);
  check(evidence.includes(`driver_version ${upgrade.scope.driver_version}`),
    `software's evidence names the new driver's failure rate (${evidence.slice(0, 120)})`);
  const contributors = await page.$$eval('#contributors tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
  check(contributors.some((r) => r[1] === 'driver_version' && r[2] === upgrade.scope.driver_version),
    `software's contributors name driver ${upgrade.scope.driver_version}`);
  check(Number(await page.getAttribute('#waterfall', 'data-bars')) === 10, 'the waterfall has goodput before, eight losses and goodput after');
  await page.screenshot({ path: join(shots, 'why.png'), fullPage: true });

  // Nodes: one set to maintenance, and the audit trail shows it.
  await view('nodes', 'nodes');
  check((await page.$$('#node-list tbody tr')).length === 16, 'the nodes list has the demo\'s 16 nodes');
  await page.screenshot({ path: join(shots, 'nodes.png'), fullPage: true });
  const node = upgrade.scope.nodes[0];
  await view(`node?id=${node}`, 'node');
  check(Number(await page.getAttribute('[data-field="util"]', 'data-points')) > 0, 'the node page charts its GPUs\' util');
  await page.selectOption('#status-form select[name=status]', 'maintenance');
  await page.fill('#status-form input[name=reason]', 'firmware 1.2 rollout');
  await page.fill('#status-form input[name=by]', 'alice');
  await page.evaluate(() => { delete document.getElementById('main').dataset.ready; });
  await page.click('#status-form button[type=submit]');
  await page.waitForSelector('main[data-ready="node"]');
  const trail = await page.$$eval('#actions tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
  check(trail.length === 1 && trail[0][3] === 'maintenance' && trail[0][4] === 'alice via token:console' && trail[0][5] === 'firmware 1.2 rollout',
    'the audit trail shows the change, who made it and why');
  const set = await api(base, `/api/v1/nodes/${node}`);
  check(set.body.status === 'maintenance' && set.body.status_set, 'the API has the node in maintenance');
  await page.screenshot({ path: join(shots, 'node.png'), fullPage: true });

  // Query: an error points at its column.
  await view('query?lang=influxql&q=' + encodeURIComponent('SELECT mean(util FROM gpu'), 'query');
  const caret = await page.textContent('#answer pre.caret');
  check(caret === 'SELECT mean(util FROM gpu\n' + ' '.repeat(17) + '^', 'the query error has a caret under column 18');
  check((await page.textContent('#answer .error')).includes('line 1, column 18: expected ), found FROM'), 'and says what it expected');
  await view('query?lang=influxql&q=' + encodeURIComponent('SELECT mean(util) FROM gpu GROUP BY region, time(1h)'), 'query');
  check((await page.textContent('#answer-stats')).includes('read 128 series'), 'a query says the series it read');
  await page.screenshot({ path: join(shots, 'query.png'), fullPage: true });

  await view('freshness', 'freshness');
  await page.screenshot({ path: join(shots, 'freshness.png'), fullPage: true });
  await view('chargeback', 'chargeback');
  await page.screenshot({ path: join(shots, 'chargeback.png'), fullPage: true });

  // Alerts: the demo's data is old, so the freshness rule fires at the
  // server's first evaluation (the next whole minute).
  let firing = [];
  for (let i = 0; i < 90 && firing.length === 0; ++i) {
    firing = (await api(base, '/api/v1/alerts/active')).body.alerts.filter((a) => a.state === 'firing');
    if (firing.length === 0) await new Promise((r) => setTimeout(r, 1000));
  }
  check(firing.length > 0, 'an alert fires');
  await view('alerts', 'alerts');
  await page.screenshot({ path: join(shots, 'alerts.png'), fullPage: true });
  const before = (await page.$$('#alert-list button')).length;
  await page.evaluate(() => { delete document.getElementById('main').dataset.ready; });
  await page.click('#alert-list button');
  await page.waitForSelector('main[data-ready="alerts"]');
  check((await page.$$('#alert-list button')).length === before - 1, 'the resolved alert loses its button');
  const all = (await api(base, '/api/v1/alerts')).body.alerts;
  check(all.some((a) => a.state === 'resolved' && a.resolved_by_hand), 'the API shows it resolved by hand');

  check(pageErrors.length === 0, 'no script error: ' + pageErrors.join('; '));
  check(elsewhere.length === 0, 'the page asked no other host: ' + elsewhere.join(' '));
  server.kill('SIGTERM');
  server = null;

  // A server without tokens, fed by `gpulse simulate --url` (database
  // gpulse): the page asks for nothing and shows that database's fleet.
  const open = await freePort();
  const openBase = `http://127.0.0.1:${open}`;
  server = spawn(gpulse, ['serve', '--data', join(scratch, 'fed'), '--listen', `127.0.0.1:${open}`],
    { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; ++i) {
    if ((await fetch(openBase + '/ping').catch(() => ({ status: 0 }))).status === 204) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  execFileSync(gpulse, ['simulate', '--url', openBase, '--nodes', '8', '--days', '2', '--truth', join(scratch, 'fed-truth.json')],
    { stdio: 'ignore' });
  const fresh = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  fresh.on('pageerror', (e) => pageErrors.push(String(e)));
  await fresh.goto(`${openBase}/#fleet?db=gpulse&span=24h`);
  await fresh.waitForSelector('main[data-ready="fleet"]', { timeout: 60000 });
  check(!(await fresh.isVisible('dialog#login')), 'a server without tokens asks for none');
  check(Number(await fresh.getAttribute('#goodput-chart', 'data-points')) === 96, 'the fed fleet\'s day has its 96 quarter hours');
  await fresh.goto(`${openBase}/#nodes?db=gpulse`);
  await fresh.waitForSelector('main[data-ready="nodes"]', { timeout: 60000 });
  check((await fresh.$$('#node-list tbody tr')).length === 8, 'and its 8 nodes');
  check(pageErrors.length === 0, 'no script error there either: ' + pageErrors.join('; '));
}

let status = 0;
try {
  await main();
  console.log('console_test: every check passed; screenshots in ' + shots);
} catch (e) {
  console.error('console_test: ' + (e.stack || e));
  status = 1;
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) server.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(status);
