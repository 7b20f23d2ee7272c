// Lighthouse over several pages in one Node process, against one Chromium already running
// (scripts/lighthouse_budget.py starts it and the static server, and reads what this prints).
//
//   node scripts/lighthouse_pages.mjs PORT PRESET URL [URL ...]
//
// Each URL is measured in turn (never two at once: simulated timings scale with the CPU time the
// page took here); one JSON line per run goes to stdout, the full report's key numbers only.
// Only the performance and accessibility categories run, and no screenshots are taken (the
// full-page one alone costs seconds a page): what the budget reads is all that is computed.
import lighthouse from "lighthouse";
import defaultConfig from "lighthouse/core/config/default-config.js";
import desktopConfig from "lighthouse/core/config/desktop-config.js";

// The performance score is made of five metrics; the category's unweighted diagnostics
// (unused CSS, image sizes, the back/forward cache test, which navigates the page twice more...)
// only explain it, and some cost seconds a page.  Those read here are kept.
const READ = new Set([
  "network-requests",
  "mainthread-work-breakdown",
  "metrics",
  "render-blocking-resources",
  "largest-contentful-paint-element",
  "layout-shifts",
]);
const UNREAD = defaultConfig.categories.performance.auditRefs
  .filter((ref) => ref.weight === 0 && !READ.has(ref.id))
  .map((ref) => ref.id);

const [port, preset, ...urls] = process.argv.slice(2);
const flags = {
  port: Number(port),
  output: "json",
  logLevel: "error",
  onlyCategories: (process.env.LIGHTHOUSE_CATEGORIES || "performance,accessibility").split(","),
  disableFullPageScreenshot: true,
  skipAudits: ["screenshot-thumbnails", "final-screenshot", ...UNREAD],
  maxWaitForLoad: 60000,
  skipAboutBlank: true,
};
// How long the page must be idle (network, CPU) after its first paint and its load before the
// trace ends: 500 ms here (LIGHTHOUSE_QUIET_MS), where Lighthouse waits 1000 ms.  The book's pages
// load nothing more unless scrolled (explorers, lazy images), and over every page of the book the
// shorter wait read the same bytes and requests and the same scores within one point (run to run
// noise), a second a page sooner.
const quietMs = Number(process.env.LIGHTHOUSE_QUIET_MS || 500);
Object.assign(flags, {
  pauseAfterFcpMs: quietMs,
  pauseAfterLoadMs: quietMs,
  networkQuietThresholdMs: quietMs,
  cpuQuietThresholdMs: quietMs,
});
const config = preset === "desktop" ? desktopConfig : undefined;

// CPU calibration (Lighthouse's docs, "Calibrating the CPU slowdown"): the preset's slowdown
// (mobile 4x, desktop 1x) is meant for a high-end desktop host, benchmarkIndex ~1750; a slower or
// busier host reads slow by the same factor.  With LIGHTHOUSE_CALIBRATE=1 each page's slowdown is
// the preset's times (benchmarkIndex / 1750), clamped to [1, 4] on mobile (never harsher than
// the preset), where benchmarkIndex is the median of every reading of the run so far (one a
// page; see the loop below for the first page).
const REFERENCE_INDEX = 1750;
const PRESET_SLOWDOWN = preset === "desktop" ? 1 : 4;
const calibrate = process.env.LIGHTHOUSE_CALIBRATE === "1";
function slowdownFor(index) {
  const m = (PRESET_SLOWDOWN * index) / REFERENCE_INDEX;
  return preset === "desktop" ? Math.min(Math.max(m, 0.5), 2) : Math.min(Math.max(m, 1), PRESET_SLOWDOWN);
}
function flagsFor(multiplier) {
  return multiplier === null ? flags : { ...flags, throttling: { cpuSlowdownMultiplier: multiplier } };
}

function summary(lhr) {
  const audits = lhr.audits;
  const items = audits["network-requests"]?.details?.items ?? [];
  const failedA11y = (lhr.categories.accessibility?.auditRefs ?? [])
    .map((ref) => audits[ref.id])
    .filter((a) => a.score !== null && a.score < 1)
    .map((a) => a.id);
  const value = (id) => audits[id]?.numericValue ?? null;
  return {
    performance: Math.round(lhr.categories.performance.score * 100),
    accessibility: lhr.categories.accessibility ? Math.round(lhr.categories.accessibility.score * 100) : null,
    fcp_ms: value("first-contentful-paint"),
    lcp_ms: value("largest-contentful-paint"),
    tbt_ms: value("total-blocking-time"),
    si_ms: value("speed-index"),
    cls: value("cumulative-layout-shift"),
    kib: items.reduce((sum, i) => sum + (i.transferSize ?? 0), 0) / 1024,
    requests: items.length,
    a11y_failed: failedA11y,
    biggest: items
      .map((i) => [Math.floor((i.transferSize ?? 0) / 1024), i.url.split("/").pop().slice(0, 50)])
      .sort((a, b) => b[0] - a[0])
      .slice(0, 4),
    main_thread_ms: Object.fromEntries(
      (audits["mainthread-work-breakdown"]?.details?.items ?? []).map((i) => [i.group, Math.round(i.duration)]),
    ),
    warnings: lhr.runWarnings,
    benchmark_index: lhr.environment?.benchmarkIndex ?? null,
    cpu_slowdown: lhr.configSettings?.throttling?.cpuSlowdownMultiplier ?? null,
  };
}

// One host speed for the run: the median of every benchmarkIndex measured so far (a single
// reading moves by a third from one page to the next on a quiet host), those of the earlier
// Node processes of the same run included (LIGHTHOUSE_READINGS, comma-separated): the
// calibration runs are made once a run, by its first process.
const readings = (process.env.LIGHTHOUSE_READINGS || "").split(",").filter(Boolean).map(Number);
function hostIndex() {
  if (!readings.length) return null;
  const sorted = [...readings].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
let index = hostIndex(); // the host's benchmarkIndex, as hostIndex() estimates it (null: none yet)
// One Lighthouse run at MULTIPLIER (null: the preset's slowdown); its reading joins the others.
async function measured(url, multiplier) {
  const result = await lighthouse(url, flagsFor(multiplier), config);
  const found = result?.lhr?.environment?.benchmarkIndex;
  if (found) readings.push(found);
  return { result, found };
}
for (const url of urls) {
  const started = Date.now();
  try {
    let result = null;
    let multiplier = null;
    if (calibrate && index === null) {
      // The first page of a run: measured at the preset's slowdown, which stands where its reading
      // is so high that a reading a third too high (the spread on a quiet host) would still
      // leave the preset's slowdown; otherwise two more readings, and the page again at the
      // slowdown their median gives.
      const first = await measured(url, null);
      if (first.found && slowdownFor((first.found * 3) / 4) === PRESET_SLOWDOWN) {
        result = first.result;
        multiplier = PRESET_SLOWDOWN;
      } else {
        for (let i = 0; i < 2; i++) await measured(url, null);
      }
      index = hostIndex();
    }
    if (!result) {
      multiplier = calibrate && index ? slowdownFor(index) : null;
      ({ result } = await measured(url, multiplier));
    }
    if (!result || result.lhr.runtimeError) {
      throw new Error(result ? result.lhr.runtimeError.message : "no result");
    }
    if (calibrate) index = hostIndex();
    const line = { url, seconds: (Date.now() - started) / 1000, calibrated_from: multiplier === null ? null : index, ...summary(result.lhr) };
    if (process.env.LIGHTHOUSE_REPORTS) {
      const fs = await import("node:fs");
      const name = url.replace(/^https?:\/\/[^/]+\//, "").replace(/[^A-Za-z0-9_.-]/g, "_") || "index";
      fs.writeFileSync(`${process.env.LIGHTHOUSE_REPORTS}/${preset}-${name}.json`, result.report);
    }
    process.stdout.write(JSON.stringify(line) + "\n");
  } catch (error) {
    process.stdout.write(JSON.stringify({ url, error: String(error?.message ?? error) }) + "\n");
  }
}
process.exit(0);
