// Drives a running `agentcompile serve` with the official OpenAI client (tests/e2e/serve.sh starts
// it): node serve_client.cjs BASE_URL SERVER_PID AGENTCOMPILE MODEL_DIR TMP
// Results are compared with `agentcompile generate` on the same model; the last check sends the
// server SIGTERM while a stream runs (serve.sh then checks the exit code).
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const OpenAI = require('openai');

const [base, pidText, bin, modelDir, tmp] = process.argv.slice(2);
const pid = Number(pidText);
const KEY = 'sekret';
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 30000 });
const MODEL = 'tiny';

// `agentcompile generate --json` for a chat conversation or a text prompt.
function generate({ messages, prompt, maxTokens, temperature = 0, seed = 0 }) {
  const args = ['generate', modelDir, '--backend', 'cpu', '--json', '--max-tokens', String(maxTokens),
                '--temperature', String(temperature), '--seed', String(seed)];
  if (messages) {
    const file = path.join(tmp, `messages-${Math.random()}.json`);
    fs.writeFileSync(file, JSON.stringify(messages));
    args.push('--chat', '--messages', file);
  } else {
    args.push('--prompt', prompt);
  }
  return JSON.parse(execFileSync(bin, args, { encoding: 'utf8' }));
}

async function raw(method, route, { body, headers = {} } = {}) {
  const r = await fetch(base + route, { method, body, headers: { authorization: `Bearer ${KEY}`, ...headers } });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, headers: r.headers, text, json };
}

function checkErrorShape(json, what) {
  assert.ok(json && json.error, `${what}: no error object`);
  for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in json.error, `${what}: error.${k} missing`);
  assert.equal(typeof json.error.message, 'string');
}

// The status and error body of a request the client sends; fails when it succeeds.
async function clientError(promise) {
  try {
    await promise;
  } catch (e) {
    if (e instanceof OpenAI.APIError) return e;
    throw e;
  }
  assert.fail('the request succeeded');
}

async function metrics() {
  const r = await raw('GET', '/metrics', { headers: { authorization: '' } });
  assert.equal(r.status, 200);
  const values = {};
  for (const line of r.text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    values[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return values;
}
const finished = (m) => ['stop', 'length', 'cancelled', 'error']
  .reduce((s, r) => s + m[`agentcompile_requests_total{finish_reason="${r}"}`], 0);

async function streamText(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.choices.length) {
      text += chunk.choices[0].delta.content ?? '';
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, finish, usage, chunks };
}

async function main() {
  const t0 = Date.now();
  const user = (content) => [{ role: 'user', content }];

  // /health, /v1/models
  assert.equal((await raw('GET', '/health', { headers: { authorization: '' } })).status, 200);
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [MODEL]);

  // Chat, whole: the reply `generate --chat` gives, with usage.
  const before = await metrics();
  const conv = user('Name three colours.');
  const ref = generate({ messages: conv, maxTokens: 24 });
  const whole = await client.chat.completions.create({ model: MODEL, messages: conv, max_tokens: 24, temperature: 0 });
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.equal(whole.choices[0].message.content, ref.text);
  assert.equal(whole.choices[0].finish_reason, ref.finish_reason);
  assert.equal(whole.usage.prompt_tokens, ref.prompt_tokens.length);
  assert.equal(whole.usage.completion_tokens, ref.tokens.length);
  assert.equal(whole.usage.total_tokens, ref.prompt_tokens.length + ref.tokens.length);

  // /metrics moved by that request.
  const after = await metrics();
  assert.equal(finished(after) - finished(before), 1);
  assert.equal(after.agentcompile_prompt_tokens_total - before.agentcompile_prompt_tokens_total, whole.usage.prompt_tokens);
  assert.equal(after.agentcompile_generation_tokens_total - before.agentcompile_generation_tokens_total,
               whole.usage.completion_tokens);
  assert.equal(after.agentcompile_time_to_first_token_seconds_count - before.agentcompile_time_to_first_token_seconds_count, 1);
  assert.ok('agentcompile_queue_depth' in after && 'agentcompile_running_requests' in after);

  // Chat, streamed: the same text; include_usage gives a last chunk with usage and no choices.
  const streamed = await streamText({ model: MODEL, messages: conv, max_tokens: 24, temperature: 0,
                                      stream_options: { include_usage: true } });
  assert.equal(streamed.text, ref.text);
  assert.equal(streamed.finish, ref.finish_reason);
  for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) assert.equal(streamed.usage[k], whole.usage[k]);
  // The second identical conversation found all of its prompt but the last token in a slot's cache.
  assert.equal(whole.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(streamed.usage.prompt_tokens_details.cached_tokens, whole.usage.prompt_tokens - 1);
  const noUsage = await streamText({ model: MODEL, messages: conv, max_tokens: 5, temperature: 0 });
  assert.equal(noUsage.usage, null);

  // /tokenize and /detokenize agree with the prompt the chat request used.
  const tk = await raw('POST', '/tokenize', { body: JSON.stringify({ messages: conv }) });
  assert.equal(tk.status, 200);
  assert.deepEqual(tk.json.tokens, ref.prompt_tokens);
  const dt = await raw('POST', '/detokenize', { body: JSON.stringify({ tokens: ref.tokens }) });
  assert.equal(dt.status, 200);
  assert.ok(dt.json.prompt.startsWith(ref.text));

  // Completions, whole and streamed: `generate --prompt`.
  const cref = generate({ prompt: 'The capital of France is', maxTokens: 20 });
  const comp = await client.completions.create({ model: MODEL, prompt: 'The capital of France is', max_tokens: 20, temperature: 0 });
  assert.equal(comp.object, 'text_completion');
  assert.equal(comp.choices[0].text, cref.text);
  assert.equal(comp.usage.completion_tokens, cref.tokens.length);
  const cstream = await client.completions.create({ model: MODEL, prompt: 'The capital of France is', max_tokens: 20,
                                                    temperature: 0, stream: true, stream_options: { include_usage: true } });
  let ctext = '', cusage = null;
  for await (const chunk of cstream) {
    if (chunk.choices.length) ctext += chunk.choices[0].text;
    if (chunk.usage) cusage = chunk.usage;
  }
  assert.equal(ctext, cref.text);
  assert.equal(cusage.completion_tokens, cref.tokens.length);

  // Log-probabilities. Chat, greedy: one entry per generated token, the chosen token the most
  // likely of its alternatives; the tokens' bytes spell the reply; streamed entries are the same.
  const lpAsk = { model: MODEL, messages: conv, max_tokens: 24, temperature: 0, logprobs: true, top_logprobs: 3 };
  const lpWhole = await client.chat.completions.create(lpAsk);
  assert.equal(lpWhole.choices[0].message.content, ref.text, 'asking for logprobs changed the reply');
  const entries = lpWhole.choices[0].logprobs.content;
  assert.equal(entries.length, lpWhole.usage.completion_tokens);
  for (const e of entries) {
    assert.equal(e.top_logprobs.length, 3);
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs[0].token, e.token);
    assert.ok(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6);
    for (let k = 1; k < 3; k++) assert.ok(e.top_logprobs[k - 1].logprob >= e.top_logprobs[k].logprob);
    assert.ok(e.top_logprobs.reduce((sum, t) => sum + Math.exp(t.logprob), 0) <= 1 + 1e-5);
  }
  const spelled = Buffer.from(entries.flatMap((e) => e.bytes)).toString('utf8');
  assert.ok(spelled.startsWith(ref.text), `the tokens spell ${JSON.stringify(spelled)}`);
  const lpStream = await client.chat.completions.create({ ...lpAsk, stream: true });
  const streamedEntries = [];
  for await (const chunk of lpStream) streamedEntries.push(...(chunk.choices[0]?.logprobs?.content ?? []));
  assert.deepEqual(streamedEntries.map((e) => [e.token, e.logprob]), entries.map((e) => [e.token, e.logprob]));
  assert.equal(whole.choices[0].logprobs, null, 'logprobs sent unasked');
  // Completions: the legacy shape, each map holding the alternatives and the chosen token.
  const lpComp = await client.completions.create({ model: MODEL, prompt: 'The capital of France is', max_tokens: 20,
                                                   temperature: 0, logprobs: 2 });
  assert.equal(lpComp.choices[0].text, cref.text);
  const clp = lpComp.choices[0].logprobs;
  assert.equal(clp.tokens.length, lpComp.usage.completion_tokens);
  assert.equal(clp.token_logprobs.length, clp.tokens.length);
  assert.equal(clp.text_offset[0], 0);
  clp.tokens.forEach((t, i) => {
    assert.ok(Object.keys(clp.top_logprobs[i]).length <= 3 && t in clp.top_logprobs[i]);
    assert.ok(Math.max(...Object.values(clp.top_logprobs[i])) <= clp.token_logprobs[i] + 1e-6, 'greedy took a less likely token');
    if (i > 0) assert.ok(clp.text_offset[i] >= clp.text_offset[i - 1]);
  });
  const tooMany = await clientError(client.chat.completions.create({ ...lpAsk, top_logprobs: 21 }));
  assert.equal(tooMany.status, 400);

  // Stop strings, on a sampled reply (varied text): the text up to the stop string, never the stop
  // string, in no chunk; the streamed pieces join into the same text (no character split).
  const story = { model: MODEL, messages: user('Tell a story.'), max_tokens: 60, temperature: 1, seed: 99 };
  const longRef = generate({ messages: story.messages, maxTokens: 60, temperature: 1, seed: 99 });
  const chars = Array.from(longRef.text);
  assert.ok(chars.length >= 16, `reference text too short: ${JSON.stringify(longRef.text)}`);
  const stop = chars.slice(12, 15).join('');
  const expected = longRef.text.slice(0, longRef.text.indexOf(stop));
  const stopped = await client.chat.completions.create({ ...story, stop: [stop, 'NEVER-APPEARS'] });
  assert.equal(stopped.choices[0].message.content, expected);
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  assert.ok(stopped.usage.completion_tokens < longRef.tokens.length);
  const sstream = await client.chat.completions.create({ ...story, stop, stream: true });
  let stext = '', sfinish = null;
  for await (const chunk of sstream) {
    const piece = chunk.choices[0]?.delta?.content ?? '';
    assert.ok(!piece.includes(stop), 'a chunk holds the stop string');
    stext += piece;
    sfinish = chunk.choices[0]?.finish_reason ?? sfinish;
  }
  assert.equal(stext, expected);
  assert.equal(sfinish, 'stop');

  // Seeded sampling reproduces, and is what `generate --seed` samples.
  const seeded = { model: MODEL, messages: user('Pick a number.'), max_tokens: 16, temperature: 0.9, seed: 1234 };
  const s1 = await client.chat.completions.create(seeded);
  const s2 = await client.chat.completions.create(seeded);
  assert.equal(s1.choices[0].message.content, s2.choices[0].message.content);
  assert.equal(s1.choices[0].message.content,
               generate({ messages: seeded.messages, maxTokens: 16, temperature: 0.9, seed: 1234 }).text);

  // Concurrent requests (more than the two slots; two wait in the queue) equal sequential ones.
  const asks = [0, 1, 2, 3].map((i) => ({ model: MODEL, messages: user(`Question number ${i}?`), max_tokens: 12 + i,
                                          temperature: i % 2 ? 0.8 : 0, seed: 77 + i }));
  const sequential = [];
  for (const a of asks) sequential.push((await client.chat.completions.create(a)).choices[0].message.content);
  const together = await Promise.all(asks.map((a) => client.chat.completions.create(a)));
  assert.deepEqual(together.map((r) => r.choices[0].message.content), sequential);

  // Errors: status and the OpenAI shape.
  let e = await clientError(client.chat.completions.create({ model: MODEL, messages: user('x'), max_tokens: 'many' }));
  assert.equal(e.status, 400);
  assert.match(e.message, /max_tokens/);
  e = await clientError(client.chat.completions.create({ model: MODEL, messages: [{ role: 'wizard', content: 'x' }] }));
  assert.equal(e.status, 400);
  assert.match(e.message, /role/);
  e = await clientError(client.chat.completions.create({ model: MODEL }));
  assert.equal(e.status, 400);
  assert.match(e.message, /messages/);
  e = await clientError(client.chat.completions.create({ model: MODEL, messages: user('x'), max_tokens: -3 }));
  assert.equal(e.status, 400);
  e = await clientError(client.chat.completions.create({ model: MODEL, messages: user('x'), max_tokens: 100000 }));
  assert.equal(e.status, 400);
  assert.match(e.message, /maximum context length is 512 tokens/);
  e = await clientError(client.completions.create({ model: MODEL, prompt: 'word '.repeat(400), max_tokens: 200 }));
  assert.equal(e.status, 400);
  assert.match(e.message, /the request needs \d+ \(\d+ in the prompt, 200 for the completion\)/);
  e = await clientError(client.chat.completions.create({ model: MODEL, messages: user('x'), n: 2 }));
  assert.equal(e.status, 400);
  e = await clientError(client.chat.completions.create({ model: 'no-such-model', messages: user('x') }));
  assert.equal(e.status, 404);
  e = await clientError(new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 }).models.list());
  assert.equal(e.status, 401);
  assert.equal(e.error?.type ?? e.type, 'authentication_error');
  let r = await raw('POST', '/v1/chat/completions', { body: '{"messages": [' });
  assert.equal(r.status, 400);
  checkErrorShape(r.json, 'malformed JSON');
  r = await raw('POST', '/v1/chat/completions', { body: '{"messages": ' + '['.repeat(5000) });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /nested deeper/);
  r = await raw('GET', '/v1/no-such-route');
  assert.equal(r.status, 404);
  checkErrorShape(r.json, '404');
  // 413: the head announces more than 16 MiB; the answer comes before any of the body is sent.
  const head413 = await new Promise((resolve, reject) => {
    const u = new URL(base);
    const s = net.connect(Number(u.port), u.hostname, () => s.write(
      `POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Length: ${16 * 1024 * 1024 + 1}\r\n\r\n`));
    let got = '';
    s.on('data', (d) => { got += d; });
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
  assert.match(head413, /^HTTP\/1\.1 413 /);
  checkErrorShape(JSON.parse(head413.slice(head413.indexOf('\r\n\r\n') + 4)), '413');

  // Queue full: two running, two waiting, the fifth gets 503 with Retry-After. The streams are
  // then dropped mid-way: each disconnect cancels its request and frees its slot.
  const mBefore = await metrics();
  const aborts = [];
  const long = (i) => {
    const ac = new AbortController();
    aborts.push(ac);
    return client.chat.completions.create({ model: MODEL, messages: user(`Go on forever ${i}.`), max_tokens: 480,
                                            temperature: 0, stream: true }, { signal: ac.signal });
  };
  const streams = [];
  for (let i = 0; i < 4; i++) streams.push(await long(i));  // each resolves once its request is accepted
  r = await raw('POST', '/v1/chat/completions', { body: JSON.stringify({ model: MODEL, messages: user('one more'), max_tokens: 4 }) });
  assert.equal(r.status, 503);
  assert.ok(r.headers.get('retry-after'));
  checkErrorShape(r.json, '503');
  const it = streams[0][Symbol.asyncIterator]();
  await it.next();  // a chunk arrived: then the client leaves
  for (const ac of aborts) ac.abort();
  let m = await metrics();
  for (let i = 0; i < 100 && (m.agentcompile_running_requests > 0 || m.agentcompile_queue_depth > 0); i++) {
    await new Promise((res) => setTimeout(res, 50));
    m = await metrics();
  }
  assert.equal(m.agentcompile_running_requests, 0);
  assert.equal(m.agentcompile_queue_depth, 0);
  assert.equal(m['agentcompile_requests_total{finish_reason="cancelled"}'] -
               mBefore['agentcompile_requests_total{finish_reason="cancelled"}'], 4);
  assert.ok(m.agentcompile_generation_tokens_total - mBefore.agentcompile_generation_tokens_total < 4 * 480);

  // SIGTERM while a stream runs: the stream ends normally, new connections are refused.
  const last = await client.chat.completions.create({ model: MODEL, messages: user('Last one.'), max_tokens: 300,
                                                      temperature: 0, stream: true, stream_options: { include_usage: true } });
  let lastText = '', lastFinish = null, lastUsage = null, signalled = false;
  for await (const chunk of last) {
    if (!signalled) {
      process.kill(pid, 'SIGTERM');
      signalled = true;
    }
    if (chunk.choices.length) {
      lastText += chunk.choices[0].delta.content ?? '';
      lastFinish = chunk.choices[0].finish_reason ?? lastFinish;
    }
    if (chunk.usage) lastUsage = chunk.usage;
  }
  assert.ok(lastFinish === 'length' || lastFinish === 'stop', `finish ${lastFinish}`);
  assert.ok(lastUsage && lastUsage.completion_tokens > 0);
  await assert.rejects(fetch(`${base}/health`), 'a new connection after SIGTERM was accepted');
  console.log(`serve_client: every check passed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

main().catch((e) => {
  console.error('FAIL:', e && e.stack ? e.stack : e);
  process.exit(1);
});
