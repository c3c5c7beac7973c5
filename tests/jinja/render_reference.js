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
process.env.TZ = "UTC";
const fs = require("fs");
const path = require("path");

const [npmDir, requestPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node render_reference.js NPM_DIR REQUEST.json OUT.json");
  process.exit(2);
}
const request = JSON.parse(fs.readFileSync(requestPath, "utf8"));
if (request.now) {
  // strftime_now calls `new Date()`: a Date whose no-argument form is the fixed instant.
  const fixed = Date.parse(request.now);
  if (Number.isNaN(fixed)) {
    console.error("render_reference.js: now: not a date: " + request.now);
    process.exit(2);
  }
  const RealDate = Date;
  globalThis.Date = class extends RealDate {
    constructor(...args) {
      super(...(args.length ? args : [fixed]));
    }
    static now() {
      return fixed;
    }
  };
}
const { Template } = require(path.join(npmDir, "@huggingface/jinja"));

const out = request.cases.map(({ template, context }) => {
  try {
    return { output: new Template(template).render(context) };
  } catch (e) {
    return { error: String(e && e.message !== undefined ? e.message : e) };
  }
});
fs.writeFileSync(outPath, JSON.stringify(out));
