// Drives the REAL `ChatClient` of `@tanstack/ai-client` against our Python server.
//
//   node chatclient_scenarios.mjs <base url> [scenario ...]
//
// Prints ONE JSON document on stdout:
//   {"versions": {...}, "schemaSelfCheck": true, "tools": [<names>],
//    "scenarios": {<name>: <summary>}}
// Diagnostics go to stderr; the exit code is 0 unless the script itself broke (a scenario
// that misbehaves is reported in its summary, never by crashing the run).
//
// Each scenario gets a fresh `ChatClient` (its own threadId) whose tools are built with
// `toolDefinition(...)` from the raw JSON Schemas of `GET /api/tools` — the same schemas
// the server hashes, so the client hydrates our bindings as typed items.  Server tools get
// bare `.client()` stubs (TanStack's own e2e page does this); `get_local_time` and
// `get_location` get real client implementations.  A custom `fetchClient` records every
// request the client POSTs (headers and parsed body) and tees every response body, so the
// Python side can assert on the exact continuation bodies and validate every SSE stream.
//
// A summary holds:
//   phrase, error (script exception, if any), clientError (ChatClient.getError()),
//   publications   every interrupt-state publication (onInterruptStateChange), simplified
//   pauses         the public items seen at each settled pause, before resolving
//   observations   scenario-specific intermediate facts (e.g. requests before the last item)
//   requests       [{url, method, headers, body, status, contentType, stream, schemaIssues}]
//                  (schemaIssues: events of the stream that `@ag-ui/core`'s zod EventSchemas
//                  reject)
//   final          {interrupts, interruptErrors, resuming} after everything settled
//   messages       the client's UI messages, simplified
//   assistantText  text of every assistant message after the last user message, joined
//   clientToolRuns [{tool, toolCallId, input}] client implementations that ran

import { readFileSync } from 'node:fs'
import { ChatClient, fetchServerSentEvents } from '@tanstack/ai-client'
import { toolDefinition } from '@tanstack/ai'
import { EventSchemas } from '@ag-ui/core/schemas'

const SETTLE_TIMEOUT_MS = Number(process.env.CHATCLIENT_SETTLE_TIMEOUT_MS ?? 15000)
const QUIET_MS = 40

const LOCAL_TIME = { time: '09:41', timeZone: 'Europe/Paris' }
const LOCATION = { latitude: 48.8566, longitude: 2.3522, accuracy: 12, label: 'Paris, France' }

function installedVersion(name) {
  const url = new URL(`./node_modules/${name}/package.json`, import.meta.url)
  return JSON.parse(readFileSync(url, 'utf8')).version
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function errorText(error) {
  if (error === undefined || error === null) return null
  if (error instanceof Error) return `${error.name}: ${error.message}`
  try {
    return JSON.stringify(error)
  } catch {
    return String(error)
  }
}

// -- one scenario's harness --------------------------------------------------------------

class Harness {
  constructor(base, manifest, name) {
    this.base = base
    this.name = name
    this.requests = []
    this.pendingBodies = new Set()
    this.publications = []
    this.clientToolRuns = []
    this.pauses = []
    this.observations = {}
    const fetchClient = async (url, init = {}) => {
      const record = {
        url: String(url),
        method: init.method ?? 'GET',
        headers: { ...(init.headers ?? {}) },
        body: typeof init.body === 'string' ? JSON.parse(init.body) : null,
        status: null,
        contentType: null,
        stream: null,
      }
      this.requests.push(record)
      const response = await fetch(url, init)
      record.status = response.status
      record.contentType = response.headers.get('content-type')
      // Tee the body: the client reads the original, we keep the raw SSE text.
      const tee = response
        .clone()
        .text()
        .then((text) => {
          record.stream = text
          record.schemaIssues = schemaIssues(text)
        })
        .catch((error) => {
          record.stream = null
          record.streamError = errorText(error)
        })
        .finally(() => this.pendingBodies.delete(tee))
      this.pendingBodies.add(tee)
      return response
    }
    this.client = new ChatClient({
      threadId: `thread-${name}`,
      tools: buildTools(manifest, this),
      connection: fetchServerSentEvents(`${base}/api/chat`, { fetchClient }),
      onInterruptStateChange: (state, context) => {
        this.publications.push({
          source: context.source,
          resuming: state.resuming,
          interrupts: state.interrupts.map(simplifyItem),
          interruptErrors: state.interruptErrors.map(simplifyError),
        })
      },
    })
  }

  items() {
    return this.client.getInterrupts()
  }

  // Wait until the client is idle: no stream, no submission, every response body read,
  // and nothing new for QUIET_MS (a client tool may queue a continuation after a stream).
  async settle(label) {
    const deadline = Date.now() + SETTLE_TIMEOUT_MS
    let quietSince = null
    let seen = -1
    while (Date.now() < deadline) {
      if (this.pendingBodies.size > 0) await Promise.allSettled([...this.pendingBodies])
      const busy =
        this.client.getIsLoading() ||
        this.client.getInterruptState().resuming ||
        this.pendingBodies.size > 0
      if (busy || this.requests.length !== seen) {
        seen = this.requests.length
        quietSince = null
      } else if (quietSince === null) {
        quietSince = Date.now()
      } else if (Date.now() - quietSince >= QUIET_MS) {
        return
      }
      await sleep(5)
    }
    throw new Error(`${this.name}: the client did not settle (${label}) within ${SETTLE_TIMEOUT_MS} ms`)
  }

  // Send the phrase, wait for the pause, record the public items.
  async start(phrase) {
    this.phrase = phrase
    await this.client.sendMessage(phrase)
    await this.settle('after sendMessage')
    this.recordPause()
  }

  recordPause() {
    const state = this.client.getInterruptState()
    this.pauses.push({
      requestCount: this.requests.length,
      interrupts: state.interrupts.map(simplifyItem),
      interruptErrors: state.interruptErrors.map(simplifyError),
    })
  }

  summary(error) {
    const state = this.client.getInterruptState()
    const messages = this.client.getMessages()
    return {
      phrase: this.phrase ?? null,
      error: errorText(error),
      clientError: errorText(this.client.getError()),
      status: this.client.getStatus(),
      publications: this.publications,
      pauses: this.pauses,
      observations: this.observations,
      requests: this.requests,
      final: {
        interrupts: state.interrupts.map(simplifyItem),
        interruptErrors: state.interruptErrors.map(simplifyError),
        resuming: state.resuming,
      },
      messages: messages.map(simplifyMessage),
      assistantText: assistantTextAfterLastUser(messages),
      clientToolRuns: this.clientToolRuns,
    }
  }
}

function buildTools(manifest, harness) {
  return manifest.map((entry) => {
    const config = { name: entry.name, description: entry.description }
    // The manifest says null for "none"; TanStack wants the key absent (undefined).
    if (entry.inputSchema != null) config.inputSchema = entry.inputSchema
    if (entry.outputSchema != null) config.outputSchema = entry.outputSchema
    if (entry.needsApproval) config.needsApproval = true
    if (entry.approvalSchema != null) config.approvalSchema = entry.approvalSchema
    const definition = toolDefinition(config)
    const implementations = {
      get_local_time: LOCAL_TIME,
      get_location: LOCATION,
    }
    if (entry.runsOn === 'client' && entry.name in implementations) {
      return definition.client(async (input, options) => {
        harness.clientToolRuns.push({
          tool: entry.name,
          toolCallId: options?.toolCallId ?? null,
          input,
        })
        return implementations[entry.name]
      })
    }
    // A server tool (or a client tool we don't implement): a bare stub, so the
    // InterruptManager can hydrate its pause as a typed item.
    return definition.client()
  })
}

// Every event through `@ag-ui/core`'s own zod schemas (ag-ui-validate's schema check is
// shallow and knows nothing of interrupts; zod rejects e.g. an empty `interrupts` list).
function schemaIssues(text) {
  const issues = []
  text
    .split('\n\n')
    .filter((frame) => frame.trim() !== '')
    .forEach((frame, index) => {
      const lines = frame.split('\n').filter((line) => line.startsWith('data:'))
      if (lines.length === 0) return // a comment (a heartbeat): no event, as SSE reads it
      const data = lines
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n')
      let event
      try {
        event = JSON.parse(data)
      } catch (error) {
        issues.push({ index, type: null, issues: [`not JSON: ${errorText(error)}`] })
        return
      }
      const parsed = EventSchemas.safeParse(event)
      if (!parsed.success) {
        issues.push({
          index,
          type: event?.type ?? null,
          issues: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`),
        })
      }
    })
  return issues
}

function simplifyItem(item) {
  const out = {
    id: item.id,
    kind: item.kind,
    reason: item.reason,
    status: item.status,
    canResolve: item.canResolve,
    errors: (item.errors ?? []).map(simplifyError),
    hasResolve: typeof item.resolveInterrupt === 'function',
    hasCancel: typeof item.cancel === 'function',
    bindingKind: item.binding?.kind ?? null,
    interruptedRunId: item.interruptedRunId ?? null,
  }
  if (item.kind === 'tool-approval') {
    out.toolName = item.toolName
    out.toolCallId = item.toolCallId
    out.originalArgs = item.originalArgs
  }
  if (item.kind === 'generic') {
    out.definitionId = item.definitionId ?? item.binding?.definitionId ?? null
    out.key = item.key ?? item.binding?.key ?? null
  }
  return out
}

function simplifyError(error) {
  return {
    scope: error.scope,
    code: error.code,
    message: error.message,
    source: error.source,
    retryable: error.retryable,
    interruptId: error.interruptId,
    interruptIds: error.interruptIds,
    path: error.path,
  }
}

function simplifyMessage(message) {
  return {
    id: message.id,
    role: message.role,
    parts: message.parts.map((part) => {
      if (part.type === 'text') return { type: 'text', content: part.content }
      if (part.type === 'tool-call') {
        return {
          type: 'tool-call',
          id: part.id,
          name: part.name,
          state: part.state,
          arguments: part.arguments,
          input: part.input,
          approval: part.approval ?? null,
          output: part.output,
        }
      }
      if (part.type === 'tool-result') {
        return {
          type: 'tool-result',
          toolCallId: part.toolCallId,
          state: part.state,
          content: part.content,
          error: part.error,
        }
      }
      return { type: part.type }
    }),
  }
}

function assistantTextAfterLastUser(messages) {
  let last = -1
  messages.forEach((message, index) => {
    if (message.role === 'user') last = index
  })
  return messages
    .slice(last + 1)
    .filter((message) => message.role === 'assistant')
    .flatMap((message) => message.parts.filter((part) => part.type === 'text'))
    .map((part) => part.content)
    .join('\n')
}

function only(harness, kind) {
  const items = harness.items().filter((item) => item.kind === kind)
  if (items.length !== 1) {
    throw new Error(`${harness.name}: expected one ${kind} item, got ${items.length}`)
  }
  return items[0]
}

// -- scenarios -------------------------------------------------------------------------------

const EDITED_EMAIL = {
  to: 'ada@example.com',
  subject: 'Launch day',
  body: 'Hi Ada,\n\nLaunch day is Thursday.\n\nBest,\nThe ops desk',
}

const SCENARIOS = {
  // Approve through the item method.
  async transfer_approve(h) {
    await h.start('transfer 25 to Ada')
    only(h, 'tool-approval').resolveInterrupt(true)
    await h.settle('after approve')
  },

  // Bulk `false` is refused by the client (the reject branch needs a payload); then
  // reject with the reason the model reads.
  async transfer_reject(h) {
    await h.start('transfer 25 to Ada')
    h.client.resolveInterrupts(false)
    await h.settle('after bulk false')
    h.observations.afterBulkFalse = {
      requestCount: h.requests.length,
      interruptErrors: h.client.getInterruptState().interruptErrors.map(simplifyError),
      interrupts: h.items().map(simplifyItem),
    }
    only(h, 'tool-approval').resolveInterrupt(false, { payload: { reason: 'Wrong account' } })
    await h.settle('after reject')
  },

  async delete_cancel(h) {
    await h.start('delete project apollo')
    h.client.cancelInterrupts()
    await h.settle('after cancel')
  },

  // Bulk `false` on a payloadless approval.
  async delete_reject_bulk(h) {
    await h.start('delete project apollo')
    h.client.resolveInterrupts(false)
    await h.settle('after bulk false')
  },

  async email_edit(h) {
    await h.start('email ada@example.com about Launch')
    only(h, 'tool-approval').resolveInterrupt(true, { editedArgs: EDITED_EMAIL })
    await h.settle('after approve with edits')
  },

  // Edited arguments that break the raw JSON input schema (subject minLength 1): the client
  // cannot check raw JSON Schema, our server refuses the continuation with one RUN_ERROR.
  // Then the same item is answered correctly and the thread goes on.
  async email_refused_then_fixed(h) {
    await h.start('email ada@example.com about Launch')
    only(h, 'tool-approval').resolveInterrupt(true, {
      editedArgs: { ...EDITED_EMAIL, subject: '' },
    })
    await h.settle('after the refused continuation')
    h.recordPause()
    h.observations.afterRefusal = {
      requestCount: h.requests.length,
      clientError: errorText(h.client.getError()),
    }
    only(h, 'tool-approval').resolveInterrupt(true, { editedArgs: EDITED_EMAIL })
    await h.settle('after the corrected approval')
  },

  async invoices_bulk(h) {
    await h.start('pay invoices')
    h.client.resolveInterrupts(true)
    await h.settle('after bulk true')
  },

  // Item by item: nothing is sent until the third item is staged.
  async invoices_each(h) {
    await h.start('pay invoices')
    const items = h.items()
    const steps = []
    for (const item of items) {
      const requestsBefore = h.requests.length
      item.resolveInterrupt(true)
      await sleep(QUIET_MS)
      steps.push({
        requestsBefore,
        requestsAfter: h.requests.length,
        statuses: h.items().map((each) => each.status),
      })
    }
    h.observations.steps = steps
    await h.settle('after the third item')
  },

  // One synchronous transaction: approve the first and last invoices, reject the middle.
  async invoices_fn(h) {
    await h.start('pay invoices')
    h.client.resolveInterrupts((item) => {
      if (item.kind !== 'tool-approval') throw new Error(`unexpected ${item.kind}`)
      item.resolveInterrupt(item.originalArgs.invoice !== 'INV-1002')
      return undefined
    })
    await h.settle('after the transaction')
  },

  async ship_order(h) {
    await h.start('ship order 42')
    only(h, 'generic').resolveInterrupt({ speed: 'express', giftWrap: true })
    await h.settle('after the form')
  },

  // The bound approval is answered; the unbound workflow item is left alone.
  async deploy(h) {
    await h.start('deploy')
    only(h, 'unbound')
    only(h, 'tool-approval').resolveInterrupt(true)
    await h.settle('after approve')
  },

  async local_time(h) {
    await h.start('what time is it')
  },

  async location(h) {
    await h.start('share my location')
    only(h, 'tool-approval').resolveInterrupt(true)
    await h.settle('after approve and client execution')
  },
}

// -- main ---------------------------------------------------------------------------------------

async function main() {
  const [base, ...wanted] = process.argv.slice(2)
  if (!base) throw new Error('usage: node chatclient_scenarios.mjs <base url> [scenario ...]')
  const response = await fetch(`${base}/api/tools`)
  if (!response.ok) throw new Error(`GET /api/tools answered ${response.status}`)
  const manifest = (await response.json()).tools
  const names = wanted.length > 0 ? wanted : Object.keys(SCENARIOS)
  const scenarios = {}
  for (const name of names) {
    const run = SCENARIOS[name]
    if (!run) throw new Error(`unknown scenario ${name}`)
    const harness = new Harness(base, manifest, name)
    let failure
    try {
      await run(harness)
    } catch (error) {
      failure = error
      process.stderr.write(`${name}: ${error?.stack ?? error}\n`)
      try {
        await harness.settle('after a failure')
      } catch {
        // already reporting a failure
      }
    }
    scenarios[name] = harness.summary(failure)
    harness.client.dispose()
  }
  const versions = {}
  for (const name of ['@tanstack/ai', '@tanstack/ai-client', '@ag-ui/core', '@ag-ui/client', 'zod']) {
    versions[name] = installedVersion(name)
  }
  // The zod check must not be vacuous: it has to reject an interrupt outcome without items.
  const schemaSelfCheck = !EventSchemas.safeParse({
    type: 'RUN_FINISHED',
    threadId: 't',
    runId: 'r',
    outcome: { type: 'interrupt', interrupts: [] },
  }).success
  process.stdout.write(
    JSON.stringify({
      versions,
      schemaSelfCheck,
      tools: manifest.map((entry) => entry.name),
      scenarios,
    }) + '\n',
  )
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`)
  process.exit(2)
})
