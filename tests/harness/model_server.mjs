#!/usr/bin/env node
// A scripted model server for tests of real agent CLIs, offline. It speaks
// Anthropic Messages (/v1/messages), OpenAI Chat Completions
// (/v1/chat/completions) and OpenAI Responses (/v1/responses), streaming
// and not, and answers from a script instead of a model.
//
//   node model_server.mjs --script SCRIPT.json --log EVENTS.jsonl
//                         [--port-file FILE] [--port N] [--dump FILE]
//
// The script:
//   {"rules": [{"name": "first", "when": "MARKER",
//               "steps": [STEP, STEP, ...]}, ...],
//    "default": STEP}
// A request's prompt is its latest user message that is not only tool
// results. The first rule whose `when` occurs in that prompt answers it, with
// the step numbered by how many model turns already follow the prompt in the
// request (the first request gets steps[0], the request that carries the
// results of steps[0]'s tool calls gets steps[1], ...; past the end, the
// last step again). A request that offers no tools (a title, a summary) or
// that no rule matches gets `default`, else the text "ok".
//
// A STEP is one model turn:
//   {"text": "final words"}                          plain text
//   {"tool": "Write", "input": {...}}                one tool call
//   {"tools": [{"tool": ..., "input": ...}, ...]}    calls in one turn
//   {"status": 400, "error": "message"}              an HTTP error instead
//   "delayMs": N                                     (any step) wait first
//   "usage": {"input_tokens": N, "output_tokens": N} (any step) reported
// In a tool call's input, "{cwd}" in a string stands for the working
// directory the CLI told the model about (Claude Code's "Primary working
// directory:", Codex's <cwd>, OpenCode's "Working directory:"), so a script
// can name absolute paths inside a worktree it does not know beforehand.
//
// Every request and answer is one JSON line in the log: {"t" (ms since the
// server started), "event": "request"|"response"|"unknown", "api", "rule",
// "step", "prompt" (its first 200 characters), "markers" (the `when` of every
// rule found anywhere in the request's messages), "tools" (the names of the
// tools the request offers), "results" (the tool results the request hands
// back, when it does: [{"text", "is_error"}]), "calls" (the tool calls
// answered)}. With
// --dump, every request body is appended to that file as well.
import http from 'node:http';
import fs from 'node:fs';

function parseArgs(argv) {
  const out = {};
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    out[key] = argv[i + 1];
  }
  return out;
}

const args = parseArgs(process.argv);
if (!args.script || !args.log) {
  process.stderr.write(
    'usage: model_server.mjs --script FILE --log FILE [--port-file FILE] [--port N]\n');
  process.exit(2);
}
const script = JSON.parse(fs.readFileSync(args.script, 'utf8'));
const rules = script.rules || [];
const started = Date.now();
let sequence = 0;

function log(entry) {
  entry.t = Date.now() - started;
  fs.appendFileSync(args.log, JSON.stringify(entry) + '\n');
}

// ---- reading requests: a common view of the conversation -------------------

/// The text of an Anthropic / Chat / Responses content value.
function textOf(content) {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (typeof p === 'string' ? p : p.text || '')).join('\n');
  if (typeof content === 'object' && content.text) return content.text;
  return '';
}

/// The conversation as [{role: 'user'|'assistant'|'tool', text}], one entry
/// per model turn for the assistant side.
function conversation(api, body) {
  const out = [];
  if (api === 'anthropic') {
    for (const m of body.messages || []) {
      if (m.role === 'assistant') {
        out.push({ role: 'assistant', text: textOf(m.content) });
      } else if (m.role !== 'user') {
        out.push({ role: 'context', text: textOf(m.content) });
      } else if (Array.isArray(m.content)
                 && m.content.some((b) => b.type === 'tool_result')) {
        out.push({ role: 'tool', text: '' });
      } else {
        out.push({ role: 'user', text: textOf(m.content) });
      }
    }
  } else if (api === 'chat') {
    for (const m of body.messages || []) {
      if (m.role === 'assistant') out.push({ role: 'assistant', text: textOf(m.content) });
      else if (m.role === 'tool') out.push({ role: 'tool', text: '' });
      else if (m.role === 'user') out.push({ role: 'user', text: textOf(m.content) });
    }
  } else {
    let input = body.input;
    if (typeof input === 'string') input = [{ type: 'message', role: 'user', content: input }];
    let inTurn = false;
    for (const item of input || []) {
      const type = item.type || (item.role ? 'message' : '');
      if (type === 'message' && item.role === 'user') {
        out.push({ role: 'user', text: textOf(item.content) });
        inTurn = false;
      } else if (type === 'message' && item.role === 'assistant'
                 || type.endsWith('_call') || type === 'reasoning') {
        if (!inTurn) out.push({ role: 'assistant', text: '' });
        out[out.length - 1].text += textOf(item.content);
        inTurn = true;
      } else if (type.endsWith('_call_output')) {
        out.push({ role: 'tool', text: '' });
        inTurn = false;
      }
    }
  }
  return out;
}

function toolNames(api, body) {
  const names = [];
  for (const t of body.tools || []) {
    if (api === 'chat') names.push(t.function ? t.function.name : t.name);
    else names.push(t.name || t.type);
  }
  return names;
}

/// The answering rule and step for a request.
function choose(api, body) {
  const turns = conversation(api, body);
  let at = -1;
  for (let i = turns.length - 1; i >= 0; --i)
    if (turns[i].role === 'user') { at = i; break; }
  const prompt = at >= 0 ? turns[at].text : '';
  let done = 0;
  for (let i = at + 1; i < turns.length; ++i)
    if (turns[i].role === 'assistant') ++done;
  const everything = turns.map((t) => t.text).join('\n')
    + '\n' + textOf(body.system) + '\n' + (body.instructions || '');
  const markers = rules.filter((r) => everything.includes(r.when)).map((r) => r.when);
  const offersTools = (body.tools || []).length > 0;
  for (const rule of rules) {
    if (!offersTools || !prompt.includes(rule.when)) continue;
    const steps = rule.steps || [{ text: 'ok' }];
    const step = steps[Math.min(done, steps.length - 1)];
    return { rule: rule.name || rule.when, index: done, step, prompt, markers };
  }
  return { rule: null, index: done, step: script.default || { text: 'ok' }, prompt, markers };
}

/// The working directory the request tells the model about.
function cwdOf(body) {
  const all = JSON.stringify(body);
  for (const re of [/Primary working directory: ([^\\"]+?)(?:\\n|")/,
                    /<cwd>([^<]+)<\/cwd>/, /Working directory: ([^\\"]+?)(?:\\n|")/]) {
    const m = all.match(re);
    if (m) return m[1].trim();
  }
  return '';
}

/// `value` with "{cwd}" replaced in every string.
function withCwd(value, cwd) {
  if (typeof value === 'string') return value.split('{cwd}').join(cwd);
  if (Array.isArray(value)) return value.map((v) => withCwd(v, cwd));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withCwd(v, cwd)]));
  return value;
}

/// The tool results the request's last turn hands back to the model, each
/// {"text": its first 300 characters, "is_error": bool}: what the harness
/// told the model about the calls of the step before (a hook's denial, a
/// failed subagent).
function toolResults(api, body) {
  const out = [];
  const add = (content, isError) =>
    out.push({ text: textOf(content).slice(0, 300), is_error: !!isError });
  if (api === 'anthropic') {
    const messages = body.messages || [];
    const last = messages[messages.length - 1];
    if (last && last.role === 'user' && Array.isArray(last.content))
      for (const b of last.content)
        if (b.type === 'tool_result') add(b.content, b.is_error);
  } else if (api === 'chat') {
    const messages = body.messages || [];
    for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; --i)
      add(messages[i].content, false);
    out.reverse();
  } else if (Array.isArray(body.input)) {
    for (let i = body.input.length - 1;
         i >= 0 && (body.input[i].type || '').endsWith('_call_output'); --i)
      add(body.input[i].output, false);
    out.reverse();
  }
  return out;
}

// ---- answering ---------------------------------------------------------------

function callsOf(step) {
  if (step.tools) return step.tools;
  if (step.tool) return [{ tool: step.tool, input: step.input || {} }];
  return [];
}

function usageOf(step) {
  return step.usage || { input_tokens: 100, output_tokens: 20 };
}

function nextId(prefix) {
  sequence += 1;
  return `${prefix}_${sequence}_${Math.random().toString(16).slice(2, 10)}`;
}

function sse(res, events, named) {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  for (const e of events) {
    if (named) res.write(`event: ${e.type}\n`);
    res.write(`data: ${JSON.stringify(e)}\n\n`);
  }
}

function anthropic(res, body, step, calls) {
  const usage = usageOf(step);
  const id = nextId('msg');
  const content = [];
  if (step.text != null) content.push({ type: 'text', text: step.text });
  for (const c of calls)
    content.push({ type: 'tool_use', id: nextId('toolu'), name: c.tool, input: c.input || {} });
  const stop = calls.length ? 'tool_use' : 'end_turn';
  const message = {
    id, type: 'message', role: 'assistant', model: body.model || 'scripted',
    content, stop_reason: stop, stop_sequence: null,
    usage: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens,
             cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(message));
    return content;
  }
  const events = [{ type: 'message_start',
                    message: { ...message, content: [], stop_reason: null,
                               usage: { ...message.usage, output_tokens: 1 } } }];
  content.forEach((block, index) => {
    if (block.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } });
    } else {
      events.push({ type: 'content_block_start', index,
                    content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      events.push({ type: 'content_block_delta', index,
                    delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    events.push({ type: 'content_block_stop', index });
  });
  events.push({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null },
                usage: { output_tokens: usage.output_tokens } });
  events.push({ type: 'message_stop' });
  sse(res, events, true);
  res.end();
  return content;
}

function chat(res, body, step, calls) {
  const usage = usageOf(step);
  const id = nextId('chatcmpl');
  const created = Math.floor(Date.now() / 1000);
  const toolCalls = calls.map((c) => ({
    id: nextId('call'), type: 'function',
    function: { name: c.tool, arguments: JSON.stringify(c.input || {}) } }));
  const finish = toolCalls.length ? 'tool_calls' : 'stop';
  const u = { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens,
              total_tokens: usage.input_tokens + usage.output_tokens };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id, object: 'chat.completion', created, model: body.model || 'scripted',
      choices: [{ index: 0, finish_reason: finish,
                  message: { role: 'assistant', content: step.text ?? null,
                             ...(toolCalls.length ? { tool_calls: toolCalls } : {}) } }],
      usage: u }));
    return toolCalls;
  }
  const chunk = (delta, finishReason = null, extra = {}) => ({
    id, object: 'chat.completion.chunk', created, model: body.model || 'scripted',
    choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra });
  const events = [chunk({ role: 'assistant', content: '' })];
  if (step.text != null) events.push(chunk({ content: step.text }));
  toolCalls.forEach((c, index) => {
    events.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function',
                                       function: { name: c.function.name, arguments: '' } }] }));
    events.push(chunk({ tool_calls: [{ index, function: { arguments: c.function.arguments } }] }));
  });
  events.push(chunk({}, finish));
  events.push({ id, object: 'chat.completion.chunk', created, model: body.model || 'scripted',
                choices: [], usage: u });
  sse(res, events, false);
  res.write('data: [DONE]\n\n');
  res.end();
  return toolCalls;
}

function responses(res, body, step, calls, tools) {
  const usage = usageOf(step);
  const id = nextId('resp');
  const output = [];
  if (step.text != null)
    output.push({ type: 'message', id: nextId('msg'), role: 'assistant', status: 'completed',
                  content: [{ type: 'output_text', text: step.text, annotations: [] }] });
  for (const c of calls) {
    // A tool the request declares as "custom" (free-form text) is answered
    // with a custom_tool_call; the others with a function_call.
    const declared = (body.tools || []).find((t) => t.name === c.tool);
    if (declared && declared.type === 'custom')
      output.push({ type: 'custom_tool_call', id: nextId('ctc'), call_id: nextId('call'),
                    name: c.tool, input: typeof c.input === 'string' ? c.input : JSON.stringify(c.input),
                    status: 'completed' });
    else
      output.push({ type: 'function_call', id: nextId('fc'), call_id: nextId('call'),
                    name: c.tool, arguments: JSON.stringify(c.input || {}), status: 'completed' });
  }
  const response = {
    id, object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'completed',
    model: body.model || 'scripted', output,
    usage: { input_tokens: usage.input_tokens, input_tokens_details: { cached_tokens: 0 },
             output_tokens: usage.output_tokens, output_tokens_details: { reasoning_tokens: 0 },
             total_tokens: usage.input_tokens + usage.output_tokens },
  };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(response));
    return output;
  }
  const events = [{ type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }];
  output.forEach((item, index) => {
    const open = item.type === 'message' ? { ...item, status: 'in_progress', content: [] } : item;
    events.push({ type: 'response.output_item.added', output_index: index, item: open });
    if (item.type === 'message')
      events.push({ type: 'response.output_text.delta', item_id: item.id, output_index: index,
                    content_index: 0, delta: item.content[0].text });
    events.push({ type: 'response.output_item.done', output_index: index, item });
  });
  events.push({ type: 'response.completed', response });
  sse(res, events, true);
  res.end();
  return output;
}

function answer(api, req, res, body) {
  const chosen = choose(api, body);
  const step = chosen.step;
  const cwd = cwdOf(body);
  const calls = callsOf(step).map((c) => ({ ...c, input: withCwd(c.input, cwd) }));
  const entry = { event: 'request', api, path: req.url, rule: chosen.rule, step: chosen.index,
                  prompt: chosen.prompt.slice(0, 200), markers: chosen.markers,
                  tools: toolNames(api, body), stream: !!body.stream, cwd };
  const results = toolResults(api, body);
  if (results.length) entry.results = results;
  log(entry);
  const reply = () => {
    if (step.status) {
      res.writeHead(step.status, { 'content-type': 'application/json' });
      const message = step.error || 'scripted error';
      res.end(JSON.stringify(api === 'anthropic'
        ? { type: 'error', error: { type: 'invalid_request_error', message } }
        : { error: { message, type: 'invalid_request_error', code: null } }));
      log({ event: 'response', api, rule: chosen.rule, step: chosen.index, status: step.status });
      return;
    }
    if (api === 'anthropic') anthropic(res, body, step, calls);
    else if (api === 'chat') chat(res, body, step, calls);
    else responses(res, body, step, calls);
    log({ event: 'response', api, rule: chosen.rule, step: chosen.index,
          calls: calls.map((c) => c.tool), text: step.text ?? null });
  };
  if (step.delayMs) setTimeout(reply, step.delayMs);
  else reply();
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    let body = {};
    try { body = raw ? JSON.parse(raw) : {}; } catch { body = {}; }
    const path = req.url.split('?')[0];
    if (args.dump) fs.appendFileSync(args.dump, raw + '\n');
    try {
      if (req.method === 'POST' && path.endsWith('/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: 100 }));
      } else if (req.method === 'POST' && path.endsWith('/messages')) {
        answer('anthropic', req, res, body);
      } else if (req.method === 'POST' && path.endsWith('/chat/completions')) {
        answer('chat', req, res, body);
      } else if (req.method === 'POST' && path.endsWith('/responses')) {
        answer('responses', req, res, body);
      } else if (req.method === 'GET' && path.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'scripted', object: 'model',
                                                          created: 0, owned_by: 'tests' }] }));
      } else {
        log({ event: 'unknown', method: req.method, path: req.url });
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'not here', type: 'not_found' } }));
      }
    } catch (e) {
      log({ event: 'crash', path: req.url, error: String(e && e.stack || e) });
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(e), type: 'server_error' } }));
    }
  });
});

server.listen(Number(args.port || 0), '127.0.0.1', () => {
  const port = server.address().port;
  if (args['port-file']) {
    fs.writeFileSync(args['port-file'] + '.tmp', String(port));
    fs.renameSync(args['port-file'] + '.tmp', args['port-file']);
  }
  process.stdout.write(`listening on 127.0.0.1:${port}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
