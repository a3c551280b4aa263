// Shared bits of the framework checks (sdk_*.mjs): where the server is, how to load the pinned
// packages from .cache/agents-sdks, and the "ok NAME" / "FAIL NAME: why" lines.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import path from "node:path";

export const BASE = process.env.HEARTH_BASE; // http://127.0.0.1:PORT/v1 (server or capture proxy)
export const MODEL = process.env.HEARTH_MODEL || "qwen3-tools-20m";
export const KEY = process.env.HEARTH_KEY || "sk-hearth-test";
const SDKS = process.env.AGENTS_SDKS || path.resolve(import.meta.dirname ?? ".", "../../.cache/agents-sdks");
const req = createRequire(path.join(SDKS, "package.json"));

// import a package installed in .cache/agents-sdks (the scripts live outside it)
export async function need(name) {
  return import(pathToFileURL(req.resolve(name)).href);
}

// The fixture's tool, with the description it was trained on (tests/server/sdk_responses.cjs).
export const WEATHER_DESC = "Get the current weather for a city";
export const OSLO = "What's the weather in Oslo?";
export const weatherResult = (city) => JSON.stringify({ city, temperature_c: 21, condition: "sunny" });
export const sentence = (t) => typeof t === "string" && t.trim().length > 8 && !t.includes("<tool_call>");

let failed = 0;
const short = (v) => {
  if (v instanceof Error) return `${v.name}: ${v.message}`.slice(0, 600);
  try { return (typeof v === "string" ? v : JSON.stringify(v)).slice(0, 600); } catch { return String(v).slice(0, 600); }
};
export function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${short(why)}`); }
}
// run one named case; a throw is a FAIL with the error (status and body when the SDK has them)
export async function step(name, fn) {
  try { await fn(); }
  catch (e) {
    failed++;
    const extra = e && (e.status || e.statusCode) ? ` [status ${e.status || e.statusCode}] ${short(e.error || e.responseBody || "")}` : "";
    console.log(`FAIL ${name}: threw ${short(e)}${extra}`.replace(/\n/g, " "));
    if (process.env.SDK_DEBUG) console.error(e);
  }
}
export function done() { process.exit(failed ? 1 : 0); }
