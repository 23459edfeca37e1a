// The operator console's page (docs/api.md, Operator console), served at `GET /` on the admin listener: one
// self-contained HTML document, its styles and script inline (the Content-Security-Policy allows exactly these
// two by their SHA-256, see `DashboardPage.response()`), nothing loaded from elsewhere. It holds no data: it asks
// for the admin token, keeps it in a script variable only (no cookie, no storage), and polls `/admin/stats`
// every 2 s. Every value from the server is set as text (`textContent`), never as markup.

/// The dashboard's parts: the style sheet, the body markup and the script.
enum DashboardPage {
    /// The `<style>` element's text.
    static let style = #"""
:root {
  --bg: #f4f5f7; --card: #ffffff; --line: #e3e6eb; --text: #1c2430; --muted: #687385; --faint: #9aa3b1;
  --accent: #2f5fd0; --accent-soft: rgba(47, 95, 208, .10); --amber: #c7771f; --amber-soft: rgba(199, 119, 31, .10);
  --ok: #1d8a4e; --bad: #c93c3c; --warn: #b7830c;
  --c2: #2f9e63; --c3: #5b7bd5; --c4: #d59b2b; --c5: #cf4a4a;
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--text); }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       font-variant-numeric: tabular-nums; }
button, input { font: inherit; }
header { display: flex; align-items: center; gap: 14px; padding: 12px 24px; background: var(--card);
         border-bottom: 1px solid var(--line); height: 56px; }
.brand { font-weight: 650; font-size: 16px; letter-spacing: .2px; }
.brand small { color: var(--muted); font-weight: 400; margin-left: 6px; }
.chips { display: flex; gap: 8px; flex: 1; }
.chip { display: inline-flex; align-items: center; gap: 6px; padding: 3px 10px; border: 1px solid var(--line);
        border-radius: 999px; color: var(--muted); font-size: 12.5px; white-space: nowrap; }
.chip b { color: var(--text); font-weight: 550; }
.dot { width: 8px; height: 8px; border-radius: 50%; background: var(--faint); }
.dot.ok { background: var(--ok); } .dot.bad { background: var(--bad); } .dot.warn { background: var(--warn); }
.updated { color: var(--muted); font-size: 12.5px; white-space: nowrap; }
.updated.stale { color: var(--bad); }
.btn { border: 1px solid var(--line); background: var(--card); color: var(--text); border-radius: 7px;
       padding: 5px 12px; cursor: pointer; }
.btn:hover { border-color: #c5cad3; }
.btn.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
.btn.danger { color: var(--bad); }
.btn.danger:hover { border-color: var(--bad); }
.btn.small { padding: 2px 9px; font-size: 12.5px; }
main { padding: 16px 24px 32px; display: grid; gap: 14px; max-width: 1440px; margin: 0 auto; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; min-width: 0; }
.card h2 { margin: 0 0 10px; font-size: 12px; font-weight: 600; color: var(--muted); text-transform: uppercase;
           letter-spacing: .6px; display: flex; align-items: baseline; gap: 8px; }
.card h2 span { text-transform: none; letter-spacing: 0; font-weight: 400; color: var(--faint); }
.figures { display: grid; grid-template-columns: repeat(6, 1fr); gap: 14px; }
.figure .value { font-size: 30px; font-weight: 600; letter-spacing: -.5px; line-height: 1.1; }
.figure .unit { font-size: 14px; color: var(--muted); font-weight: 400; margin-left: 3px; letter-spacing: 0; }
.figure .sub { color: var(--muted); font-size: 12.5px; margin-top: 4px; white-space: nowrap; overflow: hidden;
               text-overflow: ellipsis; }
.figure.alert .value { color: var(--bad); }
.row2 { display: grid; grid-template-columns: 1fr 1fr 300px; gap: 14px; }
.chart svg { display: block; width: 100%; height: 150px; }
.chart .axis { fill: var(--faint); font-size: 10.5px; }
.chart .grid { stroke: var(--line); stroke-width: 1; }
.chart .line-a { fill: none; stroke: var(--accent); stroke-width: 1.8; }
.chart .area-a { fill: var(--accent-soft); stroke: none; }
.chart .line-b { fill: none; stroke: var(--amber); stroke-width: 1.8; }
.chart .area-b { fill: var(--amber-soft); stroke: none; }
.chart .empty { fill: var(--faint); font-size: 12px; }
.chart .dot-a { fill: var(--accent); } .chart .dot-b { fill: var(--amber); }
.bar { display: flex; height: 12px; border-radius: 6px; overflow: hidden; background: var(--line); margin: 6px 0 14px; }
.bar i { display: block; height: 100%; }
.c2 { background: var(--c2); } .c3 { background: var(--c3); } .c4 { background: var(--c4); } .c5 { background: var(--c5); }
.classes { width: 100%; border-collapse: collapse; }
.classes td { padding: 5px 0; border-top: 1px solid var(--line); }
.classes td.num { text-align: right; }
.classes .sw { display: inline-block; width: 10px; height: 10px; border-radius: 3px; margin-right: 8px; vertical-align: -1px; }
.muted { color: var(--muted); }
.row3 { display: grid; grid-template-columns: minmax(0, 6fr) minmax(0, 7fr); gap: 14px; align-items: start; }
.scroll { max-height: 330px; overflow: auto; }
table.data { width: 100%; border-collapse: collapse; font-size: 13px; }
table.data th { text-align: left; font-weight: 550; color: var(--muted); font-size: 12px; padding: 6px 6px; white-space: nowrap;
                border-bottom: 1px solid var(--line); position: sticky; top: 0; background: var(--card); }
table.data td { padding: 6px 6px; border-bottom: 1px solid #eef0f3; white-space: nowrap; }
table.data td.num, table.data th.num { text-align: right; }
table.data td.agent { max-width: 130px; overflow: hidden; text-overflow: ellipsis; color: var(--muted); }
table.data .route { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.method { display: inline-block; min-width: 44px; font-size: 10.5px; font-weight: 600; color: var(--accent); }
.id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.empty-row td { color: var(--faint); text-align: center; padding: 18px; }
form.search { display: flex; gap: 8px; margin-bottom: 10px; }
form.search input { flex: 1; border: 1px solid var(--line); border-radius: 7px; padding: 6px 10px; min-width: 0; }
form.search input:focus, .unlock input:focus { outline: 2px solid var(--accent-soft); border-color: var(--accent); }
.found { display: flex; align-items: center; justify-content: space-between; gap: 10px; margin: 2px 0 8px;
         color: var(--muted); font-size: 13px; }
.notice { min-height: 18px; font-size: 13px; margin-top: 8px; color: var(--muted); }
.notice.bad { color: var(--bad); } .notice.ok { color: var(--ok); }
details summary { cursor: pointer; color: var(--muted); font-size: 12px; font-weight: 600; text-transform: uppercase;
                  letter-spacing: .6px; }
details summary span { text-transform: none; letter-spacing: 0; font-weight: 400; color: var(--faint); }
pre { margin: 12px 0 0; font: 12px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: #33404f;
      background: #f8f9fb; border: 1px solid var(--line); border-radius: 8px; padding: 12px; max-height: 420px; overflow: auto; }
.unlock { position: fixed; inset: 0; background: rgba(244, 245, 247, .96); display: flex; align-items: center;
          justify-content: center; z-index: 10; }
.unlock form { width: 380px; background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 24px;
               box-shadow: 0 12px 40px rgba(28, 36, 48, .08); }
.unlock h1 { margin: 0 0 4px; font-size: 18px; }
.unlock p { margin: 0 0 16px; color: var(--muted); font-size: 13px; }
.unlock label { display: block; font-size: 12.5px; color: var(--muted); margin-bottom: 6px; }
.unlock input { width: 100%; border: 1px solid var(--line); border-radius: 7px; padding: 8px 10px; margin-bottom: 12px; }
.unlock .btn { width: 100%; padding: 8px; }
.unlock .notice { text-align: center; }
.hidden { display: none; }
"""#

    /// The `<body>` element's markup (no inline style, no inline script: the policy allows neither).
    static let body = #"""
<div class="unlock" id="unlock">
  <form id="unlock-form" autocomplete="off">
    <h1>Postern</h1>
    <p>Operator console. The token stays in this tab's memory only.</p>
    <label for="token">Admin token</label>
    <input id="token" type="password" autocomplete="off" spellcheck="false" required>
    <button class="btn primary" id="unlock-button" type="submit">Open the console</button>
    <div class="notice bad" id="unlock-notice"></div>
  </form>
</div>
<header>
  <div class="brand">Postern<small>operator console</small></div>
  <div class="chips">
    <span class="chip">version <b id="version">–</b></span>
    <span class="chip">uptime <b id="uptime">–</b></span>
    <span class="chip"><i class="dot" id="redis-dot"></i>Redis <b id="redis">–</b></span>
    <span class="chip"><i class="dot" id="circuit-dot"></i>circuit <b id="circuit">–</b></span>
  </div>
  <span class="updated" id="updated">not connected</span>
  <button class="btn" id="lock" type="button">Lock</button>
</header>
<main>
  <section class="figures">
    <div class="card figure"><h2>Requests/s</h2><div class="value" id="rps">–</div>
      <div class="sub"><span id="total-requests">0</span> since start</div></div>
    <div class="card figure"><h2>p50 latency</h2><div class="value"><span id="p50">–</span><span class="unit">ms</span></div>
      <div class="sub" id="window-note">last 10 s</div></div>
    <div class="card figure"><h2>p99 latency</h2><div class="value"><span id="p99">–</span><span class="unit">ms</span></div>
      <div class="sub" id="window-note-99">last 10 s</div></div>
    <div class="card figure"><h2>Cache hit ratio</h2><div class="value" id="cache">–</div>
      <div class="sub" id="cache-sub">–</div></div>
    <div class="card figure"><h2>Live sessions</h2><div class="value" id="sessions">–</div>
      <div class="sub">in the session store</div></div>
    <div class="card figure" id="errors-card"><h2>Upstream errors</h2><div class="value" id="errors">–</div>
      <div class="sub" id="errors-sub">–</div></div>
  </section>
  <section class="row2">
    <div class="card chart"><h2>Requests/s <span>last 5 minutes</span></h2><svg id="chart-rps" viewBox="0 0 560 150"></svg></div>
    <div class="card chart"><h2>p99 latency <span>ms, last 5 minutes</span></h2><svg id="chart-p99" viewBox="0 0 560 150"></svg></div>
    <div class="card"><h2>Answers <span>by status class</span></h2>
      <div class="bar" id="class-bar"></div>
      <table class="classes"><tbody id="classes"></tbody></table>
    </div>
  </section>
  <section class="row3">
    <div class="card"><h2>Routes <span>req/s, p50 and p99 in ms over the last 10 s</span></h2>
      <div class="scroll"><table class="data">
        <thead><tr><th>Route</th><th class="num">req/s</th><th class="num">p50</th><th class="num">p99</th>
          <th class="num">total</th><th class="num">4xx</th><th class="num">5xx</th></tr></thead>
        <tbody id="routes"><tr class="empty-row"><td colspan="7">no requests yet</td></tr></tbody>
      </table></div>
    </div>
    <div class="card"><h2>Sessions <span>find a user, end a session</span></h2>
      <form class="search" id="session-search" autocomplete="off">
        <input id="session-query" type="search" placeholder="e-mail or user id" spellcheck="false">
        <button class="btn" type="submit">Search</button>
      </form>
      <div class="found hidden" id="found"><span id="found-text"></span>
        <button class="btn small danger" id="revoke-all" type="button">Revoke all</button></div>
      <div class="scroll"><table class="data hidden" id="sessions-table">
        <thead><tr><th>Session</th><th>Created</th><th>Last seen</th><th>Client IP</th><th>User agent</th><th></th></tr></thead>
        <tbody id="sessions-body"></tbody>
      </table></div>
      <div class="notice" id="notice"></div>
    </div>
  </section>
  <details class="card" id="config-panel"><summary>Effective configuration <span>secrets redacted</span></summary>
    <pre id="config"></pre></details>
</main>
"""#

    /// The `<script>` element's text.
    static let script = #"""
'use strict';
(function () {
  var token = null;
  var timer = null;
  var lastUser = null;
  var $ = function (id) { return document.getElementById(id); };
  var SVG = 'http://www.w3.org/2000/svg';

  function text(id, value) { $(id).textContent = value; }
  function el(tag, cls, content) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (content !== undefined && content !== null) e.textContent = String(content);
    return e;
  }
  function count(n) { return Number(n || 0).toLocaleString('en-US'); }
  function compact(n) {
    n = Number(n || 0);
    return n >= 1e6 ? (n / 1e6).toFixed(1) + 'M' : n >= 1e4 ? (n / 1e3).toFixed(1) + 'k' : count(n);
  }
  function rate(n) {
    if (n === null || n === undefined) return '–';
    return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
  }
  function ms(n) {
    if (n === null || n === undefined) return '–';
    return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
  }
  function duration(s) {
    s = Math.floor(s);
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d > 0) return d + ' d ' + h + ' h';
    if (h > 0) return h + ' h ' + m + ' min';
    if (m > 0) return m + ' min ' + (s % 60) + ' s';
    return s + ' s';
  }
  function when(iso) {
    if (!iso) return '–';
    return String(iso).replace('T', ' ').slice(5, 16);
  }
  function dot(id, state) { $(id).className = 'dot' + (state ? ' ' + state : ''); }

  function ApiError(status, code, message) { this.status = status; this.code = code; this.message = message; }

  function api(method, path) {
    return fetch(path, { method: method, cache: 'no-store', credentials: 'omit',
                         headers: { 'Authorization': 'Bearer ' + token } })
      .then(function (r) {
        return r.json().catch(function () { return null; }).then(function (body) {
          if (r.ok) return body;
          var code = body && body.code, message = (body && body.error) || ('HTTP ' + r.status);
          if (r.status === 401) lock('The token was refused.');
          if (r.status === 403 && code === 'admin_disabled') lock('The operator API is off: set admin.token (POSTERN_ADMIN_TOKEN).');
          throw new ApiError(r.status, code, message);
        });
      });
  }

  function lock(message) {
    token = null;
    if (timer) { clearInterval(timer); timer = null; }
    $('unlock').classList.remove('hidden');
    text('unlock-notice', message || '');
    text('updated', 'locked');
    $('token').focus();
  }

  function refresh() {
    if (!token) return;
    api('GET', '/admin/stats').then(function (stats) {
      $('unlock').classList.add('hidden');
      render(stats);
      var updated = $('updated');
      updated.className = 'updated';
      updated.textContent = 'updated ' + new Date().toLocaleTimeString('en-GB');
    }).catch(function (e) {
      if (e instanceof ApiError && (e.status === 401 || e.code === 'admin_disabled')) return;
      var updated = $('updated');
      updated.className = 'updated stale';
      updated.textContent = 'no answer from the gateway';
    });
  }

  function render(s) {
    text('version', s.version);
    text('uptime', duration(s.uptime_s));
    if (s.redis === null || s.redis === undefined) { text('redis', 'not used'); dot('redis-dot', ''); }
    else { text('redis', s.redis.connected ? 'connected' : 'down'); dot('redis-dot', s.redis.connected ? 'ok' : 'bad'); }
    var circuit = s.upstream.circuit;
    text('circuit', circuit.replace('_', '-'));
    dot('circuit-dot', circuit === 'closed' ? 'ok' : circuit === 'open' ? 'bad' : 'warn');

    text('rps', rate(s.requests.per_s));
    text('total-requests', count(s.requests.total));
    text('p50', ms(s.requests.p50_ms));
    text('p99', ms(s.requests.p99_ms));
    var windowNote = 'last ' + Math.round(s.window_s) + ' s';
    text('window-note', windowNote);
    text('window-note-99', windowNote);
    var ratio = s.cache.window_hit_ratio !== null ? s.cache.window_hit_ratio : s.cache.hit_ratio;
    text('cache', ratio === null ? '–' : (ratio * 100).toFixed(ratio >= 0.995 || ratio === 0 ? 0 : 1) + '%');
    text('cache-sub', s.cache.hits + s.cache.misses === 0 ? 'no cacheable requests'
      : compact(s.cache.hits) + ' hits · ' + compact(s.cache.misses) + ' misses');
    text('sessions', count(s.sessions.live));
    text('errors', count(s.upstream.errors_total));
    var kinds = Object.keys(s.upstream.errors).filter(function (k) { return s.upstream.errors[k] > 0; });
    text('errors-sub', kinds.length === 0 ? 'none since start'
      : rate(s.upstream.errors_per_s) + '/s now · ' + kinds.map(function (k) { return k.replace('_', ' ') + ' ' + s.upstream.errors[k]; }).join(', '));
    $('errors-card').classList.toggle('alert', s.upstream.errors_per_s > 0);

    renderClasses(s.status);
    renderRoutes(s.routes);
    var points = s.history.points;
    var end = points.length ? points[points.length - 1].t : s.uptime_s;
    chart($('chart-rps'), points, 'per_s', end, 'a', rate);
    chart($('chart-p99'), points, 'p99_ms', end, 'b', ms);
    var config = JSON.stringify(s.config, null, 2);
    if ($('config').textContent !== config) $('config').textContent = config;
  }

  function renderClasses(status) {
    var names = ['2xx', '3xx', '4xx', '5xx'];
    var total = names.reduce(function (a, n) { return a + status[n].total; }, 0);
    var bar = $('class-bar'), rows = $('classes');
    bar.replaceChildren();
    rows.replaceChildren();
    names.forEach(function (n) {
      var item = status[n];
      if (total > 0 && item.total > 0) {
        var seg = el('i', 'c' + n[0]);
        seg.style.width = (item.total / total * 100) + '%';
        seg.title = n + ': ' + count(item.total);
        bar.appendChild(seg);
      }
      var tr = el('tr');
      var name = el('td');
      name.appendChild(el('span', 'sw c' + n[0]));
      name.appendChild(document.createTextNode(n));
      tr.appendChild(name);
      tr.appendChild(el('td', 'num', count(item.total)));
      tr.appendChild(el('td', 'num muted', total > 0 ? (item.total / total * 100).toFixed(1) + '%' : '–'));
      tr.appendChild(el('td', 'num muted', rate(item.per_s) + '/s'));
      rows.appendChild(tr);
    });
  }

  function renderRoutes(routes) {
    var body = $('routes');
    body.replaceChildren();
    if (routes.length === 0) {
      var empty = el('tr', 'empty-row');
      var td = el('td', null, 'no requests yet');
      td.colSpan = 7;
      empty.appendChild(td);
      body.appendChild(empty);
      return;
    }
    routes.forEach(function (r) {
      var tr = el('tr');
      var name = el('td', 'route');
      name.appendChild(el('span', 'method', r.method));
      name.appendChild(document.createTextNode(r.route));
      tr.appendChild(name);
      tr.appendChild(el('td', 'num', rate(r.per_s)));
      tr.appendChild(el('td', 'num', ms(r.p50_ms)));
      tr.appendChild(el('td', 'num', ms(r.p99_ms)));
      tr.appendChild(el('td', 'num', count(r.total)));
      tr.appendChild(el('td', 'num', count(r.status['4xx'])));
      tr.appendChild(el('td', 'num', count(r.status['5xx'])));
      body.appendChild(tr);
    });
  }

  function svg(tag, attrs, content) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (content !== undefined) e.textContent = content;
    return e;
  }

  function chart(target, points, key, end, tone, format) {
    var W = Math.max(200, Math.round(target.getBoundingClientRect().width)), H = 150;
    var top = 8, bottom = 18, left = 4, right = 4, span = 300;
    target.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    var values = points.map(function (p) { return p[key]; });
    var max = Math.max.apply(null, values.filter(function (v) { return v !== null; }).concat([0]));
    var nice = max <= 0 ? 1 : Math.pow(10, Math.floor(Math.log10(max)));
    var ceiling = max <= 0 ? 1 : Math.ceil(max / nice * 1.15) * nice;
    target.replaceChildren();
    var y = function (v) { return top + (H - top - bottom) * (1 - v / ceiling); };
    var x = function (t) { return left + (W - left - right) * (1 - (end - t) / span); };
    [0, 0.5, 1].forEach(function (f) {
      var gy = y(ceiling * f);
      target.appendChild(svg('line', { x1: left, x2: W - right, y1: gy, y2: gy, 'class': 'grid' }));
    });
    target.appendChild(svg('text', { x: left + 2, y: y(ceiling) + 11, 'class': 'axis' }, format(ceiling)));
    target.appendChild(svg('text', { x: left + 2, y: H - 4, 'class': 'axis' }, '−5 min'));
    target.appendChild(svg('text', { x: W - right - 2, y: H - 4, 'class': 'axis', 'text-anchor': 'end' }, 'now'));
    var segments = [], current = [];
    points.forEach(function (p) {
      if (p[key] === null || end - p.t > span) { if (current.length) segments.push(current); current = []; return; }
      current.push([x(p.t), y(p[key])]);
    });
    if (current.length) segments.push(current);
    if (segments.length === 0) {
      target.appendChild(svg('text', { x: W / 2, y: H / 2, 'class': 'empty', 'text-anchor': 'middle' },
        points.length ? 'no requests' : 'collecting…'));
      return;
    }
    segments.forEach(function (seg) {
      if (seg.length === 1) {
        target.appendChild(svg('circle', { cx: seg[0][0].toFixed(1), cy: seg[0][1].toFixed(1), r: 2.5, 'class': 'dot-' + tone }));
        return;
      }
      var line = seg.map(function (pt, i) { return (i ? 'L' : 'M') + pt[0].toFixed(1) + ' ' + pt[1].toFixed(1); }).join(' ');
      var base = y(0).toFixed(1);
      var area = line + ' L' + seg[seg.length - 1][0].toFixed(1) + ' ' + base + ' L' + seg[0][0].toFixed(1) + ' ' + base + ' Z';
      target.appendChild(svg('path', { d: area, 'class': 'area-' + tone }));
      target.appendChild(svg('path', { d: line, 'class': 'line-' + tone }));
    });
  }

  function notice(message, tone) {
    var n = $('notice');
    n.className = 'notice' + (tone ? ' ' + tone : '');
    n.textContent = message || '';
  }

  function search(user, quiet) {
    if (!token || !user) return;
    lastUser = user;
    if (!quiet) notice('Searching…');
    api('GET', '/admin/sessions?user=' + encodeURIComponent(user)).then(function (answer) {
      showSessions(user, answer.data || []);
      if (!quiet) notice('');
    }).catch(function (e) { notice(e.message || 'search failed', 'bad'); });
  }

  function showSessions(user, sessions) {
    var body = $('sessions-body');
    body.replaceChildren();
    $('found').classList.remove('hidden');
    $('sessions-table').classList.toggle('hidden', sessions.length === 0);
    var who = sessions.length ? (sessions[0].email || user) : user;
    text('found-text', sessions.length === 0 ? 'No live session for ' + user
      : sessions.length + (sessions.length === 1 ? ' session' : ' sessions') + ' · ' + who);
    var revokeAll = $('revoke-all');
    revokeAll.classList.toggle('hidden', sessions.length === 0);
    revokeAll.dataset.userId = sessions.length ? sessions[0].user_id : '';
    sessions.forEach(function (s) {
      var tr = el('tr');
      tr.dataset.sessionId = s.id;
      tr.appendChild(el('td', 'id', s.id_prefix || String(s.id).slice(0, 12)));
      var created = el('td', null, when(s.created_at));
      created.title = s.created_at || '';
      tr.appendChild(created);
      var seen = el('td', null, when(s.last_seen_at));
      seen.title = s.last_seen_at || '';
      tr.appendChild(seen);
      tr.appendChild(el('td', 'id', s.client_ip || '–'));
      var agent = el('td', 'agent', s.user_agent || '–');
      agent.title = s.user_agent || '';
      tr.appendChild(agent);
      var cell = el('td', 'num');
      var button = el('button', 'btn small danger revoke', 'Revoke');
      button.type = 'button';
      button.addEventListener('click', function () { revoke(s.id, button); });
      cell.appendChild(button);
      tr.appendChild(cell);
      body.appendChild(tr);
    });
  }

  function revoke(id, button) {
    button.disabled = true;
    api('DELETE', '/admin/sessions/' + encodeURIComponent(id)).then(function (answer) {
      var n = answer && answer.data ? answer.data.revoked : 0;
      notice('Revoked ' + n + (n === 1 ? ' session' : ' sessions') + ' (' + String(id).slice(0, 12) + '…).', 'ok');
      search(lastUser, true);
    }).catch(function (e) { button.disabled = false; notice(e.message || 'revocation failed', 'bad'); });
  }

  $('unlock-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var given = $('token').value.trim();
    $('token').value = '';
    if (!given) return;
    token = given;
    text('unlock-notice', '');
    refresh();
    if (timer) clearInterval(timer);
    timer = setInterval(refresh, 2000);
  });
  $('lock').addEventListener('click', function () { lock(''); });
  $('session-search').addEventListener('submit', function (event) {
    event.preventDefault();
    search($('session-query').value.trim(), false);
  });
  $('revoke-all').addEventListener('click', function () {
    var user = $('revoke-all').dataset.userId;
    if (!user) return;
    api('DELETE', '/admin/users/' + encodeURIComponent(user) + '/sessions').then(function (answer) {
      var n = answer && answer.data ? answer.data.revoked : 0;
      notice('Revoked ' + n + (n === 1 ? ' session' : ' sessions') + ' of this user.', 'ok');
      search(lastUser, true);
    }).catch(function (e) { notice(e.message || 'revocation failed', 'bad'); });
  });
  $('token').focus();
})();
"""#
}
