#!/usr/bin/env node
// The whole Hugging Face chat path as transformers.js runs it: @lenml/tokenizers' (a port of
// transformers.js' tokenizers) PreTrainedTokenizer.apply_chat_template picks the template from a
// tokenizer_config.json and builds the render context itself; only its template engine is
// swapped for @huggingface/jinja 0.5.13 (the one it bundles, 0.2, cannot parse current
// templates). tests/jinja/test_hf_chat_context.cpp checks include/agentcompile/chat
// (hf_context.h, chat_template.h) against this.
//
//   node apply_reference.js NPM_DIR REQUEST.json OUT.json
//
// REQUEST: {"now": "2025-03-07T09:05:00Z" (optional: the clock strftime_now reads),
//           "cases": [{"config": TOKENIZER_CONFIG, "messages": [...], "tools": [...] (optional),
//                      "add_generation_prompt": BOOL, "kwargs": {...} (optional)}, ...]}
// OUT: one entry per case: {"template": TEXT chosen, "context": OBJECT the template was rendered
// with, "output": TEXT} or {"error": MESSAGE} (with "template" and "context" where it got that far).
// The tokenizer gets a one-word vocabulary: the chat path reads only tokenizer_config.json.
"use strict";
const { fixClock } = require("./fixed_clock");
const fs = require("fs");
const path = require("path");

const [npmDir, requestPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node apply_reference.js NPM_DIR REQUEST.json OUT.json");
  process.exit(2);
}
const request = JSON.parse(fs.readFileSync(requestPath, "utf8"));
fixClock(request.now, "apply_reference.js");
const { TokenizerLoader } = require(path.join(npmDir, "@lenml/tokenizers"));
const { Template } = require(path.join(npmDir, "@huggingface/jinja"));

const tinyTokenizerJSON = {
  version: "1.0", truncation: null, padding: null, added_tokens: [], normalizer: null, pre_tokenizer: null,
  post_processor: null, decoder: null, model: { type: "WordLevel", vocab: { "<unk>": 0 }, unk_token: "<unk>" },
};

const out = request.cases.map((c) => {
  const answer = {};
  try {
    const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON: tinyTokenizerJSON, tokenizerConfig: c.config });
    const tools = c.tools === undefined ? null : c.tools;
    answer.template = tokenizer.get_chat_template({ tools });
    if (typeof answer.template === "string") {
      // The compiled-template cache primed with the reference engine, whose render also records
      // the context apply_chat_template built.
      const compiled = new Template(answer.template);
      const render = compiled.render.bind(compiled);
      compiled.render = (context) => {
        answer.context = JSON.parse(JSON.stringify(context));
        return render(context);
      };
      tokenizer._compiled_template_cache.set(answer.template, compiled);
    }
    const options = { ...(c.kwargs || {}), tokenize: false, add_generation_prompt: !!c.add_generation_prompt };
    if (c.tools !== undefined) options.tools = c.tools;
    answer.output = tokenizer.apply_chat_template(c.messages, options);
  } catch (e) {
    answer.error = String(e && e.message !== undefined ? e.message : e);
  }
  return answer;
});
fs.writeFileSync(outPath, JSON.stringify(out));
