/**
 * Type tests of @ron/core's public generics, compiled by `npm run typecheck` (tsc over
 * packages/*\/test; CI's lint-and-typecheck stage). Each positive assertion fails to compile when
 * a generic stops carrying its type, and each `@ts-expect-error` fails when a misuse compiles.
 * Nothing here runs: the file is not a vitest `*.test.ts`.
 */
import type { Counter, Gauge, Histogram } from 'prom-client'
import { expectTypeOf } from 'vitest'
import type { z } from 'zod'
import {
  BoundedQueue,
  Broadcast,
  BusyError,
  NotFoundError,
  RonError,
  Watch,
  createServiceMetrics,
  defineMetrics,
  durationSchema,
  errorForCode,
  isRonError,
  retry,
  serviceBaseSchema,
  sizeSchema,
  validateConfig,
  withDeadline,
  type BroadcastRecv,
  type ErrorCode,
  type MetricHandles,
  type MetricsDeclaration,
} from '@ron/core'
import { BoundedQueue as QueueFromSubpath } from '@ron/core/concurrency'

// defineMetrics: the table's literal types become typed prom-client handles.
const table = defineMetrics({
  hits_total: { type: 'counter', help: 'Hits.', labels: ['route', 'status'] },
  depth: { type: 'gauge', help: 'Depth.' },
  wait_seconds: { type: 'histogram', help: 'Wait.', labels: ['kind'], zero: { kind: ['read'] } },
})
const handles = createServiceMetrics({ service: 'types' }).register(table)
expectTypeOf(table).toExtend<MetricsDeclaration>()
expectTypeOf(handles).toEqualTypeOf<MetricHandles<typeof table.table>>()
expectTypeOf(handles.hits_total).toEqualTypeOf<Counter<'route' | 'status'>>()
expectTypeOf(handles.depth).toEqualTypeOf<Gauge<never>>()
expectTypeOf(handles.wait_seconds).toEqualTypeOf<Histogram<'kind'>>()
handles.hits_total.inc({ route: 'GET /', status: '200' })
// @ts-expect-error a label the family does not declare
handles.hits_total.inc({ method: 'GET' })
// @ts-expect-error a family the table does not declare
expectTypeOf(handles).toHaveProperty('misses_total')
// @ts-expect-error a metric type outside counter/gauge/histogram
defineMetrics({ x: { type: 'summary', help: 'x' } })

// BoundedQueue<T>, Broadcast<T>, Watch<T>: the item type flows to every method.
interface Job {
  id: number
}
const q = new BoundedQueue<Job>({ name: 'jobs', capacity: 4 })
expectTypeOf<Parameters<BoundedQueue<Job>['trySend']>>().toEqualTypeOf<[item: Job]>()
expectTypeOf(q.trySend({ id: 1 })).toEqualTypeOf<Job | undefined>()
expectTypeOf(q.tryRecv()).toEqualTypeOf<Job | undefined>()
expectTypeOf(q.recv()).resolves.toEqualTypeOf<Job>()
// @ts-expect-error the queue's item type
q.trySend('job')
expectTypeOf(new QueueFromSubpath<Job>({ name: 'same', capacity: 1 })).toEqualTypeOf<BoundedQueue<Job>>()

const b = new Broadcast<Job>({ name: 'events', capacity: 4 })
expectTypeOf<Parameters<Broadcast<Job>['publish']>>().toEqualTypeOf<[value: Job]>()
expectTypeOf(b.subscribe().recv()).resolves.toEqualTypeOf<BroadcastRecv<Job>>()

const w = new Watch<{ mode: 'open' | 'closed' }>({ mode: 'open' })
expectTypeOf(w.get()).toEqualTypeOf<{ mode: 'open' | 'closed' }>()
expectTypeOf(w.changed()).resolves.toEqualTypeOf<{ mode: 'open' | 'closed' }>()
expectTypeOf<Parameters<Parameters<Watch<{ mode: 'open' | 'closed' }>['subscribe']>[0]>>().toEqualTypeOf<[value: { mode: 'open' | 'closed' }]>()
// @ts-expect-error a value outside the watched type
w.set({ mode: 'ajar' })

// withDeadline / retry keep the result type of the work they wrap.
expectTypeOf(withDeadline(100, () => Promise.resolve(42 as const))).resolves.toEqualTypeOf<42>()
expectTypeOf(retry((attempt) => Promise.resolve(String(attempt)))).resolves.toEqualTypeOf<string>()
// @ts-expect-error the work must return a promise
void withDeadline(100, () => 42)

// Typed error codes: each class carries its literal code; codes outside SPEC §4 do not compile.
expectTypeOf(new BusyError().code).toEqualTypeOf<'Busy'>()
expectTypeOf(new NotFoundError().code).toEqualTypeOf<'NotFound'>()
expectTypeOf(new BusyError()).toExtend<RonError>()
expectTypeOf<'Busy' | 'NotReady' | 'Draining'>().toExtend<ErrorCode>()
expectTypeOf<'Bogus'>().not.toExtend<ErrorCode>()
expectTypeOf(errorForCode('Conflict')).toEqualTypeOf<RonError>()
// @ts-expect-error not an error code
errorForCode('Bogus')
const caught: unknown = undefined
if (isRonError(caught, 'Busy')) expectTypeOf(caught).toEqualTypeOf<RonError>()
// @ts-expect-error not an error code
isRonError(caught, 'Bogus')

// Config schemas: what a user may write (input) and what a service reads (output).
expectTypeOf<z.input<typeof durationSchema>>().toEqualTypeOf<string | number>()
expectTypeOf<z.output<typeof durationSchema>>().toEqualTypeOf<number>()
expectTypeOf<z.output<typeof sizeSchema>>().toEqualTypeOf<number>()
expectTypeOf(validateConfig(durationSchema, '5s')).toEqualTypeOf<number>()
type BaseIn = z.input<typeof serviceBaseSchema>
type BaseOut = z.output<typeof serviceBaseSchema>
expectTypeOf<NonNullable<BaseIn['http']>['readTimeoutMs']>().toEqualTypeOf<string | number | undefined>()
expectTypeOf<BaseOut['http']['readTimeoutMs']>().toEqualTypeOf<number>()
expectTypeOf(validateConfig(serviceBaseSchema, {})).toEqualTypeOf<BaseOut>()
