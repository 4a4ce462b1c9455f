// TanStack AI's chat() handling a continuation request body, in-process (no sockets).
//
// `node continuation.mjs <tool manifest.json>`: the tools are the demo's, with the same raw
// JSON Schemas; server tools return `{ok: true}`; the mock model answers "Done." at once.
// One JSON request per stdin line: {"body": "<file>", "minSeconds": s}. The answer is
// {"seconds": mean per request, "loops", "events": [types of the first response]}: body text
// -> chatParamsFromRequest -> chat() -> toServerSentEventsResponse -> whole SSE text.
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { load } from './resolve.mjs'

const { chat, chatParamsFromRequest, toServerSentEventsResponse, toolDefinition } =
  await load('@tanstack/ai')

const manifest = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const TOOLS = manifest.map((t) => {
  const definition = toolDefinition({
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema,
    ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
    needsApproval: t.needsApproval,
    ...(t.approvalSchema ? { approvalSchema: t.approvalSchema } : {}),
  })
  return t.runsOn === 'server' ? definition.server(async () => ({ ok: true })) : definition
})

const adapter = {
  kind: 'text',
  name: 'mock',
  model: 'mock-model',
  '~types': {},
  async *chatStream(options) {
    const runId = options.runId ?? 'run'
    const threadId = options.threadId ?? 'thread'
    const messageId = `msg_${runId}`
    yield { type: 'RUN_STARTED', runId, threadId, timestamp: Date.now() }
    yield { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', timestamp: Date.now() }
    yield { type: 'TEXT_MESSAGE_CONTENT', messageId, delta: 'Done.', timestamp: Date.now() }
    yield { type: 'TEXT_MESSAGE_END', messageId, timestamp: Date.now() }
    yield { type: 'RUN_FINISHED', runId, threadId, finishReason: 'stop', timestamp: Date.now() }
  },
  async structuredOutput() {
    throw new Error('not supported')
  },
}

async function handle(text) {
  const request = new Request('http://127.0.0.1/api/chat', { method: 'POST', body: text })
  const params = await chatParamsFromRequest(request)
  const stream = chat({
    adapter,
    debug: false, // no console logging of refused continuations (ours logs none either)
    messages: params.messages,
    tools: TOOLS,
    threadId: params.threadId,
    runId: params.runId,
    ...(params.parentRunId ? { parentRunId: params.parentRunId } : {}),
    ...(params.resume ? { resume: params.resume } : {}),
  })
  return toServerSentEventsResponse(stream).text()
}

async function timeLoops(text, loops) {
  const start = process.hrtime.bigint()
  for (let i = 0; i < loops; i++) await handle(text)
  return Number(process.hrtime.bigint() - start) / 1e9
}

const bodies = new Map()

async function prepare(file, minSeconds) {
  const text = readFileSync(file, 'utf8')
  const sse = await handle(text)
  const events = sse
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)))
    .map((e) => (e.type === 'RUN_ERROR' ? `RUN_ERROR ${e.message}` : e.type))
  for (let i = 0; i < 3; i++) await handle(text) // warm-up
  let loops = 1
  let spent = await timeLoops(text, loops)
  while (spent < minSeconds / 4 && loops < 1 << 16) {
    loops *= 2
    spent = await timeLoops(text, loops)
  }
  loops = Math.max(1, Math.round((loops * minSeconds) / Math.max(spent, 1e-9)))
  const entry = { text, loops, events }
  bodies.set(file, entry)
  return entry
}

const lines = createInterface({ input: process.stdin })
for await (const line of lines) {
  const request = JSON.parse(line)
  const entry = bodies.get(request.body) ?? (await prepare(request.body, request.minSeconds))
  const seconds = (await timeLoops(entry.text, entry.loops)) / entry.loops
  const answer = { seconds, loops: entry.loops, events: entry.events }
  process.stdout.write(JSON.stringify(answer) + '\n')
}
