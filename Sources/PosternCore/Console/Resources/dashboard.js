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
    text('generation', s.generation);
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
