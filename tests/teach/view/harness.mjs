// What the page tests share: the browser they drive, their "ok"/"FAIL" lines, and puppeteer-core,
// loaded with a message that says how to install it.
import fs from "node:fs";
import os from "node:os";
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

// Chromium, headless, in a profile directory of its own (removed by the caller when done).
export async function launch(puppeteer, name) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `ordo-${name}-chromium-`));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true, userDataDir: profile,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  return { browser, profile };
}

// A 1280 × 900 page that keeps what goes wrong on it: console errors and warnings, script errors,
// and every request that allowed(url) refuses (aborted, so nothing leaves the machine).
export async function openPage(browser, allowed) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  await page.setRequestInterception(true);
  page.on("request", (r) => {
    if (allowed(r.url()) || r.url().startsWith("data:")) return r.continue();
    problems.push(`request for ${r.url()}`);
    r.abort();
  });
  return { page, problems };
}

// The four tables of `ordo attention --parts` (text output): { content_content, content_position,
// position_content, position_position }, each S × S, the numbers as printed (3 decimals).
export function parseParts(text, S) {
  const lines = text.split("\n"), out = {};
  for (const name of ["content_content", "content_position", "position_content", "position_position"]) {
    const at = lines.indexOf(name.replace("_", " . "));
    if (at < 0) throw new Error(`ordo attention --parts printed no "${name.replace("_", " . ")}" table`);
    out[name] = lines.slice(at + 2, at + 2 + S).map((l) => l.trim().split(/\s+/).slice(-S).map(Number));
  }
  return out;
}
