import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpTransport } from '@ron/core'
import { createRegistryClient, generateSignerKey, loadOrCreateLogKey, signApproval } from '@ron/registry'
import { startEtcdCluster } from './etcd-cluster.js'
import { firstJsonLine, killAll, spawnCli } from './helpers.js'
const etcd = await startEtcdCluster()
const root = await mkdtemp(join(tmpdir(), 'ron-exp-'))
await loadOrCreateLogKey(join(root, 'log.key'))
const signer = generateSignerKey('ops')
const origin = 'ron.registry/exp'
await writeFile(join(root, 'c.json'), JSON.stringify({ coordination: { etcd: { endpoints: etcd.endpoints, leaseTtl: '3s' } }, registry: { origin, logKeyFile: join(root, 'log.key'), signers: { threshold: 1, signers: [{ id: signer.id, publicKey: signer.publicKey }] } } }))
const procs = [0, 1, 2].map((i) => spawnCli(['start', '--json', '--log-level', 'info', '--port-base', '0', '--data-dir', join(root, `n${i}`), '--drain-deadline', '500ms', '--config', join(root, 'c.json')]))
try {
  const sums = await Promise.all(procs.map((p) => firstJsonLine<any>(p, 60000)))
  console.log('started', sums.map((s) => s.nodeId))
  const clients = await Promise.all(sums.map(async (s) => createRegistryClient(new HttpTransport({ targets: { registry: s.services.registry } }), { token: (await readFile(s.tokenFile, 'utf8')).trim() })))
  setTimeout(() => { for (const p of procs) console.log('STDERR', p.stderr().slice(-4000)); process.exit(1) }, 40000).unref()
  const t0 = Date.now()
  let ok = 0, cas = 0
  await Promise.all(clients.map(async (reg, n) => {
    for (let i = 0; i < 3; i++) {
      for (;;) {
        const p = await reg.propose({ schemaVersion: 1, items: [{ kind: 'policy', name: `n${n}-${i}`, rules: { n: i } }] })
        try { await reg.commit(p.proposalId, { approvals: [signApproval(signer, { origin, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })] }); ok++; break } catch (e: any) { if (e.code === 'ChainMismatch') { cas++; if (cas < 4) console.log(e.message, JSON.stringify(e.details)); continue } throw e }
      }
    }
  }))
  console.log('commits', ok, 'cas', cas, 'ms', Date.now() - t0)
  await new Promise((r) => setTimeout(r, 300))
  for (const s of sums) {
    const h = await (await fetch(`${s.services.registry}/registry/head`)).json()
    const cp = await (await fetch(`${s.services.registry}/registry/checkpoint`)).text()
    const st = await (await fetch(`${s.admin}/status`)).json()
    console.log(s.nodeId, h.version, h.hash, cp.split('\n')[1], JSON.stringify(st.etcd))
  }
} catch (e) { console.log('ERR', e); for (const p of procs) console.log(p.stderr().slice(-3000)) }
await killAll(); await etcd.close()
