// The operator console's page (docs/api.md, Operator console), served at `GET /` on the admin listener: one
// self-contained HTML document, its styles and script inline (the Content-Security-Policy allows exactly these
// two by their SHA-256, see `DashboardPage.response()`), nothing loaded from elsewhere. The style sheet and the
// script are written in Console/Resources/dashboard.css and dashboard.js; the EmbedText build plugin makes them
// `DashboardPage.style` and `DashboardPage.script` at build time. It holds no data: it asks
// for the admin token, keeps it in a script variable only (no cookie, no storage), and polls `/admin/stats`
// every 2 s. Every value from the server is set as text (`textContent`), never as markup.

/// The dashboard's parts: the style sheet, the body markup and the script.
enum DashboardPage {
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
    <span class="chip">config generation <b id="generation">–</b></span>
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
}
