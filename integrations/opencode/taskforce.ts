// taskforce admission for OpenCode's subagents: every `task` call asks a
// running `taskforce serve` for a permit before its child session starts and
// gives it back when the call ends, so no more subagents run at once than
// the pool's `maxParallel` allows. Load it from opencode.json:
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
// token, `acquire` in tool.execute.before (holder = the call's id, session =
// the calling session), `release` in tool.execute.after (which OpenCode also
// sends when the subagent failed), `bind` when a background call returns
// before its child is done, `idle` when a child session goes idle and `end`
// when a session is deleted. One connection per OpenCode process: when
// OpenCode exits, the server releases whatever it still held.
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"

type Json = Record<string, any>

interface Endpoint {
  host: string
  port: number
  token: string
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
        `taskforce: no server to ask for a subagent slot: cannot read ${file} ` +
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

export const TaskforcePlugin = async ({ directory }: { directory: string }) => {
  const connection = new Connection(directory)
  const waitMs = numberFrom("TASKFORCE_WAIT_MS", 540000)
  const tools = (process.env.TASKFORCE_TOOLS ?? "task")
    .split(",")
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t)
  // Holders this process acquired, by call id: whether background.
  const held = new Map<string, boolean>()
  // Child sessions whose idle releases a bound background permit.
  const boundChildren = new Set<string>()

  return {
    "tool.execute.before": async (input: Json, output: Json) => {
      if (!tools.includes(String(input.tool).toLowerCase())) return
      const holder = String(input.callID)
      const background = output?.args?.background === true
      let timer: ReturnType<typeof setTimeout> | undefined
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no subagent slot within ${waitMs} ms`)),
          waitMs,
        )
      })
      try {
        const answer = await Promise.race([
          connection.request({
            op: "acquire",
            session: String(input.sessionID),
            holder,
            kind: background ? "background" : "foreground",
            tool: String(input.tool),
          }),
          deadline,
        ])
        if (answer.permit != null) held.set(holder, background)
      } catch (e) {
        // Give up the wait (or the permit, if the answer raced the deadline).
        connection.request({ op: "release", holder, reason: "aborted" }).catch(() => {})
        throw new Error(
          `taskforce refused this subagent (${(e as Error).message}); ` +
            "do not retry it at once, go on with what you can do yourself",
        )
      } finally {
        clearTimeout(timer)
      }
    },

    "tool.execute.after": async (input: Json, output: Json) => {
      const holder = String(input.callID)
      if (!held.has(holder)) return
      held.delete(holder)
      const metadata = output?.metadata ?? {}
      const child = metadata.sessionId ?? metadata.jobId
      if (metadata.background === true && child) {
        // The call returned at launch; the child's idle ends the permit.
        boundChildren.add(String(child))
        await connection.request({ op: "bind", holder, child_session: String(child) }).catch(() => {})
        return
      }
      const failed = typeof output?.output === "string" && /state="(error|failed)"/.test(output.output)
      await connection
        .request({ op: "release", holder, reason: failed ? "error" : "completed" })
        .catch(() => {})
    },

    event: async ({ event }: { event: Json }) => {
      const properties = event?.properties ?? {}
      if (event?.type === "session.idle" && properties.sessionID) {
        const session = String(properties.sessionID)
        if (!boundChildren.delete(session)) return
        await connection.request({ op: "idle", session }).catch(() => {})
      } else if (event?.type === "session.deleted") {
        const session = properties.info?.id ?? properties.sessionID
        if (session) await connection.request({ op: "end", session: String(session) }).catch(() => {})
      }
    },
  }
}
