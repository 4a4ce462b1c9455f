// Long-lived differential-test oracle around the real `@tanstack/ai` wire helpers.
//
// Protocol: one JSON request per line on stdin, exactly one JSON answer per line on
// stdout, in request order.  Every answer echoes the request `id`.
//
//   {"id":n,"op":"canonical","text":"<json text>"}
//       -> {"id":n,"ok":true,"canonical":"...","digest":"sha256:..."}
//       -> {"id":n,"ok":false,"error":{"name":"TypeError","message":"..."}}
//   {"id":n,"op":"digest","text":"<any string>"}              (text may be any JSON value)
//   {"id":n,"op":"readBinding","descriptor":{...}}             readInterruptBinding
//   {"id":n,"op":"readUnopenedBinding","descriptor":{...}}     readUnopenedInterruptBinding
//   {"id":n,"op":"withBinding","descriptor":{...},"binding":{...}}   withInterruptBinding
//   {"id":n,"op":"withoutBinding","descriptor":{...}}          withoutInterruptBinding
//   {"id":n,"op":"continuationFromDescriptor","descriptor":{...}}
//   {"id":n,"op":"readContinuation","metadata":...}            (omit `metadata` => undefined)
//   {"id":n,"op":"dateParse","text":"..."}                     Date.parse (diagnostics)
//   {"id":n,"op":"canonicalScenario","name":"cycle"|...}       non-JSON inputs (cycles, NaN…)
//   {"id":n,"op":"info"}                                       versions and export kinds
//       -> {"id":n,"ok":true,"result":<JSON value or null>,"undefined":bool,"undefinedKeys":[...]}
//
// `result` is what `JSON.stringify` puts on the wire (`undefined` -> null with
// "undefined":true).  `undefinedKeys` lists own top-level keys of a result object whose
// value is `undefined` — they vanish on the wire, but we report them so tests can tell
// "absent" from "present but undefined".  Lone surrogates survive the pipe because the
// ES2019 well-formed JSON.stringify escapes them as \udxxx.
//
// Run with TZ=UTC (the conftest fixture does) so Date.parse of local-time forms is
// deterministic.

import { createInterface } from 'node:readline'
import { readFileSync } from 'node:fs'
import * as ai from '@tanstack/ai'

function installedVersion(name) {
  const url = new URL(`./node_modules/${name}/package.json`, import.meta.url)
  return JSON.parse(readFileSync(url, 'utf8')).version
}

const {
  canonicalInterruptJson,
  digestInterruptJson,
  readInterruptBinding,
  readUnopenedInterruptBinding,
  withInterruptBinding,
  withoutInterruptBinding,
  genericInterruptContinuationFromDescriptor,
  readGenericInterruptContinuation,
} = ai

function errorOf(err) {
  if (err instanceof Error) return { name: err.name, message: err.message }
  return { name: typeof err, message: String(err) }
}

function isPromise(value) {
  return value !== null && typeof value === 'object' && typeof value.then === 'function'
}

function assertSync(name, value) {
  // The helpers under test are synchronous in 0.58.0; fail loudly if a future pin
  // makes one async instead of silently comparing "[object Promise]".
  if (isPromise(value)) throw new Error(`oracle: ${name} returned a Promise`)
  return value
}

function wrapResult(value) {
  const undefinedKeys =
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.keys(value).filter((k) => value[k] === undefined)
      : []
  return {
    ok: true,
    result: value === undefined ? null : value,
    undefined: value === undefined,
    undefinedKeys,
  }
}

function canonicalScenario(name) {
  switch (name) {
    case 'cycle-object': {
      const a = { x: 1 }
      a.self = a
      return a
    }
    case 'cycle-array': {
      const a = [1]
      a.push(a)
      return a
    }
    case 'cycle-deep': {
      const a = { b: { c: [] } }
      a.b.c.push({ back: a })
      return a
    }
    case 'shared-object': {
      const s = { k: [1, 2] }
      return { a: s, b: s, c: [s, s] }
    }
    case 'shared-array': {
      const s = [{ z: 1, a: 2 }]
      return [s, s, { s }]
    }
    case 'nan':
      return Number.NaN
    case 'nan-nested':
      return { a: [1, Number.NaN] }
    case 'infinity':
      return Number.POSITIVE_INFINITY
    case '-infinity':
      return { x: Number.NEGATIVE_INFINITY }
    case 'undefined-prop':
      return { a: undefined }
    case 'undefined-item':
      return [undefined]
    case 'array-hole':
      // eslint-disable-next-line no-sparse-arrays
      return [1, , 3]
    case 'date':
      return { when: new Date(0) }
    case 'map':
      return new Map([['a', 1]])
    case 'null-proto': {
      const o = Object.create(null)
      o.b = 1
      o.a = 2
      return o
    }
    case 'bigint':
      return { n: 1n }
    case 'function':
      return { f() {} }
    case 'symbol':
      return [Symbol('s')]
    default:
      throw new Error(`oracle: unknown scenario ${name}`)
  }
}

function handle(req) {
  switch (req.op) {
    case 'canonical': {
      if (typeof req.text !== 'string') throw new Error('oracle: canonical needs text')
      const value = JSON.parse(req.text)
      let canonical
      try {
        canonical = assertSync('canonicalInterruptJson', canonicalInterruptJson(value))
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('oracle:')) throw err
        return { ok: false, error: errorOf(err) }
      }
      const digest = assertSync('digestInterruptJson', digestInterruptJson(canonical))
      return { ok: true, canonical, digest }
    }
    case 'canonicalScenario': {
      const value = canonicalScenario(req.name)
      try {
        const canonical = assertSync('canonicalInterruptJson', canonicalInterruptJson(value))
        return { ok: true, canonical, digest: digestInterruptJson(canonical) }
      } catch (err) {
        return { ok: false, error: errorOf(err) }
      }
    }
    case 'digest': {
      try {
        return { ok: true, digest: assertSync('digestInterruptJson', digestInterruptJson(req.text)) }
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('oracle:')) throw err
        return { ok: false, error: errorOf(err) }
      }
    }
    case 'readBinding':
      return wrapResult(assertSync('readInterruptBinding', readInterruptBinding(req.descriptor)))
    case 'readUnopenedBinding':
      return wrapResult(
        assertSync('readUnopenedInterruptBinding', readUnopenedInterruptBinding(req.descriptor)),
      )
    case 'withBinding':
      return wrapResult(
        assertSync('withInterruptBinding', withInterruptBinding(req.descriptor, req.binding)),
      )
    case 'withoutBinding':
      return wrapResult(assertSync('withoutInterruptBinding', withoutInterruptBinding(req.descriptor)))
    case 'continuationFromDescriptor':
      return wrapResult(
        assertSync(
          'genericInterruptContinuationFromDescriptor',
          genericInterruptContinuationFromDescriptor(req.descriptor),
        ),
      )
    case 'readContinuation': {
      const metadata = Object.prototype.hasOwnProperty.call(req, 'metadata')
        ? req.metadata
        : undefined
      const read = assertSync(
        'readGenericInterruptContinuation',
        readGenericInterruptContinuation(metadata),
      )
      const out = wrapResult(read)
      // Report the value's own undefined keys as well (e.g. a payload that is undefined).
      if (read && read.value && typeof read.value === 'object') {
        out.valueUndefinedKeys = Object.keys(read.value).filter((k) => read.value[k] === undefined)
      }
      return out
    }
    case 'dateParse': {
      const ms = Date.parse(req.text)
      return { ok: true, result: Number.isFinite(ms) ? ms : null, finite: Number.isFinite(ms) }
    }
    case 'info': {
      const names = [
        'canonicalInterruptJson',
        'digestInterruptJson',
        'readInterruptBinding',
        'readUnopenedInterruptBinding',
        'withInterruptBinding',
        'withoutInterruptBinding',
        'genericInterruptContinuationFromDescriptor',
        'readGenericInterruptContinuation',
        'INTERRUPT_BINDING_METADATA_KEY',
        'INTERRUPT_BINDING_VERSION',
        'INTERRUPT_CONTINUATION_METADATA_KEY',
        'INTERRUPT_CONTINUATION_VERSION',
        'INTERRUPT_PAYLOAD_METADATA_KEY',
      ]
      const exportsInfo = {}
      for (const n of names) {
        const v = ai[n]
        exportsInfo[n] =
          typeof v === 'function'
            ? { type: 'function', async: v.constructor.name === 'AsyncFunction', length: v.length }
            : { type: typeof v, value: v }
      }
      const digestSample = digestInterruptJson('abc')
      return {
        ok: true,
        result: {
          node: process.version,
          tz: process.env.TZ ?? null,
          versions: Object.fromEntries(
            ['@tanstack/ai', '@tanstack/ai-client', '@ag-ui/core', '@ag-ui/client', 'zod'].map(
              (n) => [n, installedVersion(n)],
            ),
          ),
          exports: exportsInfo,
          digestIsSync: typeof digestSample === 'string',
          digestSample,
        },
      }
    }
    default:
      throw new Error(`oracle: unknown op ${JSON.stringify(req.op)}`)
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity })
let pending = []
let flushScheduled = false

function flush() {
  flushScheduled = false
  if (pending.length === 0) return
  const chunk = pending.join('')
  pending = []
  process.stdout.write(chunk)
}

rl.on('line', (line) => {
  if (line.trim() === '') return
  let id = null
  let answer
  try {
    const req = JSON.parse(line)
    id = req.id ?? null
    answer = { id, ...handle(req) }
  } catch (err) {
    // Protocol / oracle failure (not a library outcome): report it distinctly.
    answer = { id, ok: false, oracleError: true, error: errorOf(err) }
  }
  let encoded
  try {
    encoded = JSON.stringify(answer)
  } catch (err) {
    encoded = JSON.stringify({ id, ok: false, oracleError: true, error: errorOf(err) })
  }
  pending.push(encoded + '\n')
  // Batch answers that arrive in one stdin chunk into a single write.
  if (!flushScheduled) {
    flushScheduled = true
    setImmediate(flush)
  }
})

rl.on('close', () => {
  flush()
})
