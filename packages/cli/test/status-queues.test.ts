import { describe, expect, it } from 'vitest'
import { createServiceHost } from '@ron/core'
import { nodeStatus } from '../src/admin.js'

describe('/status queues', () => {
  it("reads each queue's depth and drops from the service's exposition text", async () => {
    const host = createServiceHost({
      id: 'svc',
      version: '1.0.0',
      topology: {
        service: 'svc',
        tasks: [],
        channels: [
          { name: 'work', kind: 'mpsc', capacity: 8, producers: ['http'], consumers: ['worker'], overflow: 'reject-new' },
          { name: 'announce', kind: 'mpsc', capacity: 4, producers: ['http'], consumers: ['announcer'], overflow: 'drop-oldest' },
        ],
      },
    })
    const text = [
      '# TYPE queue_depth gauge',
      'queue_depth{queue="work",service="svc"} 3',
      '# TYPE queue_dropped_total counter',
      'queue_dropped_total{service="svc",queue="announce"} 2',
      '',
    ].join('\n')
    const service = { ...host.service, metricsText: async () => text }
    try {
      const status = await nodeStatus({
        nodeId: 'n0000000000000001',
        nodeKey: 'x',
        services: () => [{ name: 'svc', url: 'http://127.0.0.1:1', service }],
        version: '0.0.0',
        startedAt: 0,
        accepting: () => true,
        keys: () => [],
      })
      expect(status.services['svc']!.queues).toMatchObject([
        { name: 'work', capacity: 8, depth: 3, dropped: 0 },
        { name: 'announce', capacity: 4, depth: 0, dropped: 2 },
      ])
    } finally {
      await host.service.close()
    }
  })
})
