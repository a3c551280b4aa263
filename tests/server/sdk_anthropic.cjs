// The official @anthropic-ai/sdk (pinned 1.15.0) against `hearth serve --api-key K` running
// the real engine on qwen3-tools-20m (a small trained tool-calling Qwen3): requests shaped
// as Claude Code sends them (system messages inside messages, adaptive and budgeted
// thinking, server tools, 32000 max_tokens, the beta route with ?beta=true), tool round
// trips whole and streamed, two calls in one turn, count_tokens, and errors surfacing as
// the SDK's exception classes. Usage: node sdk_anthropic.cjs PORT KEY.
const path = require("path");
const Anthropic = require(path.resolve(".cache/npm/node_modules/@anthropic-ai/sdk"));
const [port, key] = process.argv.slice(2);
const baseURL = `http://127.0.0.1:${port}`;
const client = new Anthropic({ baseURL, apiKey: key, maxRetries: 0 });
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${JSON.stringify(why).slice(0, 400)}`); }
}
// One named group: an exception fails it, the others still run.
async function group(name, fn) {
  try { await fn(); } catch (e) { check(name, false, `${e.constructor.name}: ${e.message}`); }
}

const model = "qwen3-tools-20m";
// Greedy everywhere: the small model's answers are then the same on every run.
const tools = [
  { name: "get_weather", description: "Get the current weather in a city",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
  { type: "custom", name: "get_time", description: "Get the current time in a timezone",
    input_schema: { type: "object", properties: { timezone: { type: "string" } }, required: ["timezone"] } },
  { type: "web_search_20250305", name: "web_search", max_uses: 3 }, // a server tool: not offered
];
const user = (content) => ({ role: "user", content });
const blocks = (m, type) => m.content.filter((b) => b.type === type);
const text = (m) => blocks(m, "text").map((b) => b.text).join("");
const results = (m, answers) =>
  user(blocks(m, "tool_use").map((b, i) => ({ type: "tool_result", tool_use_id: b.id, content: answers[i] })));

async function systemInMessages() {
  const m = await client.messages.create({
    model, temperature: 0, max_tokens: 200, tools, thinking: { type: "disabled" },
    messages: [{ role: "system", content: "You are a helpful assistant." }, user("What's the weather in Oslo?")],
  });
  const calls = blocks(m, "tool_use");
  check("system_message_first", calls.length === 1 && calls[0].input.city === "Oslo" && m.stop_reason === "tool_use", m);
  const later = await client.messages.create({
    model, temperature: 0, max_tokens: 200, tools, thinking: { type: "disabled" },
    messages: [user("Hello"), { role: "assistant", content: "Hello! How can I help?" },
               { role: "system", content: [{ type: "text", text: "Use the tools.", cache_control: { type: "ephemeral" } }] },
               user("What's the weather in Oslo?")],
  });
  check("system_message_mid_conversation", later.type === "message" && later.content.length > 0, later);
}

async function thinking() {
  const a = await client.messages.create({ model, temperature: 0, max_tokens: 200, tools, thinking: { type: "adaptive" },
                                           messages: [user("What's the weather in Oslo?")] });
  const t = blocks(a, "thinking");
  check("thinking_adaptive", t.length === 1 && t[0].thinking.trim().length > 0 && a.content[0].type === "thinking" &&
        blocks(a, "tool_use").length === 1, a);
  const b = await client.messages.create({ model, temperature: 0, max_tokens: 2048, tools,
                                           thinking: { type: "enabled", budget_tokens: 1024 },
                                           messages: [user("What's the weather in Oslo?")] });
  check("thinking_enabled_budget", blocks(b, "thinking").length === 1 && blocks(b, "tool_use").length === 1, b);
  // A budget below the model's own thought: the engine closes the block after 3 tokens.
  const short = await client.messages.create({ model, temperature: 0, max_tokens: 200, tools,
                                               thinking: { type: "enabled", budget_tokens: 3 },
                                               messages: [user("What's the weather in Oslo?")] });
  const st = blocks(short, "thinking"), full = blocks(b, "thinking")[0].thinking;
  check("thinking_budget_enforced", st.length === 1 && st[0].thinking.length < full.length &&
        short.content.length > 1, { short, full });
  const c = await client.messages.create({ model, temperature: 0, max_tokens: 200, tools, thinking: { type: "disabled" },
                                           output_config: { effort: "low" }, messages: [user("What's the weather in Oslo?")] });
  check("thinking_disabled", blocks(c, "thinking").length === 0 && blocks(c, "tool_use").length === 1, c);
}

// tool_use -> tool_result -> a sentence; the first turn's thinking block goes back in history.
async function toolRoundTrip() {
  const q = [user("What's the weather in Oslo?")];
  const first = await client.messages.create({ model, temperature: 0, max_tokens: 200, tools, messages: q });
  const call = blocks(first, "tool_use")[0];
  check("tool_use_whole", first.stop_reason === "tool_use" && call && call.name === "get_weather" &&
        call.input.city === "Oslo" && call.id.startsWith("toolu_"), first);
  const second = await client.messages.create({
    model, temperature: 0, max_tokens: 200, tools,
    messages: [...q, { role: "assistant", content: first.content }, results(first, ["21 degrees Celsius and sunny"])],
  });
  check("tool_result_answer_whole", second.stop_reason === "end_turn" && /Oslo/.test(text(second)) &&
        blocks(second, "tool_use").length === 0, second);
}

async function toolRoundTripStreamed() {
  const q = [user("What's the weather in Oslo?")];
  const s1 = client.messages.stream({ model, temperature: 0, max_tokens: 200, tools, messages: q });
  let deltas = 0;
  s1.on("inputJson", () => deltas++);
  const first = await s1.finalMessage();
  const call = blocks(first, "tool_use")[0];
  check("tool_use_stream", first.stop_reason === "tool_use" && call && call.input.city === "Oslo" && deltas >= 1 &&
        blocks(first, "thinking").length === 1, first);
  const s2 = client.messages.stream({
    model, temperature: 0, max_tokens: 200, tools,
    messages: [...q, { role: "assistant", content: first.content }, results(first, [[{ type: "text", text: "5 degrees, rain" }]])],
  });
  let streamed = "";
  s2.on("text", (t) => { streamed += t; });
  const second = await s2.finalMessage();
  check("tool_result_answer_stream", second.stop_reason === "end_turn" && text(second).length > 0 &&
        streamed === text(second) && second.usage.output_tokens > 0, { second, streamed });
}

async function twoCalls() {
  const q = [user("What's the weather in Oslo and in Lima?")];
  const m = await client.messages.create({ model, temperature: 0, max_tokens: 300, tools, thinking: { type: "disabled" },
                                           tool_choice: { type: "auto", disable_parallel_tool_use: false }, messages: q });
  const cities = blocks(m, "tool_use").map((b) => b.input.city);
  check("two_tool_uses", cities.length === 2 && cities.includes("Oslo") && cities.includes("Lima"), m);
  const s = client.messages.stream({ model, temperature: 0, max_tokens: 300, tools, thinking: { type: "disabled" }, messages: q });
  const f = await s.finalMessage();
  check("two_tool_uses_stream", blocks(f, "tool_use").length === 2 && f.stop_reason === "tool_use", f);
  const answer = await client.messages.create({
    model, temperature: 0, max_tokens: 300, tools, thinking: { type: "disabled" },
    messages: [...q, { role: "assistant", content: m.content }, results(m, ["sunny, 21 C", "cloudy, 18 C"])],
  });
  check("two_tool_results_answer", answer.stop_reason === "end_turn" && text(answer).length > 0, answer);
}

// Claude Code's shape: beta route (?beta=true), 32000 max_tokens (streamed, as the SDK
// requires for so long a budget), metadata, context_management, cache_control everywhere.
async function claudeCodeShape() {
  const s = client.beta.messages.stream({
    model, temperature: 0, max_tokens: 32000, tools, thinking: { type: "adaptive" }, metadata: { user_id: "u" },
    context_management: { edits: [{ type: "clear_tool_uses_20250919" }] }, betas: ["interleaved-thinking-2025-05-14"],
    system: [{ type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } }],
    messages: [user([{ type: "text", text: "What's the weather in Oslo?", cache_control: { type: "ephemeral" } }])],
  });
  const f = await s.finalMessage();
  check("beta_max_tokens_32000", blocks(f, "tool_use").length === 1 && f.stop_reason === "tool_use", f);
}

async function countTokens() {
  const body = { model, tools, messages: [user("What's the weather in Oslo?")] };
  const n = await client.messages.countTokens(body);
  const m = await client.messages.create({ ...body, max_tokens: 200, temperature: 0 });
  check("count_tokens", n.input_tokens > 0 && n.input_tokens === m.usage.input_tokens + (m.usage.cache_read_input_tokens || 0),
        { n, usage: m.usage });
  const b = await client.beta.messages.countTokens(body);
  check("count_tokens_beta", b.input_tokens === n.input_tokens, b);
}

async function errors() {
  const cases = [
    ["error_image_block", { model, temperature: 0, max_tokens: 10, messages: [user([{ type: "image", source: { type: "base64", media_type: "image/png", data: "AA==" } }])] },
     Anthropic.BadRequestError, "image blocks are not supported"],
    ["error_max_tokens_missing", { model, messages: [user("Hi")] }, Anthropic.BadRequestError, "max_tokens"],
    ["error_budget", { model, temperature: 0, max_tokens: 10, thinking: { type: "enabled", budget_tokens: 0 }, messages: [user("Hi")] },
     Anthropic.BadRequestError, "budget_tokens"],
  ];
  for (const [name, body, cls, msg] of cases) {
    try {
      await client.messages.create(body);
      check(name, false, "no error");
    } catch (e) {
      check(name, e instanceof cls && e.status === 400 && e.error.type === "error" &&
            e.error.error.type === "invalid_request_error" && e.message.includes(msg), String(e));
    }
  }
  const wrong = new Anthropic({ baseURL, apiKey: "wrong", maxRetries: 0 });
  try {
    await wrong.messages.create({ model, temperature: 0, max_tokens: 5, messages: [user("Hi")] });
    check("error_authentication", false, "no error");
  } catch (e) {
    check("error_authentication", e instanceof Anthropic.AuthenticationError && e.status === 401, String(e));
  }
}

async function main() {
  await group("system_messages", systemInMessages);
  await group("thinking", thinking);
  await group("tool_round_trip", toolRoundTrip);
  await group("tool_round_trip_stream", toolRoundTripStreamed);
  await group("two_calls", twoCalls);
  await group("claude_code_shape", claudeCodeShape);
  await group("count_tokens", countTokens);
  await group("errors", errors);
}
main().then(() => process.exit(failed ? 1 : 0), (e) => { console.log(`FAIL sdk_exception: ${e}`); process.exit(1); });
