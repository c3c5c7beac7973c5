#!/usr/bin/env node
// The reference side of the tokenizer tests: @lenml/tokenizers (a port of transformers.js'
// tokenizers) loads a tokenizer.json + tokenizer_config.json and answers a batch of requests.
//
//   node reference.js NPM_DIR MODEL_DIR REQUEST.json OUT.json
//
// REQUEST (every key optional):
//   encode:     [text]                  ids of encode(text, {add_special_tokens: false})
//   encode_special: [text]              ids of encode(text, {add_special_tokens: true}): with what
//                                       the tokenizer.json post_processor adds
//   encode_b64: [base64]                the bytes decoded by a WHATWG TextDecoder (invalid UTF-8
//                                       becomes U+FFFD), then encoded as above
//   decode:     [{ids, skip_special_tokens}]   decode(ids, {..., clean_up_tokenization_spaces: false})
//   nfc:        [text]                  text.normalize("NFC")
//   chat:       [{messages, add_generation_prompt, enable_thinking?, date_string?}]
//               apply_chat_template(messages, {tokenize: false, ...}); the template engine bundled
//               with @lenml/tokenizers (@huggingface/jinja 0.2) cannot parse Qwen3's template, so
//               the tokenizer's compiled-template cache is primed with @huggingface/jinja 0.5 and
//               everything else (context, special-token variables) is the reference's own code.
//   chat_bundled: true                  also render `chat` with the bundled engine, where it can
//                                       (null where it throws)
//   time_encode: {file, repeats}        milliseconds to encode the file's text: the first run
//                                       (cold caches) and the best of `repeats` more (warm)
// OUT: the same keys with the answers.
"use strict";
const fs = require("fs");
const path = require("path");

const [npmDir, modelDir, requestPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node reference.js NPM_DIR MODEL_DIR REQUEST.json OUT.json");
  process.exit(2);
}
const { TokenizerLoader } = require(path.join(npmDir, "@lenml/tokenizers"));

const readJson = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const configPath = path.join(modelDir, "tokenizer_config.json");
const tokenizerConfig = fs.existsSync(configPath) ? readJson(configPath) : {};
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJson(path.join(modelDir, "tokenizer.json")),
  tokenizerConfig,
});
const request = readJson(requestPath);
const out = {};

if (request.encode) out.encode = request.encode.map((t) => tokenizer.encode(t, { add_special_tokens: false }));
if (request.encode_special) {
  out.encode_special = request.encode_special.map((t) => tokenizer.encode(t, { add_special_tokens: true }));
}
if (request.encode_b64) {
  const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  out.encode_b64 = request.encode_b64.map((b) =>
    tokenizer.encode(decoder.decode(Buffer.from(b, "base64")), { add_special_tokens: false }));
}
if (request.decode) {
  out.decode = request.decode.map((d) =>
    tokenizer.decode(d.ids, { skip_special_tokens: !!d.skip_special_tokens, clean_up_tokenization_spaces: false }));
}
if (request.nfc) out.nfc = request.nfc.map((t) => t.normalize("NFC"));

function render(c) {
  const kwargs = { tokenize: false, add_generation_prompt: !!c.add_generation_prompt };
  if (c.enable_thinking !== undefined) kwargs.enable_thinking = c.enable_thinking;
  if (c.date_string !== undefined) kwargs.date_string = c.date_string;
  return tokenizer.apply_chat_template(c.messages, kwargs);
}
if (request.chat) {
  if (request.chat_bundled) {
    out.chat_bundled = request.chat.map((c) => {
      try {
        return render(c);
      } catch (e) {
        return null;
      }
    });
  }
  const { Template } = require(path.join(npmDir, "@huggingface/jinja"));
  const template = tokenizer.get_chat_template();
  tokenizer._compiled_template_cache.set(template, new Template(template));
  out.chat = request.chat.map(render);
}
if (request.time_encode) {
  const { file, repeats } = request.time_encode;
  const text = fs.readFileSync(file, "utf8");
  const run = () => {
    const t0 = process.hrtime.bigint();
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    return [Number(process.hrtime.bigint() - t0) / 1e6, ids.length];
  };
  const [cold_ms, tokens] = run();
  let warm_ms = Infinity;
  for (let r = 0; r < repeats; ++r) warm_ms = Math.min(warm_ms, run()[0]);
  out.time_encode = { cold_ms, warm_ms, tokens, bytes: Buffer.byteLength(text, "utf8") };
}
fs.writeFileSync(outPath, JSON.stringify(out));
