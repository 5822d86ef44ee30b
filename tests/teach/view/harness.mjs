// What the page tests share: the browser they drive, their "ok"/"FAIL" lines, and puppeteer-core,
// loaded with a message that says how to install it.
import fs from "node:fs";
import path from "node:path";

export const CHROMIUM = process.env.ORDO_CHROMIUM || "/usr/bin/chromium";

let failed = 0;
export function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failed++;
}
export const failures = () => failed;

// puppeteer-core, or exit: 77 (skipped) without Chromium, 1 without puppeteer-core.
export async function loadPuppeteer() {
  if (!fs.existsSync(CHROMIUM)) {
    console.log(`skip: no Chromium at ${CHROMIUM}`);
    process.exit(77);
  }
  try {
    return (await import("puppeteer-core")).default;
  } catch {
    console.error(`error: ${path.dirname(new URL(import.meta.url).pathname)}: puppeteer-core is not installed (run npm ci there)`);
    process.exit(1);
  }
}
