// The clock of the chat-template reference scripts: UTC, and with a request's "now" a fixed
// instant, so that strftime_now (which reads `new Date()`) gives the same text on every run.
// Required before anything reads the clock.
"use strict";
process.env.TZ = "UTC";

// Makes `new Date()` and Date.now() return `now` (an ISO date); exits with status 2 on a bad date.
function fixClock(now, scriptName) {
  if (!now) return;
  const fixed = Date.parse(now);
  if (Number.isNaN(fixed)) {
    console.error(scriptName + ": now: not a date: " + now);
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

module.exports = { fixClock };
