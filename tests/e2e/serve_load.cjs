// A bounded load run against `agentcompile serve` (tests/e2e/serve_load.sh starts it with
// --max-batch 8 --max-queue 24): node serve_load.cjs BASE_URL SERVER_PID
//  1. 32 concurrent streams, each the text its request gives alone.
//  2. 64 clients, 3 requests each, at once: whole, streamed, and streams dropped after their first
//     chunk. Every request completes, is refused with 503 + Retry-After, or was dropped by us;
//     nothing else. The queue and the running batch empty afterwards.
//  3. The server's resident memory returns to its idle baseline (taken after a warm-up at the
//     same concurrency, so thread stacks and allocator arenas already exist).
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const OpenAI = require('openai');

const [base, pidText] = process.argv.slice(2);
const pid = Number(pidText);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000 });
const MODEL = 'tiny';
const user = (content) => [{ role: 'user', content }];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function rssKiB() {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return Number(m[1]);
}

async function metrics() {
  const text = await (await fetch(`${base}/metrics`)).text();
  const values = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    values[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return values;
}

async function idle() {
  for (let i = 0; i < 200; i++) {
    const m = await metrics();
    if (m.agentcompile_running_requests === 0 && m.agentcompile_queue_depth === 0) return m;
    await sleep(50);
  }
  assert.fail('the server did not go idle');
}

async function streamChat(params, { dropAfterFirst = false } = {}) {
  const ac = new AbortController();
  const stream = await client.chat.completions.create({ ...params, stream: true }, { signal: ac.signal });
  let text = '', finish = null;
  try {
    for await (const chunk of stream) {
      if (dropAfterFirst) { ac.abort(); return { dropped: true }; }
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
  } catch (e) {
    if (dropAfterFirst && ac.signal.aborted) return { dropped: true };
    throw e;
  }
  return { text, finish };
}

// One request of the load run: 'done', 'refused' (503 with Retry-After) or 'dropped'.
async function oneRequest(c, k) {
  const kind = (c + k) % 3;
  const params = { model: MODEL, messages: user(`Client ${c} asks question ${k}.`), max_tokens: 8 + ((c * 7 + k) % 17),
                   temperature: 0.8, seed: c * 10 + k };
  try {
    if (kind === 0) {
      const r = await client.chat.completions.create(params);
      assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
      assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= params.max_tokens);
      return 'done';
    }
    const r = await streamChat(params, { dropAfterFirst: kind === 2 && c % 2 === 0 });
    if (r.dropped) return 'dropped';
    assert.ok(['stop', 'length'].includes(r.finish), `finish ${r.finish}`);
    return 'done';
  } catch (e) {
    if (e instanceof OpenAI.APIError && e.status === 503) {
      assert.ok(e.headers?.['retry-after'] ?? e.headers?.get?.('retry-after'), '503 without Retry-After');
      assert.match(e.message, /busy|queue/);
      return 'refused';
    }
    throw e;
  }
}

async function main() {
  const t0 = Date.now();
  // Warm-up at full concurrency; then the idle baseline.
  await Promise.all(Array.from({ length: 64 }, (_, c) => oneRequest(c, 0)));
  await idle();
  await sleep(300);
  const baseline = rssKiB();

  // 1. 32 concurrent streams, each equal to its request alone (greedy).
  const asks = Array.from({ length: 32 }, (_, i) => ({ model: MODEL, messages: user(`Stream ${i}: tell me about ${i * 3}.`),
                                                       max_tokens: 12 + (i % 9), temperature: 0 }));
  const alone = [];
  for (const a of asks) alone.push(await client.chat.completions.create(a));
  const before = await metrics();
  let peak = 0, sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, (await metrics()).agentcompile_running_requests);
      await sleep(10);
    }
  })();
  const together = await Promise.all(asks.map((a) => streamChat(a)));
  sampling = false;
  await sampler;
  together.forEach((r, i) => {
    assert.equal(r.text, alone[i].choices[0].message.content, `stream ${i}`);
    assert.equal(r.finish, alone[i].choices[0].finish_reason, `stream ${i}`);
  });
  const after = await idle();
  const done = (m) => m['agentcompile_requests_total{finish_reason="stop"}'] + m['agentcompile_requests_total{finish_reason="length"}'];
  assert.equal(done(after) - done(before), 32);
  assert.ok(peak >= 4, `at most ${peak} requests ran at once`);

  // 2. 64 clients x 3 requests.
  const tLoad = Date.now();
  const outcomes = await Promise.all(Array.from({ length: 64 }, async (_, c) => {
    const mine = [];
    for (let k = 0; k < 3; k++) mine.push(await oneRequest(c, k));
    return mine;
  }));
  const count = { done: 0, refused: 0, dropped: 0 };
  for (const o of outcomes.flat()) count[o]++;
  const loadSeconds = (Date.now() - tLoad) / 1000;
  assert.equal(count.done + count.refused + count.dropped, 192);
  assert.ok(count.done > 0 && count.refused > 0 && count.dropped > 0, JSON.stringify(count));
  const m = await idle();
  assert.equal(m.agentcompile_running_requests, 0);
  assert.equal(m.agentcompile_queue_depth, 0);

  // 3. Memory back to the baseline (idle connections close, their threads end).
  let rss = rssKiB();
  for (let i = 0; i < 100 && rss > baseline + 8192; i++) {
    await sleep(100);
    rss = rssKiB();
  }
  console.log(`serve_load: 32 streams (peak ${peak} running), load ${JSON.stringify(count)} in ${loadSeconds.toFixed(1)} s, ` +
              `RSS baseline ${(baseline / 1024).toFixed(1)} MiB, after ${(rss / 1024).toFixed(1)} MiB, ` +
              `${((Date.now() - t0) / 1000).toFixed(1)} s in all`);
  assert.ok(rss <= baseline + 8192, `resident memory ${rss} KiB after the load, ${baseline} KiB before`);
}

main().catch((e) => {
  console.error('FAIL:', e && e.stack ? e.stack : e);
  process.exit(1);
});
