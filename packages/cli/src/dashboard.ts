/**
 * The node's dashboard, served by the admin listener at `/`: one self-contained HTML page (no
 * build step, nothing fetched from elsewhere: its script and styles are inline, its charts are
 * drawn as SVG) that polls `/status` and `/metrics` every 2 s and shows:
 *
 * - every service with its readiness, queues and drops, version and URL;
 * - request rates and mean latencies over the last 5 minutes, per service, with labelled axes,
 *   units and a legend;
 * - objects: upload a file, look one up (size, local copy, pin, placement, repair), list them
 *   (`GET /o`, which needs `storage:admin`), download;
 * - names: list the names homed on this node (`GET /names`), set one (compare-and-set against the
 *   binding read just before), remove one, resolve a name or an address, open a name's site in
 *   the gateway (its own origin, `http://<label>.localhost:<port>/`, when the gateway is local);
 * - publish a folder (dropped, or chosen): every file uploaded, a directory manifest built exactly
 *   as `ron-node publish` builds it (same paths, order and media types, so the same address), the
 *   name bound by compare-and-set, the site's URL shown;
 * - peers: up or down, when last seen, their node id and services, why one is refused.
 *
 * Authority: the page has none of its own. It reads what is public (`/status`, `/metrics`,
 * objects, `/names`, resolve); anything else is sent with the token pasted into the page, kept in
 * that tab's memory only (never stored, never sent anywhere but this node's own services, in
 * `Authorization`, never a cookie), and the services accept cross-origin writes from this node's
 * admin origin only (`writeOrigins`). A name homed on another node is written on that node's own
 * dashboard (the page links to it): it never writes to a peer.
 *
 * Errors are shown as sentences (the SPEC envelope's code and message, and what to do), never as
 * raw JSON.
 *
 * @module
 */

import { MAX_DIR_ENTRIES, MAX_LABEL_LENGTH, MAX_MANIFEST_BYTES, mediaTypeTable } from '@ron/core'

const STYLE = String.raw`
  :root { font-family: system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
  body { margin: 0 auto; max-width: 1150px; padding: 1rem 1.5rem 3rem; }
  h1 { font-size: 1.3rem; margin: .5rem 0 0; } h2 { font-size: 1.05rem; margin: 1.8rem 0 .5rem; } h3 { font-size: .92rem; margin: .2rem 0 .4rem; }
  nav { margin: .4rem 0 0; font-size: .9rem; } nav a { margin-right: .9rem; }
  .sub { color: #5b6475; font-size: .9rem; }
  table { border-collapse: collapse; width: 100%; background: #fff; font-size: .86rem; }
  th, td { text-align: left; padding: .38rem .55rem; border-bottom: 1px solid #e4e7ec; vertical-align: top; }
  th { color: #5b6475; font-weight: 600; }
  .ok { color: #137333; font-weight: 600; } .bad { color: #b3261e; font-weight: 600; } .warn { color: #9a5b00; font-weight: 600; }
  .box { background: #fff; border: 1px solid #e4e7ec; border-radius: 6px; padding: .8rem 1rem; }
  .row { display: flex; gap: 1rem; flex-wrap: wrap; } .row > .box { flex: 1 1 320px; } .row > figure { flex: 1 1 500px; margin: 0; }
  label { display: block; font-size: .86rem; margin: .3rem 0; }
  input[type=text], input[type=password] { width: 100%; box-sizing: border-box; padding: .35rem; font-family: ui-monospace, monospace; }
  button { margin-top: .4rem; padding: .3rem .8rem; }
  td button { margin: 0 .3rem 0 0; padding: .1rem .5rem; }
  code, .mono { font-family: ui-monospace, monospace; font-size: .82rem; word-break: break-all; }
  svg { background: #fff; border: 1px solid #e4e7ec; border-radius: 6px; width: 100%; height: auto; }
  .msg { font-size: .86rem; margin: .45rem 0 0; min-height: 1em; word-break: break-word; }
  .msg.error { color: #b3261e; } .msg.done { color: #137333; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem .8rem; font-size: .86rem; margin: .5rem 0 0; }
  dt { color: #5b6475; } dd { margin: 0; }
  .legend span { margin-right: 1rem; font-size: .85rem; white-space: nowrap; }
  .swatch { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px; margin-right: .3rem; vertical-align: -1px; }
  #drop { border: 2px dashed #9aa3b2; border-radius: 8px; padding: 1.2rem; text-align: center; background: #fff; }
  #drop.over { border-color: #1a73e8; background: #eef4fe; }
  .more { margin-top: .4rem; }
`

const BODY = String.raw`
<h1>ron-node <span id="node" class="mono"></span></h1>
<div class="sub" id="summary">connecting…</div>
<div id="origin-msg" class="msg"></div>
<nav><a href="#services-h">Services</a><a href="#charts-h">Traffic</a><a href="#objects-h">Objects</a><a href="#names-h">Names</a><a href="#publish-h">Publish a folder</a><a href="#peers-h">Peers</a></nav>

<div class="box" style="margin-top:1rem">
  <label for="token">Token — needed to upload, publish, set or remove names, and to list objects (that needs <code>storage:admin</code>, e.g. the node's admin token).
  Make one with <code>ron-node token issue</code>. It stays in this tab's memory: never stored, sent only to this node's services.</label>
  <input id="token" type="password" autocomplete="off" spellcheck="false">
  <div id="token-info" class="msg"></div>
</div>

<h2 id="services-h">Services</h2>
<table>
  <thead><tr><th>service</th><th>ready</th><th>accepts writes</th><th>queues (depth / capacity, dropped)</th><th>version</th><th>url</th></tr></thead>
  <tbody id="services"></tbody>
</table>

<h2 id="charts-h">Traffic over the last 5 minutes</h2>
<div class="row">
  <figure><h3>Requests per second, by service</h3><svg id="rate" viewBox="0 0 540 200" role="img" aria-label="requests per second by service"></svg></figure>
  <figure><h3>Mean latency per request, by service (milliseconds)</h3><svg id="latency" viewBox="0 0 540 200" role="img" aria-label="mean latency in milliseconds by service"></svg></figure>
</div>
<div class="legend" id="legend"></div>

<h2 id="objects-h">Objects</h2>
<div class="row">
  <div class="box">
    <h3>Upload a file</h3>
    <input id="file" type="file">
    <button id="upload">Upload</button>
    <div id="uploaded" class="msg"></div>
  </div>
  <div class="box">
    <h3>Look up an object</h3>
    <label>address<input id="stat-key" type="text" placeholder="b3:…"></label>
    <button id="stat">Show</button>
    <div id="stat-msg" class="msg"></div>
    <div id="stat-out"></div>
  </div>
</div>
<div class="box" style="margin-top:1rem">
  <h3>Objects on this node</h3>
  <button id="list-objects">List objects</button>
  <div id="objects-msg" class="msg"></div>
  <table id="objects-table" hidden>
    <thead><tr><th>address</th><th>size</th><th>pinned</th><th></th></tr></thead>
    <tbody id="objects"></tbody>
  </table>
  <button id="objects-more" class="more" hidden>More</button>
</div>

<h2 id="names-h">Names</h2>
<div class="box">
  <h3>Names homed on this node</h3>
  <label>starting with<input id="name-prefix" type="text" placeholder="(all)"></label>
  <button id="list-names">List names</button>
  <div id="names-msg" class="msg"></div>
  <table id="names-table" hidden>
    <thead><tr><th>name</th><th>bound to</th><th>version</th><th>signed</th><th></th></tr></thead>
    <tbody id="names"></tbody>
  </table>
  <button id="names-more" class="more" hidden>More</button>
</div>
<div class="row" style="margin-top:1rem">
  <div class="box">
    <h3>Set a name</h3>
    <label>name<input id="set-name" type="text" placeholder="docs.alice"></label>
    <label>address (a manifest, or a file on this node)<input id="set-address" type="text" placeholder="b3:…"></label>
    <label>media type, for a single file<input id="set-type" type="text" placeholder="application/octet-stream"></label>
    <button id="set">Set</button>
    <div id="set-msg" class="msg"></div>
  </div>
  <div class="box">
    <h3>Resolve</h3>
    <label>name or b3: address<input id="key" type="text" placeholder="docs.alice"></label>
    <button id="resolve">Resolve</button>
    <div id="resolve-msg" class="msg"></div>
    <div id="resolved"></div>
  </div>
</div>

<h2 id="publish-h">Publish a folder</h2>
<div class="box">
  <div id="drop">Drop a folder here, or <label style="display:inline"><input id="folder" type="file" webkitdirectory multiple></label></div>
  <label>name (optional: without one the site is reachable by its address only)<input id="publish-name" type="text" placeholder="docs.alice"></label>
  <div id="publish-files" class="msg"></div>
  <button id="publish" disabled>Publish</button>
  <div id="publish-msg" class="msg"></div>
</div>

<h2 id="peers-h">Peers</h2>
<div id="peers-msg" class="msg"></div>
<table id="peers-table" hidden>
  <thead><tr><th>peer</th><th>state</th><th>last seen</th><th>node id</th><th>services</th></tr></thead>
  <tbody id="peers"></tbody>
</table>
`

const SCRIPT = String.raw`
(() => {
  'use strict'
  const MEDIA_TYPES = __MEDIA_TYPES__
  const MAX_ENTRIES = __MAX_ENTRIES__
  const MAX_MANIFEST_BYTES = __MAX_MANIFEST_BYTES__
  const MAX_LABEL = __MAX_LABEL__
  const $ = (id) => document.getElementById(id)
  const COLORS = { storage: '#1a73e8', registry: '#9334e6', passport: '#e37400', index: '#188038', interop: '#d93025', node: '#5f6368' }
  const POLL_MS = 2000
  const HISTORY = 150
  let status = null
  let last = null
  const series = {}

  // ---- small helpers ----------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue
      if (k === 'text') e.textContent = v
      else if (k === 'class') e.className = v
      else if (k === 'onclick') e.addEventListener('click', v)
      else e.setAttribute(k, v === true ? '' : String(v))
    }
    for (const c of children) if (c !== undefined && c !== null) e.append(c)
    return e
  }
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';')
  function bytes(n) {
    if (typeof n !== 'number') return '?'
    if (n < 1024) return n + ' B'
    const units = ['KiB', 'MiB', 'GiB', 'TiB']
    let v = n / 1024
    let i = 0
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++ }
    return v.toFixed(v < 10 ? 1 : 0) + ' ' + units[i]
  }
  function ago(ms) {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000))
    if (s < 90) return s + ' s ago'
    if (s < 5400) return Math.round(s / 60) + ' min ago'
    if (s < 172800) return Math.round(s / 3600) + ' h ago'
    return Math.round(s / 86400) + ' d ago'
  }
  const uptime = (s) => s < 120 ? s + ' s' : s < 7200 ? Math.round(s / 60) + ' min' : Math.round(s / 3600) + ' h'
  const short = (a) => typeof a === 'string' && a.length > 20 ? a.slice(0, 13) + '…' + a.slice(-6) : String(a)
  const isAddress = (s) => /^b3:[0-9a-f]{64}$/.test(s)
  const NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/

  /** Shows a message; an error in red. A message may carry a link. */
  function say(id, what, kind) {
    const out = $(id)
    out.className = 'msg' + (kind ? ' ' + kind : '')
    out.replaceChildren()
    if (what instanceof UiError) {
      out.className = 'msg error'
      out.append(what.message)
      if (what.link) out.append(' ', el('a', { href: what.link.href, text: what.link.text }))
    } else if (what instanceof Error) {
      out.className = 'msg error'
      out.append(what.message)
    } else if (Array.isArray(what)) out.append(...what)
    else out.append(what)
  }

  class UiError extends Error {
    constructor(message, extra) { super(message); Object.assign(this, extra || {}) }
  }

  /** What to do about an error, by its SPEC code and details. */
  function hint(code, d, res) {
    const retry = res && res.headers.get('retry-after')
    switch (code) {
      case 'Unauthorized': return 'paste a valid token above (ron-node token issue, or the node’s admin token)'
      case 'Forbidden':
        if (d.reason === 'missing_scope') return 'this needs a token with scope ' + d.scope
        if (d.reason === 'cors_origin') return 'open the dashboard at the node’s own address to make changes'
        return ''
      case 'Busy': case 'NotReady': case 'Unavailable': return 'the node is busy or starting: try again' + (retry ? ' in ' + retry + ' s' : '')
      case 'OverLimit': return d.limit ? 'the limit is ' + bytes(d.limit) : ''
      default: return ''
    }
  }

  /** The SPEC error envelope of a failed response as a sentence. */
  async function failure(res) {
    let body = null
    try { body = await res.json() } catch (e) { body = null }
    const e = body && body.error
    if (!e || typeof e.message !== 'string') return new UiError('the node answered HTTP ' + res.status + ' ' + res.statusText)
    const d = e.details && typeof e.details === 'object' ? e.details : {}
    const h = hint(e.code, d, res)
    return new UiError(e.code + ': ' + e.message + (h ? ' — ' + h : ''), { code: e.code, details: d, status: res.status })
  }

  const token = () => $('token').value.trim()
  function needToken() {
    const t = token()
    if (!t) throw new UiError('this needs a token: paste one in “Token” above')
    return t
  }
  /** The claims of a token, read without checking it (the node checks it): for hints only. */
  function claimsOf(t) {
    try {
      return JSON.parse(atob(t.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')))
    } catch (e) { return undefined }
  }
  const scopesOf = (c) => Array.isArray(c.scope) ? c.scope : typeof c.scope === 'string' ? c.scope.split(' ') : []
  const within = (name, prefix) => name === prefix || (prefix.length > 0 && name.endsWith('.' + prefix))

  /** Calls one of this node's services. Never sends the token unless asked. */
  async function call(service, method, path, o) {
    o = o || {}
    const svc = status && status.services[service]
    if (!svc) throw new UiError(status ? 'this node runs no ' + service : 'the node has not answered yet: wait a moment')
    const headers = Object.assign({}, o.headers)
    if (o.auth) headers.authorization = 'Bearer ' + needToken()
    let res
    try {
      res = await fetch(svc.url + path, { method, headers, body: o.body, cache: 'no-store' })
    } catch (e) {
      const home = writeOrigin()
      throw new UiError('cannot reach ' + service + ' at ' + svc.url + ': is the node running?' + (method === 'GET' || method === 'HEAD' || home === location.origin
        ? ''
        : ' (its services accept changes only from the dashboard at ' + home + ')'), home === location.origin ? {} : { link: { href: home + '/', text: 'open it there' } })
    }
    if (!res.ok && !(o.allow || []).includes(res.status)) throw await failure(res)
    return res
  }

  /**
   * The origin the services accept writes from: the node's admin URL, whose host is the one the
   * services' URLs carry (the advertised host) and whose port is this page's.
   */
  function writeOrigin() {
    const any = status && Object.values(status.services).find((v) => !v.remote)
    if (!any) return location.origin
    return location.protocol + '//' + new URL(any.url).hostname + (location.port ? ':' + location.port : '')
  }

  /** The URL a name's site opens at: its own origin when the gateway is on this machine. */
  function siteUrl(name, manifest) {
    const gw = status && status.services.interop
    if (!gw) return undefined
    const u = new URL(gw.url)
    const base = u.href.replace(/\/+$/, '')
    if (!name) return base + '/o/' + manifest + '/'
    const label = name.replace(/-/g, '--').replace(/\./g, '-')
    const host = u.hostname.replace(/^\[|\]$/g, '')
    const local = host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
    if (label.length > MAX_LABEL || !local) return base + '/n/' + name + '/'
    return u.protocol + '//' + label + '.localhost' + (u.port ? ':' + u.port : '') + '/'
  }

  // ---- status, services, peers --------------------------------------------------------------------

  function renderStatus(s) {
    $('node').textContent = s.nodeId
    const peers = Array.isArray(s.peers) ? s.peers : []
    const up = peers.filter((p) => peerState(p) === 'up').length
    $('summary').textContent = (s.ready ? 'ready' : 'NOT READY') + ' · version ' + s.version + ' · up ' + uptime(s.uptimeSec) +
      (peers.length ? ' · ' + peers.length + ' peer' + (peers.length === 1 ? '' : 's') + ', ' + up + ' up' : ' · no peers') +
      (s.etcd ? ' · etcd ' + (s.etcd.reachable ? 'reachable' : 'UNREACHABLE (writes 503)') + (s.etcd.signer ? ', signer ' + (s.etcd.signer.self ? 'this node' : (s.etcd.signer.holder || 'none')) : '') : '')
    const body = $('services')
    body.replaceChildren()
    for (const [name, v] of Object.entries(s.services)) {
      const tr = el('tr', { 'data-service': name })
      tr.append(el('td', { text: name + (v.remote ? ' (on another node)' : '') }))
      tr.append(el('td', { class: v.ready ? 'ok ready' : 'bad ready', 'data-ready': String(v.ready), text: v.ready ? 'ready' : 'not ready: ' + (v.missing.join(', ') || '?') }))
      tr.append(el('td', { class: v.writeReady ? 'ok' : 'bad', text: v.writeReady ? 'yes' : 'no' }))
      tr.append(el('td', { text: v.queues.filter((q) => q.capacity > 1).map((q) => q.name + ' ' + q.depth + '/' + q.capacity + (q.dropped ? ' (' + q.dropped + ' dropped)' : '')).join(', ') }))
      tr.append(el('td', { text: v.version }))
      tr.append(el('td', { class: 'mono', text: v.url }))
      body.append(tr)
    }
    renderPeers(peers, Array.isArray(s.peers))
    const home = writeOrigin()
    if (home !== location.origin) say('origin-msg', new UiError('This page is open at ' + location.origin + ', but the node accepts changes (uploads, names, publishing) only from ' + home + '.', { link: { href: home + '/', text: 'Open the dashboard there' } }))
    else say('origin-msg', '')
  }

  function peerState(p) {
    if (p.state === 'refused') return 'refused'
    if (p.error) return 'down'
    if (p.state === 'pinned' && p.seenAt > 0) return 'up'
    return 'waiting'
  }
  const STATE_TEXT = { up: 'up', down: 'down', refused: 'refused', waiting: 'not contacted yet' }

  function renderPeers(peers, configured) {
    if (!configured || peers.length === 0) {
      say('peers-msg', 'this node has no peers (start it with --peers <admin URL,…>, or join a cluster: ron-node join)')
      $('peers-table').hidden = true
      return
    }
    say('peers-msg', '')
    $('peers-table').hidden = false
    const body = $('peers')
    body.replaceChildren()
    for (const p of peers) {
      const st = peerState(p)
      const tr = el('tr', { 'data-peer': p.admin })
      tr.append(el('td', {}, el('a', { href: p.admin + '/', title: 'its dashboard', text: p.admin })))
      const cls = st === 'up' ? 'ok' : st === 'waiting' ? 'warn' : 'bad'
      tr.append(el('td', { class: 'state ' + cls, 'data-state': st }, STATE_TEXT[st], p.error && st !== 'up' ? el('div', { class: 'sub', text: p.error }) : null))
      tr.append(el('td', { class: 'seen', text: p.seenAt > 0 ? ago(p.seenAt) : 'never' }))
      tr.append(el('td', { class: 'mono', text: p.nodeId || '—' }))
      const svcs = Object.entries(p.services || {})
      tr.append(el('td', { class: 'services' }, svcs.length ? svcs.map(([n, url]) => n + ' ' + url).join(', ') : '—'))
      body.append(tr)
    }
  }

  // ---- charts -------------------------------------------------------------------------------------

  /** Sums http_requests_total and http_request_duration_seconds_{sum,count} per service label. */
  function parseMetrics(txt) {
    const out = {}
    for (const line of txt.split('\n')) {
      if (line.startsWith('#')) continue
      const m = /^(http_requests_total|http_request_duration_seconds_sum|http_request_duration_seconds_count)\{([^}]*)\} ([0-9.eE+-]+)$/.exec(line)
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

  /** A round upper bound for an axis (1, 2 or 5 times a power of ten). */
  function niceMax(v) {
    if (!(v > 0)) return 1
    const p = Math.pow(10, Math.floor(Math.log10(v)))
    for (const k of [1, 2, 5, 10]) if (v <= k * p) return k * p
    return 10 * p
  }
  const fmt = (v) => v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1).replace(/\.0$/, '') : String(Number(v.toPrecision(2)))

  function draw(svgId, key, unit, axisTitle) {
    const svg = $(svgId)
    const W = 540, H = 200, L = 80, R = 12, T = 12, B = 32
    const w = W - L - R, h = H - T - B
    let max = 0
    for (const s of Object.values(series)) for (const p of s) max = Math.max(max, p[key])
    const top = niceMax(max * 1.05)
    const y = (v) => T + h - (v / top) * h
    const x = (i, n) => L + w - ((n - 1 - i) / (HISTORY - 1)) * w
    const parts = ['<title>' + esc(axisTitle) + '</title>']
    for (const f of [0, 0.5, 1]) {
      const v = top * f
      parts.push('<line x1="' + L + '" x2="' + (L + w) + '" y1="' + y(v).toFixed(1) + '" y2="' + y(v).toFixed(1) + '" stroke="#e4e7ec"/>')
      parts.push('<text class="tick" x="' + (L - 6) + '" y="' + (y(v) + 4).toFixed(1) + '" font-size="11" text-anchor="end" fill="#5b6475">' + esc(fmt(v) + ' ' + unit) + '</text>')
    }
    parts.push('<text class="axis" transform="translate(12 ' + (T + h / 2) + ') rotate(-90)" font-size="11" text-anchor="middle" fill="#5b6475">' + esc(axisTitle) + '</text>')
    for (const [i, label] of [[0, '5 min ago'], [HISTORY / 2, '2.5 min ago'], [HISTORY - 1, 'now']]) {
      parts.push('<text class="time" x="' + x(i, HISTORY).toFixed(1) + '" y="' + (H - 10) + '" font-size="11" text-anchor="' + (i === 0 ? 'start' : i === HISTORY - 1 ? 'end' : 'middle') + '" fill="#5b6475">' + label + '</text>')
    }
    let drawn = 0
    for (const [svc, s] of Object.entries(series)) {
      if (s.length < 2) continue
      drawn++
      const pts = s.map((p, i) => x(i, s.length).toFixed(1) + ',' + y(p[key]).toFixed(1)).join(' ')
      parts.push('<polyline fill="none" stroke-width="1.6" stroke="' + (COLORS[svc] || '#333') + '" points="' + pts + '"><title>' + esc(svc) + '</title></polyline>')
    }
    if (drawn === 0) parts.push('<text x="' + (L + w / 2) + '" y="' + (T + h / 2) + '" font-size="12" text-anchor="middle" fill="#5b6475">collecting… (a point every 2 s)</text>')
    svg.innerHTML = parts.join('')
  }

  function legend() {
    const out = $('legend')
    out.replaceChildren(...Object.keys(series).sort().map((svc) => el('span', { 'data-service': svc }, el('i', { class: 'swatch', style: 'background:' + (COLORS[svc] || '#333') }), svc)))
  }

  async function poll() {
    try {
      const [s, m] = await Promise.all([
        fetch('/status', { cache: 'no-store' }).then((r) => r.ok ? r.json() : failure(r).then((e) => { throw e })),
        fetch('/metrics', { cache: 'no-store' }).then((r) => r.text()),
      ])
      status = s
      renderStatus(s)
      sample(Date.now(), parseMetrics(m))
      draw('rate', 'rate', 'req/s', 'requests per second')
      draw('latency', 'lat', 'ms', 'mean latency (ms)')
      legend()
    } catch (e) {
      $('summary').textContent = 'cannot reach the node: ' + e.message + ' (retrying every 2 s)'
    } finally {
      setTimeout(poll, POLL_MS)
    }
  }

  // ---- token --------------------------------------------------------------------------------------

  $('token').addEventListener('input', () => {
    const t = token()
    if (!t) return say('token-info', '')
    const c = claimsOf(t)
    if (!c) return say('token-info', new UiError('this does not look like a token (three base64url parts separated by dots)'))
    const parts = ['scopes: ' + (scopesOf(c).join(', ') || 'none')]
    if (c.ron && typeof c.ron.namePrefix === 'string') parts.push('names ' + c.ron.namePrefix + ' and under it only')
    if (typeof c.exp === 'number') {
      const left = c.exp * 1000 - Date.now()
      parts.push(left <= 0 ? 'EXPIRED' : 'expires in ' + (left > 172800000 ? Math.round(left / 86400000) + ' d' : Math.round(left / 3600000) + ' h'))
    }
    say('token-info', parts.join(' · ') + ' (as the token says; the node checks it)', typeof c.exp === 'number' && c.exp * 1000 <= Date.now() ? 'error' : undefined)
  })

  // ---- objects ------------------------------------------------------------------------------------

  function downloadLink(address, filename) {
    const url = status.services.storage.url + '/o/' + address
    return el('a', { href: url, download: filename || address.slice(3, 19), text: 'download' })
  }

  $('upload').addEventListener('click', async () => {
    const file = $('file').files[0]
    try {
      if (!file) throw new UiError('pick a file first')
      say('uploaded', 'uploading ' + file.name + ' (' + bytes(file.size) + ')…')
      const res = await call('storage', 'PUT', '/o', { auth: true, body: file })
      const body = await res.json()
      const code = el('code', { id: 'address', text: body.address })
      const a = downloadLink(body.address, file.name)
      a.id = 'download'
      say('uploaded', ['stored ', code, ' (' + bytes(body.size) + ') ', a], 'done')
    } catch (e) {
      say('uploaded', e)
    }
  })

  async function showStat(address) {
    $('stat-key').value = address
    $('stat-out').replaceChildren()
    try {
      if (!isAddress(address)) throw new UiError('an address is b3: and 64 hex digits')
      say('stat-msg', 'looking up…')
      const res = await call('storage', 'GET', '/o/' + address + '/status', { allow: [404] })
      if (res.status === 404) {
        await res.body?.cancel()
        throw new UiError('this node has no copy of ' + short(address) + ' (resolve it under Names to see who has)')
      }
      const s = await res.json()
      const local = s.local.present ? (s.local.ok ? 'present, intact' : 'present but damaged (' + (s.local.reason || 'bad chunks') + '): repair is on it') : 'missing (' + (s.local.reason || 'not here') + ')'
      const placed = s.placement.map((n) => n === status.nodeId ? n + ' (this node)' : n).join(', ')
      const repair = s.repair ? Object.entries(s.repair).map(([k, v]) => k + ' ' + (typeof v === 'object' ? JSON.stringify(v) : v)).join(', ') : 'nothing to repair'
      const dl = el('dl', { id: 'stat-dl' })
      for (const [k, v] of [['address', el('code', { text: s.address })], ['size', bytes(s.size) + ' (' + s.size + ' bytes)'], ['copy here', local], ['pinned', s.pinned ? 'yes' : 'no'], ['placed on', placed], ['repair', repair], ['content', downloadLink(s.address)]]) {
        dl.append(el('dt', { text: k }), el('dd', { 'data-field': k }, v))
      }
      $('stat-out').replaceChildren(dl)
      say('stat-msg', '')
    } catch (e) {
      say('stat-msg', e)
    }
  }
  $('stat').addEventListener('click', () => showStat($('stat-key').value.trim()))

  let objectsCursor = null
  async function listObjects(more) {
    try {
      needToken()
      if (!more) objectsCursor = null
      say('objects-msg', 'listing…')
      const res = await call('storage', 'GET', '/o?limit=50' + (objectsCursor ? '&cursor=' + encodeURIComponent(objectsCursor) : ''), { auth: true })
      const page = await res.json()
      const body = $('objects')
      if (!more) body.replaceChildren()
      for (const o of page.objects) {
        const tr = el('tr', { 'data-address': o.address })
        tr.append(el('td', {}, el('code', { text: o.address })))
        tr.append(el('td', { text: o.size === null ? 'missing (pinned only)' : bytes(o.size) }))
        tr.append(el('td', { text: o.pinned ? 'yes' : 'no' }))
        tr.append(el('td', {}, el('button', { class: 'show', text: 'show', onclick: () => showStat(o.address) }), o.size === null ? null : downloadLink(o.address)))
        body.append(tr)
      }
      objectsCursor = page.cursor
      $('objects-table').hidden = body.children.length === 0
      $('objects-more').hidden = !page.cursor
      say('objects-msg', body.children.length === 0 ? 'no objects on this node yet' : body.children.length + ' object' + (body.children.length === 1 ? '' : 's') + (page.cursor ? ' so far' : ''))
    } catch (e) {
      say('objects-msg', e)
    }
  }
  $('list-objects').addEventListener('click', () => listObjects(false))
  $('objects-more').addEventListener('click', () => listObjects(true))

  // ---- names --------------------------------------------------------------------------------------

  /** The binding of a name now (read fresh at its home through this node's index), or null. */
  async function currentBinding(name) {
    const res = await call('index', 'GET', '/resolve/' + encodeURIComponent(name) + '?fresh=1', { allow: [404] })
    if (res.status === 404) { await res.body?.cancel(); return null }
    return (await res.json()).manifestAddress || null
  }

  /** A write refused because the name lives on another node: say where to write it. */
  function homeElsewhere(e, name) {
    if (!(e instanceof UiError) || e.code !== 'Conflict' || e.details.reason !== 'home_elsewhere') return e
    const home = typeof e.details.home === 'string' ? e.details.home : undefined
    return new UiError(name + ' is homed on node ' + e.details.node + ': names are written at their home, with your own token. ', home ? { link: { href: home.replace(/\/+$/, '') + '/#names-h', text: 'open that node’s dashboard' } } : {})
  }

  /** Binds name → manifest by compare-and-set against the binding read just before. */
  async function bind(name, manifestAddress) {
    const previous = await currentBinding(name)
    if (previous === manifestAddress) return { previous, unchanged: true }
    try {
      await call('index', 'PUT', '/names/' + encodeURIComponent(name), {
        auth: true,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ manifestAddress, expectedPrevious: previous }),
      })
    } catch (e) {
      if (e instanceof UiError && e.code === 'Conflict' && e.details.reason !== 'home_elsewhere') {
        throw new UiError(name + ' changed while you were setting it (someone else wrote it): look again and retry')
      }
      throw homeElsewhere(e, name)
    }
    return { previous, unchanged: false }
  }

  let namesCursor = null
  async function listNames(more) {
    try {
      const prefix = $('name-prefix').value.trim()
      if (!more) namesCursor = null
      say('names-msg', 'listing…')
      const q = new URLSearchParams({ limit: '50' })
      if (prefix) q.set('prefix', prefix)
      if (namesCursor) q.set('cursor', namesCursor)
      const page = await (await call('index', 'GET', '/names?' + q)).json()
      const body = $('names')
      if (!more) body.replaceChildren()
      for (const r of page.names) {
        const tr = el('tr', { 'data-name': r.name })
        tr.append(el('td', { class: 'mono', text: r.name }))
        tr.append(el('td', {}, el('code', { title: r.manifestAddress, text: short(r.manifestAddress) })))
        tr.append(el('td', { text: String(r.seq) }))
        tr.append(el('td', { text: ago(r.signedAt) }))
        const url = siteUrl(r.name, r.manifestAddress)
        const rm = el('button', { class: 'remove', text: 'remove' })
        rm.addEventListener('click', () => removeName(r, rm))
        tr.append(el('td', {}, url ? el('a', { class: 'open', href: url, target: '_blank', rel: 'noopener', text: 'open' }) : null, ' ', el('button', { class: 'lookup', text: 'show manifest', onclick: () => showStat(r.manifestAddress) }), rm))
        body.append(tr)
      }
      namesCursor = page.cursor
      $('names-table').hidden = body.children.length === 0
      $('names-more').hidden = !page.cursor
      say('names-msg', body.children.length === 0 ? 'no names' + (prefix ? ' starting with ' + prefix : '') + ' are homed on this node' : '')
    } catch (e) {
      say('names-msg', e)
    }
  }
  $('list-names').addEventListener('click', () => listNames(false))
  $('names-more').addEventListener('click', () => listNames(true))

  async function removeName(r, button) {
    if (button.dataset.armed !== '1') {
      button.dataset.armed = '1'
      button.textContent = 'really remove ' + r.name + '?'
      return
    }
    try {
      await call('index', 'DELETE', '/names/' + encodeURIComponent(r.name), { auth: true, headers: { 'if-match': '"' + r.manifestAddress + '"' } })
      say('names-msg', 'removed ' + r.name, 'done')
      button.closest('tr').remove()
    } catch (e) {
      say('names-msg', e instanceof UiError && e.code === 'Conflict' && e.details.reason !== 'home_elsewhere' ? new UiError(r.name + ' changed since it was listed: list again') : homeElsewhere(e, r.name))
    }
  }

  /** True when the bytes are a manifest a name can bind (a directory, or a file manifest). */
  function asManifest(text) {
    try {
      const m = JSON.parse(text)
      if (m && m.kind === 'dir' && Array.isArray(m.entries)) return 'a directory of ' + m.entries.length + ' file' + (m.entries.length === 1 ? '' : 's')
      if (m && isAddress(m.content) && typeof m.size === 'number' && typeof m.type === 'string') return 'a file manifest (' + m.type + ')'
    } catch (e) { /* not JSON: a file */ }
    return undefined
  }

  $('set').addEventListener('click', async () => {
    const name = $('set-name').value.trim()
    const address = $('set-address').value.trim()
    try {
      if (!NAME.test(name)) throw new UiError('a name is lower-case labels separated by dots, like docs.alice')
      if (!isAddress(address)) throw new UiError('an address is b3: and 64 hex digits')
      checkPrefix(name)
      say('set-msg', 'setting…')
      const head = await call('storage', 'HEAD', '/o/' + address, { allow: [404] })
      if (head.status === 404) throw new UiError(short(address) + ' is not stored on this node: upload it first')
      const size = Number(head.headers.get('content-length'))
      let manifest = address
      let what = size <= MAX_MANIFEST_BYTES ? asManifest(await (await call('storage', 'GET', '/o/' + address)).text()) : undefined
      if (what === undefined) {
        const type = $('set-type').value.trim() || 'application/octet-stream'
        const res = await call('storage', 'PUT', '/o', { auth: true, body: JSON.stringify({ content: address, size, type }) })
        manifest = (await res.json()).address
        what = 'a file manifest for ' + short(address) + ' (' + type + ')'
      }
      const r = await bind(name, manifest)
      const url = siteUrl(name, manifest)
      say('set-msg', [name + (r.unchanged ? ' already names ' : ' → ') + short(manifest) + ', ' + what + (r.previous && !r.unchanged ? ' (was ' + short(r.previous) + ') ' : ' '), url ? el('a', { id: 'set-open', href: url, target: '_blank', rel: 'noopener', text: 'open' }) : ''], 'done')
      if (!$('names-table').hidden) void listNames(false)
    } catch (e) {
      say('set-msg', e)
    }
  })

  $('resolve').addEventListener('click', async () => {
    const key = $('key').value.trim()
    const out = $('resolved')
    out.replaceChildren()
    try {
      if (!isAddress(key) && !NAME.test(key)) throw new UiError('type a name (docs.alice) or an address (b3:…)')
      say('resolve-msg', 'resolving…')
      const res = await call('index', 'GET', '/resolve/' + encodeURIComponent(key), { allow: [404] })
      if (res.status === 404) {
        const e = await failure(res)
        throw new UiError(e.details.reason === 'deleted' ? key + ' was removed' : 'nothing is known of ' + key + (isAddress(key) ? ': no node announces it' : ': no node has this name'))
      }
      const r = await res.json()
      const dl = el('dl')
      const add = (k, v) => dl.append(el('dt', { text: k }), el('dd', { 'data-field': k }, v))
      if (r.manifestAddress) {
        add('bound to', el('code', { text: r.manifestAddress }))
        add('kind', r.kind === 'dir' ? 'a directory (a site)' : 'a file' + (r.manifest ? ': ' + bytes(r.manifest.size) + ', ' + r.manifest.type : ''))
        if (r.record) add('signed by', 'node ' + r.record.node + ', version ' + r.record.seq + ', ' + ago(r.record.signedAt))
        const url = siteUrl(key, r.manifestAddress)
        if (url) add('open', el('a', { href: url, target: '_blank', rel: 'noopener', text: url }))
      }
      add('providers', r.providers.length === 0 ? 'none known yet' : r.providers.map((p) => p.node + ' at ' + p.endpoint + ' (score ' + p.score.toFixed(2) + ')').join('; '))
      add('answer', (r.source === 'cache' ? 'from this node’s cache' : r.source === 'peer' ? 'from a peer' : 'from this node') + ', good for ' + r.ttlSec + ' s')
      out.append(dl)
      say('resolve-msg', '')
    } catch (e) {
      say('resolve-msg', e)
    }
  })

  // ---- publish a folder ---------------------------------------------------------------------------

  let picked = []

  function typeFor(path) {
    const name = path.slice(path.lastIndexOf('/') + 1)
    const dot = name.lastIndexOf('.')
    return dot <= 0 ? 'application/octet-stream' : MEDIA_TYPES[name.slice(dot + 1).toLowerCase()] || 'application/octet-stream'
  }
  /** What ron-node publish leaves out: hidden files and folders (but .well-known). */
  const hidden = (path) => path.split('/').some((s) => s.startsWith('.') && s !== '.well-known')
  /** Unicode code point order, the order of a directory manifest. */
  function byCodePoint(a, b) {
    const x = Array.from(a.path), y = Array.from(b.path)
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const c = x[i].codePointAt(0) - y[i].codePointAt(0)
      if (c !== 0) return c
    }
    return x.length - y.length
  }

  function setPicked(files, from) {
    const kept = files.filter((f) => !hidden(f.path))
    picked = kept
    $('publish').disabled = kept.length === 0
    const total = kept.reduce((n, f) => n + f.file.size, 0)
    const skipped = files.length - kept.length
    say('publish-files', kept.length === 0
      ? new UiError('no files to publish in ' + from + (skipped ? ' (' + skipped + ' hidden file' + (skipped === 1 ? '' : 's') + ' left out)' : ''))
      : kept.length + ' file' + (kept.length === 1 ? '' : 's') + ' (' + bytes(total) + ') from ' + from + (skipped ? '; ' + skipped + ' hidden left out' : ''))
  }

  $('folder').addEventListener('change', () => {
    const files = Array.from($('folder').files)
    const top = files.length ? files[0].webkitRelativePath.split('/')[0] : ''
    setPicked(files.map((f) => ({ path: f.webkitRelativePath.split('/').slice(1).join('/') || f.name, file: f })), top || 'the folder')
  })

  /** Every file under a dropped directory entry, with its path relative to prefix. */
  async function walk(entry, prefix, out) {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject))
      out.push({ path: prefix + entry.name, file })
      return
    }
    if (!entry.isDirectory) return
    const reader = entry.createReader()
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject))
      if (batch.length === 0) break
      for (const e of batch) await walk(e, prefix + entry.name + '/', out)
      if (out.length > MAX_ENTRIES * 2) throw new UiError('more than ' + MAX_ENTRIES + ' files: a site holds at most that many')
    }
  }

  const drop = $('drop')
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over') })
  drop.addEventListener('dragleave', () => drop.classList.remove('over'))
  drop.addEventListener('drop', async (e) => {
    e.preventDefault()
    drop.classList.remove('over')
    try {
      const entries = Array.from(e.dataTransfer.items || []).map((i) => i.webkitGetAsEntry && i.webkitGetAsEntry()).filter(Boolean)
      if (entries.length === 1 && entries[0].isDirectory) {
        const out = []
        for (const child of await new Promise((resolve, reject) => { const r = entries[0].createReader(); const all = []; const next = () => r.readEntries((b) => { if (b.length === 0) resolve(all); else { all.push(...b); next() } }, reject); next() })) {
          await walk(child, '', out)
        }
        setPicked(out, entries[0].name)
      } else if (entries.length > 0) {
        const out = []
        for (const en of entries) await walk(en, '', out)
        setPicked(out, 'what was dropped')
      } else {
        setPicked(Array.from(e.dataTransfer.files).map((f) => ({ path: f.name, file: f })), 'what was dropped')
      }
    } catch (err) {
      say('publish-files', err)
    }
  })

  function checkPrefix(name) {
    const c = claimsOf(needToken())
    const prefix = c && c.ron && c.ron.namePrefix
    if (typeof prefix === 'string' && !within(name, prefix)) throw new UiError('this token cannot write ' + name + ': it allows ' + prefix + ' and names under it only')
  }

  $('publish').addEventListener('click', async () => {
    const name = $('publish-name').value.trim()
    const files = picked.slice()
    const button = $('publish')
    try {
      if (files.length === 0) throw new UiError('drop a folder first')
      if (files.length > MAX_ENTRIES) throw new UiError(files.length + ' files: a site holds at most ' + MAX_ENTRIES)
      if (name && !NAME.test(name)) throw new UiError('a name is lower-case labels separated by dots, like docs.alice')
      if (name) checkPrefix(name)
      else needToken()
      files.sort(byCodePoint)
      for (let i = 1; i < files.length; i++) if (byCodePoint(files[i - 1], files[i]) === 0) throw new UiError('two files have the path ' + files[i].path)
      button.disabled = true
      const total = files.reduce((n, f) => n + f.file.size, 0)
      let sent = 0
      let done = 0
      const entries = new Array(files.length)
      const progress = () => say('publish-msg', 'uploading: ' + done + ' of ' + files.length + ' files, ' + bytes(sent) + ' of ' + bytes(total))
      progress()
      let next = 0
      let failed = null
      const worker = async () => {
        while (failed === null && next < files.length) {
          const i = next++
          const f = files[i]
          try {
            const r = await (await call('storage', 'PUT', '/o', { auth: true, body: f.file })).json()
            entries[i] = { path: f.path, content: r.address, size: r.size, type: typeFor(f.path) }
          } catch (e) {
            failed = failed || (e instanceof UiError ? new UiError(f.path + ': ' + e.message, e) : e)
            return
          }
          done++
          sent += f.file.size
          progress()
        }
      }
      await Promise.all([worker(), worker(), worker(), worker()])
      if (failed) throw failed
      const manifestText = JSON.stringify({ kind: 'dir', entries })
      if (new TextEncoder().encode(manifestText).byteLength > MAX_MANIFEST_BYTES) throw new UiError('the directory manifest would pass ' + bytes(MAX_MANIFEST_BYTES) + ': too many files or too long paths')
      const m = await (await call('storage', 'PUT', '/o', { auth: true, body: manifestText })).json()
      let bound = ''
      if (name) {
        const r = await bind(name, m.address)
        bound = r.unchanged ? '; ' + name + ' already named it' : '; ' + name + ' → ' + short(m.address) + (r.previous ? ' (was ' + short(r.previous) + ')' : '')
      }
      const url = siteUrl(name, m.address)
      say('publish-msg', ['published ' + files.length + ' file' + (files.length === 1 ? '' : 's') + ' (' + bytes(total) + ') as ', el('code', { id: 'publish-manifest', text: m.address }), bound + ' ', url ? el('a', { id: 'site-url', href: url, target: '_blank', rel: 'noopener', text: 'open ' + url }) : ''], 'done')
      if (!$('names-table').hidden) void listNames(false)
    } catch (e) {
      say('publish-msg', e)
    } finally {
      button.disabled = picked.length === 0
    }
  })

  void poll()
})()
`

/** The dashboard page. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ron-node</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
${BODY}
<script>${SCRIPT.replace('__MEDIA_TYPES__', () => JSON.stringify(mediaTypeTable()))
  .replace('__MAX_ENTRIES__', () => String(MAX_DIR_ENTRIES))
  .replace('__MAX_MANIFEST_BYTES__', () => String(MAX_MANIFEST_BYTES))
  .replace('__MAX_LABEL__', () => String(MAX_LABEL_LENGTH))}</script>
</body>
</html>
`
