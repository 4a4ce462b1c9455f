// Load packages installed under tests/interop/js (the pinned @tanstack/ai the interop tests use).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const base = process.env.INTEROP_JS ?? new URL('../../tests/interop/js', import.meta.url).pathname

export async function load(name) {
  const dir = join(base, 'node_modules', name)
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  const entry = pkg.exports?.['.']?.import ?? pkg.exports?.['.']?.default ?? pkg.module ?? pkg.main
  const target = typeof entry === 'object' ? entry.default : entry
  return import(pathToFileURL(join(dir, target)).href)
}
