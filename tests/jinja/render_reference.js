#!/usr/bin/env node
// The reference side of the chat-template tests: @huggingface/jinja (the template engine of
// transformers.js) renders a batch of templates, each with its context.
//
//   node render_reference.js NPM_DIR REQUEST.json OUT.json
//
// REQUEST: {"now": "2024-07-26T12:00:00Z" (optional: the clock strftime_now reads),
//           "cases": [{"template": TEXT, "context": OBJECT}, ...]}
// OUT: one entry per case: {"output": TEXT} or {"error": MESSAGE} (parse or render failure).
// The clock is UTC (TZ is set before anything reads it); without "now" it is the real one.
"use strict";
const { fixClock } = require("./fixed_clock");
const fs = require("fs");
const path = require("path");

const [npmDir, requestPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node render_reference.js NPM_DIR REQUEST.json OUT.json");
  process.exit(2);
}
const request = JSON.parse(fs.readFileSync(requestPath, "utf8"));
fixClock(request.now, "render_reference.js");
const { Template } = require(path.join(npmDir, "@huggingface/jinja"));

const out = request.cases.map(({ template, context }) => {
  try {
    return { output: new Template(template).render(context) };
  } catch (e) {
    return { error: String(e && e.message !== undefined ? e.message : e) };
  }
});
fs.writeFileSync(outPath, JSON.stringify(out));
