// Canonical JSON + digest of @tanstack/ai, timed on request so Python can interleave rounds.
//
// `node canonical.mjs <corpus dir> <min seconds per sample>`. One file name per stdin line;
// answers one JSON line: {"seconds": mean per call over >= min seconds, "digest", "bytes"}.
// The loop count of a file is calibrated (after a warm-up) on its first request.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { load } from './resolve.mjs'

const { canonicalInterruptJson, digestInterruptJson } = await load('@tanstack/ai')
const [dir, minArg] = process.argv.slice(2)
const minSeconds = Number(minArg)
const files = new Map()

const once = (value) => digestInterruptJson(canonicalInterruptJson(value))

function timeLoops(value, loops) {
  const start = process.hrtime.bigint()
  for (let i = 0; i < loops; i++) once(value)
  return Number(process.hrtime.bigint() - start) / 1e9
}

function prepare(name) {
  const value = JSON.parse(readFileSync(join(dir, name), 'utf8'))
  const canonical = canonicalInterruptJson(value)
  for (let i = 0; i < 50; i++) once(value) // let the JIT settle
  let loops = 1
  let spent = timeLoops(value, loops)
  while (spent < minSeconds / 4 && loops < 1 << 22) {
    loops *= 2
    spent = timeLoops(value, loops)
  }
  loops = Math.max(1, Math.round((loops * minSeconds) / Math.max(spent, 1e-9)))
  const entry = { value, loops, digest: digestInterruptJson(canonical), bytes: Buffer.byteLength(canonical) }
  files.set(name, entry)
  return entry
}

createInterface({ input: process.stdin }).on('line', (name) => {
  const entry = files.get(name) ?? prepare(name)
  const seconds = timeLoops(entry.value, entry.loops) / entry.loops
  process.stdout.write(JSON.stringify({ seconds, digest: entry.digest, bytes: entry.bytes }) + '\n')
})
