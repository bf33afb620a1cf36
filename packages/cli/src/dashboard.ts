/**
 * The node's dashboard, served by the admin listener at `/`: one self-contained HTML page (no
 * build step, nothing fetched from elsewhere) that polls `/status` and `/metrics` every 2 s and
 * shows every service with its readiness, queues and drops, uptime and version, request rates and
 * mean latencies over the last minutes, a file upload to storage with a pasted token (showing the
 * `b3:` address and a download link), and a resolve box.
 *
 * @module
 */

/** The dashboard page. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ron-node</title>
<link rel="icon" href="data:,">
<style>
  :root { font-family: system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
  body { margin: 0 auto; max-width: 1100px; padding: 1rem 1.5rem 3rem; }
  h1 { font-size: 1.3rem; margin: .5rem 0 0; } h2 { font-size: 1rem; margin: 1.6rem 0 .5rem; }
  .sub { color: #5b6475; font-size: .9rem; }
  table { border-collapse: collapse; width: 100%; background: #fff; font-size: .88rem; }
  th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e4e7ec; vertical-align: top; }
  th { color: #5b6475; font-weight: 600; }
  .ok { color: #137333; font-weight: 600; } .bad { color: #b3261e; font-weight: 600; }
  .box { background: #fff; border: 1px solid #e4e7ec; border-radius: 6px; padding: .8rem 1rem; }
  .row { display: flex; gap: 1rem; flex-wrap: wrap; } .row > .box { flex: 1 1 320px; }
  input[type=text], input[type=password] { width: 100%; box-sizing: border-box; padding: .35rem; font-family: monospace; }
  button { margin-top: .5rem; padding: .35rem .9rem; }
  code, .mono { font-family: ui-monospace, monospace; font-size: .82rem; word-break: break-all; }
  svg { background: #fff; border: 1px solid #e4e7ec; border-radius: 6px; }
  pre { white-space: pre-wrap; word-break: break-all; font-size: .8rem; margin: .5rem 0 0; }
</style>
</head>
<body>
<h1>ron-node <span id="node" class="mono"></span></h1>
<div class="sub" id="summary">connecting…</div>

<h2>Services</h2>
<table>
  <thead><tr><th>service</th><th>ready</th><th>writes</th><th>queues (depth / capacity, dropped)</th><th>version</th><th>url</th></tr></thead>
  <tbody id="services"></tbody>
</table>

<h2>Requests per second and mean latency (last 5 minutes)</h2>
<div class="row">
  <div><svg id="rate" width="520" height="140" aria-label="request rate"></svg></div>
  <div><svg id="latency" width="520" height="140" aria-label="mean latency"></svg></div>
</div>
<div class="sub" id="legend"></div>

<div class="row">
  <div class="box">
    <h2>Upload to storage</h2>
    <label>token (needs storage:write; e.g. the admin token)<input id="token" type="password" autocomplete="off"></label>
    <input id="file" type="file">
    <button id="upload">Upload</button>
    <div id="uploaded" class="mono"></div>
  </div>
  <div class="box">
    <h2>Resolve</h2>
    <label>name or b3: address<input id="key" type="text" placeholder="docs.alice"></label>
    <button id="resolve">Resolve</button>
    <pre id="resolved"></pre>
  </div>
</div>

<script>
(() => {
  'use strict'
  const $ = (id) => document.getElementById(id)
  const COLORS = { storage: '#1a73e8', registry: '#9334e6', passport: '#e37400', index: '#188038', interop: '#d93025', node: '#5f6368' }
  const HISTORY = 150
  let status = null
  let last = null
  const series = {}

  const text = (el, s) => { el.textContent = s }
  const cell = (tr, s, cls) => { const td = document.createElement('td'); td.textContent = s; if (cls) td.className = cls; tr.appendChild(td); return td }
  const uptime = (s) => s < 120 ? s + ' s' : s < 7200 ? Math.round(s / 60) + ' min' : Math.round(s / 3600) + ' h'

  function renderStatus(s) {
    text($('node'), s.nodeId)
    text($('summary'), (s.ready ? 'ready' : 'NOT READY') + ' · version ' + s.version + ' · up ' + uptime(s.uptimeSec) + (s.peers && s.peers.length ? ' · peers ' + s.peers.map((p) => p.admin + (p.state === 'refused' ? ' (refused)' : p.error ? ' (unreachable)' : '')).join(', ') : '') + (s.etcd ? ' · etcd ' + (s.etcd.reachable ? 'reachable' : 'UNREACHABLE (writes 503)') + (s.etcd.signer ? ', signer ' + (s.etcd.signer.self ? 'this node' : (s.etcd.signer.holder || 'none')) : '') : ''))
    const body = $('services')
    body.replaceChildren()
    for (const [name, v] of Object.entries(s.services)) {
      const tr = document.createElement('tr')
      tr.dataset.service = name
      cell(tr, name)
      const r = cell(tr, v.ready ? 'ready' : 'not ready: ' + (v.missing.join(', ') || '?'), v.ready ? 'ok ready' : 'bad ready')
      r.dataset.ready = String(v.ready)
      cell(tr, v.writeReady ? 'yes' : 'no', v.writeReady ? 'ok' : 'bad')
      cell(tr, v.queues.filter((q) => q.capacity > 1).map((q) => q.name + ' ' + q.depth + '/' + q.capacity + (q.dropped ? ' (-' + q.dropped + ')' : '')).join(', '))
      cell(tr, v.version)
      cell(tr, v.url).className = 'mono'
      body.appendChild(tr)
    }
  }

  // Sums http_requests_total and http_request_duration_seconds_{sum,count} per service label.
  function parseMetrics(txt) {
    const out = {}
    for (const line of txt.split('\\n')) {
      if (line.startsWith('#')) continue
      const m = /^(http_requests_total|http_request_duration_seconds_sum|http_request_duration_seconds_count)\\{([^}]*)\\} ([0-9.eE+-]+)$/.exec(line)
      if (!m) continue
      const svc = (/service="([^"]*)"/.exec(m[2]) || [])[1] || '?'
      const o = out[svc] || (out[svc] = { req: 0, sum: 0, count: 0 })
      const v = Number(m[3])
      if (m[1] === 'http_requests_total') o.req += v
      else if (m[1].endsWith('_sum')) o.sum += v
      else o.count += v
    }
    return out
  }

  function sample(now, m) {
    if (last) {
      const dt = (now - last.t) / 1000
      for (const [svc, v] of Object.entries(m)) {
        const p = last.m[svc] || { req: 0, sum: 0, count: 0 }
        const s = series[svc] || (series[svc] = [])
        const dc = v.count - p.count
        s.push({ rate: Math.max(0, (v.req - p.req) / dt), lat: dc > 0 ? ((v.sum - p.sum) / dc) * 1000 : 0 })
        if (s.length > HISTORY) s.shift()
      }
    }
    last = { t: now, m }
  }

  function draw(svgId, key, unit) {
    const svg = $(svgId)
    const w = Number(svg.getAttribute('width')), h = Number(svg.getAttribute('height'))
    let max = 0
    for (const s of Object.values(series)) for (const p of s) max = Math.max(max, p[key])
    max = max > 0 ? max * 1.15 : 1
    const parts = ['<text x="6" y="14" font-size="11" fill="#5b6475">max ' + max.toFixed(key === 'rate' ? 1 : 2) + ' ' + unit + '</text>']
    for (const [svc, s] of Object.entries(series)) {
      if (s.length < 2) continue
      const pts = s.map((p, i) => ((i / (HISTORY - 1)) * w).toFixed(1) + ',' + (h - 4 - (p[key] / max) * (h - 24)).toFixed(1)).join(' ')
      parts.push('<polyline fill="none" stroke-width="1.5" stroke="' + (COLORS[svc] || '#333') + '" points="' + pts + '"/>')
    }
    svg.innerHTML = parts.join('')
  }

  async function poll() {
    try {
      const [s, m] = await Promise.all([fetch('/status', { cache: 'no-store' }).then((r) => r.json()), fetch('/metrics', { cache: 'no-store' }).then((r) => r.text())])
      status = s
      renderStatus(s)
      sample(Date.now(), parseMetrics(m))
      draw('rate', 'rate', 'req/s')
      draw('latency', 'lat', 'ms')
      text($('legend'), Object.keys(series).map((k) => k).join(' · '))
    } catch (e) {
      text($('summary'), 'cannot reach the node: ' + e.message)
    } finally {
      setTimeout(poll, 2000)
    }
  }

  $('upload').addEventListener('click', async () => {
    const out = $('uploaded')
    const file = $('file').files[0]
    if (!status || !status.services.storage) return text(out, 'this node runs no storage')
    if (!file) return text(out, 'pick a file first')
    text(out, 'uploading…')
    try {
      const base = status.services.storage.url
      const res = await fetch(base + '/o', { method: 'PUT', headers: { authorization: 'Bearer ' + $('token').value.trim() }, body: file })
      const body = await res.json()
      if (!res.ok) return text(out, (body.error && (body.error.code + ': ' + body.error.message)) || res.status)
      out.replaceChildren()
      const code = document.createElement('code')
      code.id = 'address'
      code.textContent = body.address
      const a = document.createElement('a')
      a.id = 'download'
      a.href = base + '/o/' + body.address
      a.textContent = 'download'
      a.setAttribute('download', file.name)
      out.append(code, ' (' + body.size + ' bytes) ', a)
    } catch (e) {
      text(out, 'upload failed: ' + e.message)
    }
  })

  $('resolve').addEventListener('click', async () => {
    const out = $('resolved')
    if (!status || !status.services.index) return text(out, 'this node runs no index')
    try {
      const res = await fetch(status.services.index.url + '/resolve/' + encodeURIComponent($('key').value.trim()))
      text(out, JSON.stringify(await res.json(), null, 2))
    } catch (e) {
      text(out, 'resolve failed: ' + e.message)
    }
  })

  void poll()
})()
</script>
</body>
</html>
`
