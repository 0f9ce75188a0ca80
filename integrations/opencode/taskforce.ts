// taskforce for OpenCode: admission of subagents and managed background work.
//
// Admission: every `task` call asks a running `taskforce serve` for a permit
// before its child session starts and gives it back when the child is done,
// so no more subagents run at once than the pool's `maxParallel` allows.
// Managed background work: the tools orch_prepare, orch_start, orch_status,
// orch_complete, orch_continue, orch_cancel and monitor_* put the server's
// control plane (its `bg.*` and `monitor.*` operations) in the model's hands.
// Load it from opencode.json:
//
//   {"plugin": ["file:///path/to/integrations/opencode/taskforce.ts"]}
//
// Where the server is: TASKFORCE_ENDPOINT (an endpoint file), else
// `.taskforce/endpoint.json` in the project (what `taskforce serve --listen`
// writes); TASKFORCE_ADDRESS and TASKFORCE_TOKEN override its fields.
// TASKFORCE_WAIT_MS (default 540000) bounds a wait for a permit: OpenCode
// waits on this hook with no deadline of its own, so the plugin keeps one and
// refuses the call when it passes. TASKFORCE_TOOLS (default "task") lists the
// tools that start subagents, separated by commas.
//
// The protocol it speaks is taskforce's JSON lines over TCP: `hello` with the
// token; `acquire` in tool.execute.before (holder = the call's id, session =
// the calling session); `release` in tool.execute.after (which OpenCode also
// sends when the subagent failed); for a background call, which returns as
// soon as its child is launched, `bind` of the permit to that child instead;
// `idle` for every session that goes idle (a child's idle names only the
// child, and may come before its call returns: the server remembers it);
// `release` when a call fails before it returns (its tool part turns to
// "error" and no tool.execute.after comes); `end` when a session is
// deleted. One connection per OpenCode process: when OpenCode exits, the
// server releases whatever it still held.
//
// OpenCode may initialize a plugin more than once in one process (and a user
// may list it in two configs): every instance then sees every hook and
// event. The calls, tokens and connection live once per process (on
// globalThis), so a call is admitted once, released once, and a child bound
// by one instance is released by whichever instance sees its idle.
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"

type Json = Record<string, any>

interface Endpoint {
  host: string
  port: number
  token: string
  file: string
}

function readEndpoint(directory: string): Endpoint {
  const file =
    process.env.TASKFORCE_ENDPOINT ?? path.join(directory, ".taskforce", "endpoint.json")
  let address = process.env.TASKFORCE_ADDRESS ?? ""
  let token = process.env.TASKFORCE_TOKEN ?? ""
  if (!address || !token) {
    let parsed: Json
    try {
      parsed = JSON.parse(fs.readFileSync(file, "utf8"))
    } catch (e) {
      throw new Error(
        `taskforce: no server to ask: cannot read ${file} ` +
          `(start one with \`taskforce serve --listen 0\`, or set TASKFORCE_ENDPOINT): ${e}`,
      )
    }
    address ||= parsed.address ?? ""
    token ||= parsed.token ?? ""
  }
  const colon = address.lastIndexOf(":")
  if (colon < 0 || !token)
    throw new Error(`taskforce: the endpoint ${file} names no address and token`)
  return {
    host: address.slice(0, colon).replace(/^\[|\]$/g, ""),
    port: Number(address.slice(colon + 1)),
    token,
    file,
  }
}

/// One JSON-lines connection: requests by id, answers as promises.
class Connection {
  private socket: net.Socket | null = null
  private ready: Promise<void> | null = null
  private buffer = ""
  private nextId = 1
  private pending = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void }>()

  constructor(private directory: string) {}

  private open(): Promise<void> {
    if (this.ready) return this.ready
    this.ready = new Promise<void>((resolve, reject) => {
      let endpoint: Endpoint
      try {
        endpoint = readEndpoint(this.directory)
      } catch (e) {
        this.ready = null
        reject(e as Error)
        return
      }
      const socket = net.createConnection({ host: endpoint.host, port: endpoint.port })
      socket.setEncoding("utf8")
      socket.on("data", (chunk: string) => this.receive(chunk))
      const fail = (e: Error) => {
        this.socket = null
        this.ready = null
        for (const [, p] of this.pending) p.reject(e)
        this.pending.clear()
        reject(e)
      }
      socket.on("error", (e) => fail(new Error(`taskforce: connection to the server failed: ${e.message}`)))
      socket.on("close", () => fail(new Error("taskforce: the server closed the connection")))
      socket.on("connect", () => {
        this.socket = socket
        this.send({ op: "hello", token: endpoint.token }).then(() => resolve(), fail)
      })
    })
    return this.ready
  }

  private receive(chunk: string) {
    this.buffer += chunk
    let nl: number
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl)
      this.buffer = this.buffer.slice(nl + 1)
      if (!line.trim()) continue
      let message: Json
      try {
        message = JSON.parse(line)
      } catch {
        continue
      }
      if (message.id == null) continue // an event
      const waiting = this.pending.get(message.id)
      if (!waiting) continue
      this.pending.delete(message.id)
      if (message.ok) waiting.resolve(message)
      else {
        const error = message.error ?? {}
        const e = new Error(`${error.code ?? "error"}: ${error.message ?? "refused"}`)
        ;(e as any).code = error.code
        waiting.reject(e)
      }
    }
  }

  private send(request: Json): Promise<Json> {
    const id = this.nextId++
    return new Promise<Json>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.socket!.write(JSON.stringify({ id, ...request }) + "\n")
    })
  }

  async request(request: Json): Promise<Json> {
    await this.open()
    return this.send(request)
  }
}

function numberFrom(name: string, fallback: number): number {
  const value = Number(process.env[name])
  return Number.isFinite(value) && value > 0 ? value : fallback
}

/// `promise`, or an error naming `what` once `ms` passed.
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/// Answers other than an acquire come at once; a server that does not
/// answer within this must not hold up OpenCode's hooks for ever.
const answerMs = 30000

/// Whether OpenCode runs with background subagents (the `background`
/// parameter of `task`): its flag's true values.
function backgroundSubagents(): boolean {
  const flag = (process.env.OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS ?? "").trim().toLowerCase()
  return ["true", "yes", "on", "1", "y"].includes(flag)
}

/// A `task` call this process admitted (or is admitting).
interface Call {
  /// Settles when the acquire is answered: every instance's before awaits it.
  admitted: Promise<void>
  /// A permit is held (a tool not counted gets none).
  permit: boolean
  background: boolean
  /// The dispatch token the call starts a managed task with.
  token?: string
  /// Settles once a managed call's child is linked (or cannot be).
  linked?: Promise<void>
  settleLink?: () => void
}

/// What one OpenCode process shares between the plugin's instances.
interface Shared {
  connections: Map<string, Connection>
  calls: Map<string, Call>
  /// Dispatch tokens handed to the model, by token: the task's id.
  tokens: Map<string, string>
  /// Dispatch tokens a call used already.
  used: Set<string>
  /// Child sessions linked to a managed task by this process: their
  /// writes are checked against the task's roots.
  managed: Set<string>
  /// Managed calls not linked yet, by calling session: a child of that
  /// session waits for them before it writes.
  linking: Map<string, Set<Promise<void>>>
  /// The parent of every child session seen created.
  parents: Map<string, string>
  /// Events already handled (every instance gets the same event).
  seen: WeakSet<object>
}

const shared: Shared = ((globalThis as any)[Symbol.for("taskforce.opencode")] ??= {
  connections: new Map(),
  calls: new Map(),
  tokens: new Map(),
  used: new Set(),
  managed: new Set(),
  linking: new Map(),
  parents: new Map(),
  seen: new WeakSet(),
})

/// OpenCode's tools that write files, and the files a call writes.
function writtenFiles(tool: string, args: Json): string[] {
  if (["write", "edit", "multiedit"].includes(tool)) return args?.filePath ? [String(args.filePath)] : []
  if (tool === "patch" || tool === "apply_patch") {
    const patch = String(args?.patchText ?? args?.patch ?? args?.input ?? "")
    return [...patch.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm)].map((m) => m[1].trim())
  }
  return []
}

/// The prefix of a `task` call's `command` that carries a dispatch token.
const dispatchPrefix = "taskforce:"

/// The exact `task` call that starts (or continues) a managed task.
function invocation(dispatch: Json, childSession?: string): Json {
  const call: Json = {
    description: String(dispatch.title ?? dispatch.task),
    prompt: String(dispatch.prompt),
    subagent_type: String(dispatch.agent),
    background: true,
    command: dispatchPrefix + dispatch.token,
  }
  if (childSession) call.task_id = childSession
  return call
}

/// What a tool says about a dispatch handed out (a continuation resumes the
/// task's child session).
function dispatchText(dispatch: Json, task?: Json): string {
  const childSession =
    dispatch.kind === "continuation" && task?.child_session ? String(task.child_session) : undefined
  shared.tokens.set(String(dispatch.token), String(dispatch.task))
  return (
    `Task ${dispatch.task} may start now. Start it with exactly this task call, unchanged ` +
    `(the token in "command" is good for one use and ${Math.round(
      Math.max(0, Number(dispatch.expires_ms ?? 0) - Date.now()) / 1000,
    )} seconds):\n` +
    JSON.stringify(invocation(dispatch, childSession))
  )
}

/// A task in a line: id, state, title, roots, child, reason.
function taskLine(task: Json): string {
  const parts = [`${task.id} ${task.state}`, JSON.stringify(task.title ?? "")]
  if (task.roots?.length) parts.push(`roots ${task.roots.join(",")}`)
  if (task.child_session) parts.push(`child ${task.child_session}`)
  if (task.reason) parts.push(`(${task.reason})`)
  return parts.join(" ")
}

function needBackground() {
  if (!backgroundSubagents())
    throw new Error(
      "unavailable: managed background tasks need OpenCode's background subagents; " +
        "start OpenCode with OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=1",
    )
}

/// A JSON Schema property (OpenCode takes plugin tool arguments as JSON
/// Schema when they are not zod schemas, so the plugin needs no package).
const text = (description: string) => ({ type: "string", description })
const texts = (description: string) => ({ type: "array", items: { type: "string" }, description })
const count = (description: string) => ({ type: "number", description })

export const TaskforcePlugin = async ({ directory, client }: { directory: string; client?: any }) => {
  let connection = shared.connections.get(directory)
  if (!connection) {
    connection = new Connection(directory)
    shared.connections.set(directory, connection)
  }
  const server = connection
  const ask = (request: Json) => within(server.request(request), answerMs, `no answer from taskforce to ${request.op}`)
  const waitMs = numberFrom("TASKFORCE_WAIT_MS", 540000)
  const subagentTools = (process.env.TASKFORCE_TOOLS ?? "task")
    .split(",")
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t)

  const abortChild = async (session: string) => {
    try {
      await client?.session?.abort({ path: { id: session } })
    } catch {
      // Best effort: the child may be gone already.
    }
  }

  /// The task the calling child session was started for.
  const taskOfChild = async (session: string): Promise<string> => {
    const answer = await ask({ op: "bg.status" })
    const mine = (answer.tasks ?? []).filter((t: Json) => t.child_session === session)
    const live = mine.find((t: Json) => t.state === "running") ?? mine[mine.length - 1]
    if (!live) throw new Error("name the task: this session is not the child of a managed task")
    return String(live.id)
  }

  /// Links a managed call's child to its task and tells the model.
  const linkChild = async (call: Call, child: any, output: Json) => {
    let note: string
    if (!child) {
      note = "taskforce: the managed task's child session is unknown; it was not linked"
    } else {
      try {
        const answer = await ask({ op: "bg.link", token: call.token, child_session: String(child) })
        if (answer.abort_child) {
          await abortChild(String(child))
          note = `taskforce: task ${answer.task?.id} was cancelled before its child started; the child is aborted`
        } else {
          shared.managed.add(String(child))
          note = `taskforce: task ${answer.task?.id} is running in child session ${child}`
        }
      } catch (e) {
        await abortChild(String(child))
        note = `taskforce: the child was aborted, its dispatch was refused (${(e as Error).message})`
      }
    }
    if (typeof output?.output === "string") output.output += `\n\n${note}`
  }

  const admit = async (input: Json, output: Json, call: Call) => {
    const holder = String(input.callID)
    const args = output?.args ?? {}
    // A managed task's dispatch: one use, in the background, and the child
    // is told how to report.
    const command = typeof args.command === "string" ? args.command : ""
    if (command.startsWith(dispatchPrefix)) {
      const token = command.slice(dispatchPrefix.length)
      if (shared.used.has(token))
        throw new Error(
          "taskforce: this dispatch was already used; ask orch_start or orch_continue for a new one",
        )
      shared.used.add(token)
      call.token = token
      const caller = String(input.sessionID)
      call.linked = new Promise<void>((settle) => (call.settleLink = settle))
      const pending = shared.linking.get(caller) ?? new Set<Promise<void>>()
      pending.add(call.linked)
      shared.linking.set(caller, pending)
      call.linked.then(() => {
        pending.delete(call.linked!)
        if (!pending.size) shared.linking.delete(caller)
      })
      if (backgroundSubagents()) args.background = true
      const task = shared.tokens.get(token)
      args.prompt =
        String(args.prompt ?? "") +
        `\n\nYou work on the managed task ${task ?? "this session was started for"}. ` +
        "When you are finished, call orch_complete exactly once" +
        (task ? ` with task "${task}"` : "") +
        ', status "done", your result and every file you changed; if you cannot finish, ' +
        'call it with status "blocked" and say why.'
    }
    call.background = args.background === true
    try {
      const answer = await within(
        server.request({
          op: "acquire",
          session: String(input.sessionID),
          holder,
          kind: call.background ? "background" : "foreground",
          tool: String(input.tool),
        }),
        waitMs,
        "no subagent slot",
      )
      call.permit = answer.permit != null
    } catch (e) {
      // Give up the wait (or the permit, if the answer raced the deadline).
      server.request({ op: "release", holder, reason: "aborted" }).catch(() => {})
      if (call.token) shared.used.delete(call.token)
      call.settleLink?.()
      throw new Error(
        `taskforce refused this subagent (${(e as Error).message}); ` +
          "do not retry it at once, go on with what you can do yourself",
      )
    }
  }

  return {
    "tool.execute.before": async (input: Json, output: Json) => {
      const session = String(input.sessionID)
      const parent = shared.parents.get(session)
      const linking = parent ? shared.linking.get(parent) : undefined
      if (linking?.size && writtenFiles(String(input.tool), output?.args).length) {
        // This child may be the one a managed call is about to link: its
        // writes wait for that (the call returns within milliseconds).
        await within(Promise.all([...linking]), answerMs, "the managed task was not linked").catch(() => {})
      }
      if (shared.managed.has(session)) {
        // A managed task's child writes only inside its task's roots, and
        // only while its task runs (the server judges where a path lies).
        for (const file of writtenFiles(String(input.tool), output?.args)) {
          const verdict = await ask({ op: "bg.may_write", child_session: session, path: file })
          if (!verdict.allowed)
            throw new Error(`taskforce: you may not write ${file}: ${verdict.reason}`)
        }
      }
      if (!subagentTools.includes(String(input.tool).toLowerCase())) return
      const holder = String(input.callID)
      const known = shared.calls.get(holder)
      if (known) {
        // Another instance of this plugin admits this call already.
        await known.admitted
        return
      }
      const call: Call = { admitted: Promise.resolve(), permit: false, background: false }
      call.admitted = admit(input, output, call)
      shared.calls.set(holder, call)
      try {
        await call.admitted
      } catch (e) {
        shared.calls.delete(holder)
        throw e
      }
    },

    "tool.execute.after": async (input: Json, output: Json) => {
      const holder = String(input.callID)
      const call = shared.calls.get(holder)
      if (!call) return
      // Whichever instance comes first ends the call; the others find none.
      shared.calls.delete(holder)
      const metadata = output?.metadata ?? {}
      const child = metadata.jobId ?? metadata.sessionId
      const launched = metadata.background === true && child
      if (call.token) {
        try {
          await linkChild(call, child, output)
        } finally {
          call.settleLink?.()
        }
      }
      if (!call.permit) return
      if (launched) {
        // The call returned at launch; the child's idle ends the permit.
        await ask({ op: "bind", holder, child_session: String(child) }).catch(() => {})
        return
      }
      const failed = typeof output?.output === "string" && /state="(error|failed)"/.test(output.output)
      await ask({ op: "release", holder, reason: failed ? "error" : "completed" }).catch(() => {})
    },

    event: async ({ event }: { event: Json }) => {
      if (!event || typeof event !== "object" || shared.seen.has(event)) return
      shared.seen.add(event)
      const properties = event.properties ?? {}
      if (event.type === "session.created" && properties.info?.parentID) {
        shared.parents.set(String(properties.info.id), String(properties.info.parentID))
      } else if (event.type === "message.part.updated") {
        // A task call that fails before it returns (an unknown agent, a
        // call aborted while it waits) gets no tool.execute.after: its tool
        // part's error ends it here.
        const part = properties.part ?? {}
        if (part.type !== "tool" || part.state?.status !== "error") return
        const holder = String(part.callID)
        const call = shared.calls.get(holder)
        if (!call) return
        shared.calls.delete(holder)
        call.settleLink?.()
        await ask({ op: "release", holder, reason: "error" }).catch(() => {})
      } else if (event.type === "session.idle" && properties.sessionID) {
        // Every idle: the server releases the background permits bound to
        // that session, and remembers it for a bind still to come.
        await ask({ op: "idle", session: String(properties.sessionID) }).catch(() => {})
      } else if (event.type === "session.deleted") {
        const session = properties.info?.id ?? properties.sessionID
        if (session) await ask({ op: "end", session: String(session) }).catch(() => {})
      }
    },

    tool: {
      orch_prepare: {
        description:
          "Prepare a managed background task through taskforce: a contract (title, the agent to run " +
          "it, its complete prompt, the repository folders it may write, the tasks it depends on, " +
          "and the shell commands that must pass before it counts as done). taskforce reserves its " +
          "folders and answers with the exact task call that starts it, or queues it when a slot " +
          "or a folder is taken (then use orch_start later). Pass [] for no dependencies or checks.",
        args: {
          title: text("a short title"),
          agent: text("the subagent to run it (subagent_type), e.g. general"),
          prompt: text("the complete instructions for the subagent"),
          roots: texts("repository folders or files it may write, e.g. [\"src/auth\"]"),
          deps: texts("ids of tasks that must be done first, [] for none"),
          validations: texts("shell commands that must pass before it is done, [] for none"),
        },
        async execute(args: Json, context: Json) {
          needBackground()
          const answer = await ask({
            op: "bg.prepare",
            title: String(args.title ?? ""),
            agent: String(args.agent ?? ""),
            prompt: String(args.prompt ?? ""),
            roots: args.roots ?? [],
            deps: args.deps ?? [],
            validations: args.validations ?? [],
            session: String(context.sessionID),
          })
          if (answer.dispatch) return dispatchText(answer.dispatch, answer.task)
          return `Task ${answer.task.id} is queued (${answer.task.reason ?? "no slot or folder free yet"}); call orch_start when work has finished.`
        },
      },

      orch_start: {
        description:
          'Start queued managed work: the oldest eligible task, or the one named ("" for any). ' +
          "Answers the exact task call that starts it, or why nothing can start yet.",
        args: { task: text('a task id, or "" for the oldest eligible') },
        async execute(args: Json) {
          needBackground()
          const request: Json = { op: "bg.start" }
          if (args.task) request.task = String(args.task)
          const answer = await ask(request)
          if (answer.dispatch) return dispatchText(answer.dispatch, answer.task)
          return `Nothing started: ${answer.reason || "nothing is eligible"}`
        },
      },

      orch_status: {
        description:
          'Show managed tasks (all, or the one named; "" for all): state, folders, child session, ' +
          "and why a task waits or failed.",
        args: { task: text('a task id, or "" for all') },
        async execute(args: Json) {
          const request: Json = { op: "bg.status" }
          if (args.task) request.task = String(args.task)
          const answer = await ask(request)
          const tasks: Json[] = answer.tasks ?? []
          if (!tasks.length) return "No managed tasks."
          return tasks.map(taskLine).join("\n")
        },
      },

      orch_complete: {
        description:
          "Report the outcome of the managed task this session works on, exactly once: status " +
          '"done" with the result and every file you changed (then its checks run; if they fail, ' +
          'fix and report again), or "blocked" with why you cannot go on.',
        args: {
          task: text('the task id you were given, or "" for the task of this session'),
          status: { type: "string", enum: ["done", "blocked"], description: "done or blocked" },
          result: text("what you did, or why you are blocked"),
          files: texts("every file you changed, relative to the repository"),
        },
        async execute(args: Json, context: Json) {
          const task = args.task ? String(args.task) : await taskOfChild(String(context.sessionID))
          const answer = await ask({
            op: "bg.complete",
            task,
            status: String(args.status ?? ""),
            result: String(args.result ?? ""),
            files: args.files ?? [],
          })
          if (answer.accepted) return `Task ${task} is ${answer.task?.state}.`
          const checks = (answer.validations ?? [])
            .filter((v: Json) => v.status !== "success")
            .map((v: Json) => `\`${v.command}\` ${v.status} (exit ${v.exit_code}):\n${v.output ?? ""}`)
          return [`Not accepted: ${answer.reason}`, ...checks, "Fix it and call orch_complete again."].join("\n")
        },
      },

      orch_continue: {
        description:
          "Continue a blocked, interrupted or failed managed task in its child session with more " +
          "instructions. Answers the exact task call that continues it.",
        args: { task: text("the task id"), text: text("what the child should do now") },
        async execute(args: Json) {
          needBackground()
          const answer = await ask({ op: "bg.continue", task: String(args.task ?? ""), text: String(args.text ?? "") })
          if (!answer.dispatch)
            return `Task ${answer.task?.id} is queued to continue (${answer.task?.reason ?? "no slot yet"}); call orch_start later.`
          return dispatchText(answer.dispatch, answer.task)
        },
      },

      orch_cancel: {
        description: "Cancel a managed task; its running child session is aborted.",
        args: { task: text("the task id") },
        async execute(args: Json) {
          const answer = await ask({ op: "bg.cancel", task: String(args.task ?? "") })
          const child = answer.task?.child_session
          if (child && (answer.abort_child || answer.task?.state === "cancelled")) await abortChild(String(child))
          return answer.message || `Task ${answer.task?.id} is ${answer.task?.state}.`
        },
      },

      monitor_run: {
        description:
          "Run a shell command in the background under taskforce (its whole process group is " +
          'killed on a timeout), e.g. a build or a server. wake_pattern ("" for none) is a regular ' +
          "expression monitor_wait wakes on; timeout_ms 0 for the server's default.",
        args: {
          command: text("the shell command"),
          cwd: text('a folder inside the repository, "" for its top'),
          wake_pattern: text('a regular expression in its output to wait for, "" for none'),
          timeout_ms: count("kill it after this long; 0 for the default"),
        },
        async execute(args: Json, context: Json) {
          const request: Json = { op: "monitor.run", command: String(args.command ?? ""), session: String(context.sessionID) }
          if (args.cwd) request.cwd = String(args.cwd)
          if (args.wake_pattern) request.wake_pattern = String(args.wake_pattern)
          if (Number(args.timeout_ms) > 0) request.timeout_ms = Number(args.timeout_ms)
          const answer = await ask(request)
          return JSON.stringify(answer.monitor)
        },
      },

      monitor_status: {
        description: 'The state of a monitor, or of all ("" for all).',
        args: { monitor: text('a monitor id, or "" for all') },
        async execute(args: Json) {
          const request: Json = { op: "monitor.status" }
          if (args.monitor) request.monitor = String(args.monitor)
          const answer = await ask(request)
          return JSON.stringify(answer.monitor ?? answer.monitors)
        },
      },

      monitor_read: {
        description: "A monitor's output from an offset (0 for the start).",
        args: { monitor: text("the monitor id"), offset: count("where to read from, 0 for the start") },
        async execute(args: Json) {
          const answer = await ask({ op: "monitor.read", monitor: String(args.monitor ?? ""), offset: Number(args.offset ?? 0) })
          return `${answer.output}\n[next offset ${answer.next_offset}${answer.eof ? ", end" : ""}]`
        },
      },

      monitor_wait: {
        description: "Wait until a monitor exits or its wake pattern shows, at most timeout_ms (0: the server's default).",
        args: { monitor: text("the monitor id"), timeout_ms: count("the longest wait, 0 for the default") },
        async execute(args: Json) {
          const request: Json = { op: "monitor.wait", monitor: String(args.monitor ?? "") }
          if (Number(args.timeout_ms) > 0) request.timeout_ms = Number(args.timeout_ms)
          const answer = await within(server.request(request), waitMs, "no answer from taskforce to monitor.wait")
          return JSON.stringify({ reason: answer.reason, monitor: answer.monitor })
        },
      },

      monitor_kill: {
        description: "Kill a monitor's whole process group.",
        args: { monitor: text("the monitor id") },
        async execute(args: Json) {
          const answer = await ask({ op: "monitor.kill", monitor: String(args.monitor ?? "") })
          return JSON.stringify(answer.monitor)
        },
      },
    },
  }
}
