// A real TanStack AI server for the Python client's differential tests.
//
// `node tanstack_server.mjs [port]` listens on 127.0.0.1 (port 0 = any free port) and
// prints one JSON line `{"port": N}` when ready. Routes:
//
//   POST /api/chat        chatParamsFromRequest -> chat({ adapter: scripted mock, tools,
//                         interrupts, middleware, threadId, runId, parentRunId, resume })
//                         -> toServerSentEventsResponse (SSE framing: `docs/protocol.md` §1.7)
//   GET  /api/tools       the tool manifest with raw JSON Schemas (same shape as ours)
//   GET  /api/interrupts  generic definitions: id + draft-07 response/payload JSON Schemas
//   GET  /api/log         server tool executions and generic resolutions, in order
//
// The tools mirror a few demo tools with raw JSON Schemas, so the Python client hashes the
// same bytes. The mock model is scripted by the last user message, like the demo agent.

import { createServer } from 'node:http'
import { z } from 'zod'
import {
  chat,
  chatParamsFromRequest,
  defineInterrupt,
  toServerSentEventsResponse,
  toolDefinition,
} from '@tanstack/ai'

const log = []

// Copied from chat_app/demo/tools.py (raw JSON Schemas, so both sides hash the same bytes).
const schemas = {
  transfer: {"input": {"type": "object", "properties": {"recipient": {"type": "string", "minLength": 1, "title": "Recipient"}, "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000000, "title": "Amount"}}, "required": ["recipient", "amount"], "additionalProperties": false}, "approval": {"reject": {"type": "object", "properties": {"reason": {"type": "string", "minLength": 1, "title": "Reason", "description": "Why the transfer is refused; the agent reads this."}}, "required": ["reason"], "additionalProperties": false}}},
  delete_project: {"input": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "title": "Project"}}, "required": ["name"], "additionalProperties": false}},
  send_email: {"input": {"type": "object", "properties": {"to": {"type": "string", "format": "email", "title": "To"}, "subject": {"type": "string", "minLength": 1, "maxLength": 120, "title": "Subject"}, "body": {"type": "string", "title": "Body"}}, "required": ["to", "subject", "body"], "additionalProperties": false}},
  pay_invoice: {"input": {"type": "object", "properties": {"invoice": {"type": "string", "title": "Invoice"}, "supplier": {"type": "string", "title": "Supplier"}, "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000000, "title": "Amount"}}, "required": ["invoice", "supplier", "amount"], "additionalProperties": false}},
  deploy: {"input": {"type": "object", "properties": {"service": {"type": "string", "title": "Service"}, "version": {"type": "string", "title": "Version"}}, "required": ["service", "version"], "additionalProperties": false}},
  get_local_time: {"input": {"type": "object", "properties": {}, "additionalProperties": false}, "output": {"type": "object", "properties": {"time": {"type": "string"}, "timeZone": {"type": "string"}}, "required": ["time", "timeZone"]}},
  get_location: {"input": {"type": "object", "properties": {}, "additionalProperties": false}, "output": {"type": "object", "properties": {"latitude": {"type": "number", "minimum": -90, "maximum": 90}, "longitude": {"type": "number", "minimum": -180, "maximum": 180}, "accuracy": {"type": "number", "minimum": 0, "description": "Metres."}, "label": {"type": "string"}, "error": {"type": "string", "description": "Why no position was read."}}, "oneOf": [{"required": ["latitude", "longitude"]}, {"required": ["error"]}]}},
}

function serverTool(name, needsApproval, run) {
  const s = schemas[name]
  return toolDefinition({
    name,
    description: name,
    inputSchema: s.input,
    ...(s.output ? { outputSchema: s.output } : {}),
    needsApproval,
    ...(s.approval ? { approvalSchema: s.approval } : {}),
  }).server(async (args) => {
    log.push({ tool: name, args })
    return run(args)
  })
}

function clientTool(name, needsApproval) {
  const s = schemas[name]
  return toolDefinition({
    name,
    description: name,
    inputSchema: s.input,
    outputSchema: s.output,
    needsApproval,
  })
}

const TOOLS = [
  serverTool('transfer', true, (a) => ({ receipt: 'rcpt-1', recipient: a.recipient, amount: a.amount })),
  serverTool('delete_project', true, (a) => ({ deleted: a.name })),
  serverTool('send_email', true, (a) => ({ messageId: 'msg-1', to: a.to, subject: a.subject })),
  serverTool('pay_invoice', true, (a) => ({ paid: a.invoice, amount: a.amount })),
  serverTool('deploy', true, (a) => ({ deployment: 'dep-1', service: a.service, version: a.version })),
  clientTool('get_local_time', false),
  clientTool('get_location', true),
]

const SHIPPING = defineInterrupt({
  id: 'shipping-speed',
  payloadSchema: z.object({ order: z.string() }),
  responseSchema: z.object({
    speed: z.enum(['standard', 'express', 'overnight']),
    giftWrap: z.boolean(),
  }),
})

function draft07(schema) {
  const json = schema['~standard'].jsonSchema.input({ target: 'draft-07' })
  delete json.$schema
  return json
}

const INVOICES = [
  { invoice: 'INV-1001', supplier: 'Acme Paper', amount: 120.5 },
  { invoice: 'INV-1002', supplier: 'Globex Cloud', amount: 980 },
  { invoice: 'INV-1003', supplier: 'Initech Coffee', amount: 64.25 },
]

function textOf(message) {
  if (typeof message.content === 'string') return message.content
  if (Array.isArray(message.content)) {
    return message.content.map((p) => (p.type === 'text' ? p.content ?? p.text ?? '' : '')).join('')
  }
  return ''
}

// The benchmark's equal-work mode (`TANSTACK_MOCK_WORDS=1`): for a transfer the mock says
// what chat_app's demo says, one delta per word as its scripted model streams, so both
// servers send the same events.
const WORDS = process.env.TANSTACK_MOCK_WORDS === '1'
// And with `TANSTACK_MOCK_TURNS=1`, each word in a turn of node's event loop of its own, as
// chat_app's scripted model hands over each word and as a model's stream arrives (a read per
// token): node then writes each word to the socket as it comes, where words yielded in one
// turn go out together.
const TURNS = process.env.TANSTACK_MOCK_TURNS === '1'
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

function plan(messages, notes) {
  let lastUser = -1
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i
  })
  const since = messages.slice(lastUser + 1)
  const results = since.filter((m) => m.role === 'tool')
  if (results.length > 0) {
    let receipt = null
    try {
      receipt = WORDS && results.length === 1 ? JSON.parse(textOf(results[0])) : null
    } catch {
      receipt = null // not a JSON result (a refusal's reason): say the results as usual
    }
    if (receipt?.receipt) {
      return { text: `Sent ${receipt.amount} to ${receipt.recipient}. Receipt id: ${receipt.receipt}.` }
    }
    return { text: 'Results: ' + results.map((m) => textOf(m)).join(' | ') }
  }
  if (notes.length > 0) {
    const note = notes[notes.length - 1]
    return {
      text:
        note.status === 'cancelled'
          ? 'Shipping was cancelled.'
          : `Shipping order ${note.key} ${note.response.speed}.`,
    }
  }
  const text = lastUser >= 0 ? textOf(messages[lastUser]) : ''
  let match
  if ((match = /transfer\s+(\d+)\s+to\s+(\w+)/i.exec(text))) {
    const text = WORDS ? `I'll send ${match[1]} to ${match[2]} once it is approved.` : 'Transfer needs approval.'
    return { text, calls: [['transfer', { recipient: match[2], amount: Number(match[1]) }]] }
  }
  if ((match = /delete project\s+(\S+)/i.exec(text))) {
    return { text: 'Deleting needs approval.', calls: [['delete_project', { name: match[1] }]] }
  }
  if ((match = /email\s+(\S+@\S+)\s+about\s+(.+)/i.exec(text))) {
    return { text: 'Draft ready.', calls: [['send_email', { to: match[1], subject: match[2], body: 'Hi' }]] }
  }
  if (/pay invoices/i.test(text)) {
    return { text: 'Three invoices.', calls: INVOICES.map((inv) => ['pay_invoice', inv]) }
  }
  if (/what time/i.test(text)) return { text: 'Checking your clock.', calls: [['get_local_time', {}]] }
  if (/location/i.test(text)) return { text: 'Reading your location.', calls: [['get_location', {}]] }
  if (/\bdeploy\b/i.test(text)) {
    return { text: 'Deploying.', calls: [['deploy', { service: 'checkout', version: '2.4.1' }]] }
  }
  return { text: 'Hello from TanStack.' }
}

function mockAdapter(notes) {
  let turn = 0
  return {
    kind: 'text',
    name: 'mock',
    model: 'mock-model',
    '~types': {},
    async *chatStream(options) {
      turn += 1
      const runId = options.runId ?? 'run-mock'
      const threadId = options.threadId ?? 'thread-mock'
      const messageId = `msg_${runId}_${turn}`
      const step = plan(options.messages, notes)
      yield { type: 'RUN_STARTED', runId, threadId, timestamp: Date.now() }
      yield { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', timestamp: Date.now() }
      for (const delta of WORDS ? step.text.match(/\s*\S+|\s+/g) ?? [] : [step.text]) {
        if (TURNS) await nextTurn()
        yield { type: 'TEXT_MESSAGE_CONTENT', messageId, delta, timestamp: Date.now() }
      }
      yield { type: 'TEXT_MESSAGE_END', messageId, timestamp: Date.now() }
      const calls = step.calls ?? []
      for (let index = 0; index < calls.length; index++) {
        const [name, args] = calls[index]
        const toolCallId = `call_${runId}_${index + 1}`
        yield { type: 'TOOL_CALL_START', toolCallId, toolCallName: name, parentMessageId: messageId, index, timestamp: Date.now() }
        yield { type: 'TOOL_CALL_ARGS', toolCallId, delta: JSON.stringify(args), timestamp: Date.now() }
        yield { type: 'TOOL_CALL_END', toolCallId, toolName: name, input: args, timestamp: Date.now() }
      }
      yield {
        type: 'RUN_FINISHED',
        runId,
        threadId,
        finishReason: calls.length > 0 ? 'tool_calls' : 'stop',
        timestamp: Date.now(),
      }
    },
    async structuredOutput() {
      throw new Error('not supported')
    },
  }
}

function demoMiddleware(params, notes) {
  const lastUser = [...params.messages].reverse().find((m) => m.role === 'user')
  const text = lastUser ? textOf(lastUser) || String(lastUser.content ?? '') : ''
  return {
    name: 'demo',
    onInterruptBoundary(ctx) {
      if (ctx.phase !== 'beforeModel' || ctx.parentRunId || ctx.iteration > 0) return undefined
      const match = /ship order\s+(\w+)/i.exec(text)
      if (!match) return undefined
      return {
        interrupts: [
          SHIPPING.interrupt({
            key: `order-${match[1]}`,
            reason: 'shipping_speed',
            message: `How should order ${match[1]} ship?`,
            payload: { order: match[1] },
          }),
        ],
      }
    },
    onInterruptResolution(ctx, resolutions) {
      for (const item of resolutions.all()) {
        const note = { key: item.request.key, status: item.status, response: item.response }
        notes.push(note)
        log.push({ generic: item.request.definition.id, ...note })
      }
      return { toolResume: 'continue' }
    },
    onChunk(ctx, chunk) {
      // A foreign, binding-less pause from a "workflow engine" next to the deploy approval.
      if (
        /\bdeploy\b/i.test(text) &&
        !ctx.parentRunId &&
        chunk.type === 'RUN_FINISHED' &&
        chunk.outcome?.type === 'interrupt'
      ) {
        return {
          ...chunk,
          outcome: {
            ...chunk.outcome,
            interrupts: [
              ...chunk.outcome.interrupts,
              { id: 'workflow-freeze', reason: 'workflow:change_freeze', message: 'Change freeze sign-off pending.' },
            ],
          },
        }
      }
      return undefined
    },
  }
}

async function handleChat(request) {
  let params
  try {
    params = await chatParamsFromRequest(request)
  } catch (error) {
    if (error instanceof Response) return error
    throw error
  }
  const notes = []
  const stream = chat({
    adapter: mockAdapter(notes),
    messages: params.messages,
    tools: TOOLS,
    interrupts: [SHIPPING],
    middleware: [demoMiddleware(params, notes)],
    threadId: params.threadId,
    runId: params.runId,
    ...(params.parentRunId ? { parentRunId: params.parentRunId } : {}),
    ...(params.resume ? { resume: params.resume } : {}),
  })
  return toServerSentEventsResponse(stream)
}

function manifest() {
  return {
    tools: TOOLS.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: schemas[tool.name].input ?? null,
      outputSchema: schemas[tool.name].output ?? null,
      approvalSchema: schemas[tool.name].approval ?? null,
      needsApproval: tool.needsApproval === true,
      runsOn: typeof tool.execute === 'function' ? 'server' : 'client',
    })),
  }
}

async function route(req, body) {
  const url = new URL(req.url, 'http://127.0.0.1')
  if (req.method === 'POST' && url.pathname === '/api/chat') {
    return handleChat(
      new Request(url, { method: 'POST', headers: req.headers, body }),
    )
  }
  if (req.method === 'GET' && url.pathname === '/api/tools') return Response.json(manifest())
  if (req.method === 'GET' && url.pathname === '/api/interrupts') {
    return Response.json({
      interrupts: [
        {
          id: SHIPPING.id,
          responseSchema: draft07(SHIPPING.responseSchema),
          payloadSchema: draft07(SHIPPING.payloadSchema),
        },
      ],
    })
  }
  if (req.method === 'GET' && url.pathname === '/api/log') return Response.json({ log })
  return new Response('not found', { status: 404 })
}

const server = createServer(async (req, res) => {
  const chunks = []
  for await (const chunk of req) chunks.push(chunk)
  const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined
  try {
    const response = await route(req, req.method === 'GET' ? undefined : body)
    res.writeHead(response.status, Object.fromEntries(response.headers))
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk)
    }
    res.end()
  } catch (error) {
    res.writeHead(500, { 'content-type': 'text/plain' })
    res.end(String(error?.stack ?? error))
  }
})

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n')
})
