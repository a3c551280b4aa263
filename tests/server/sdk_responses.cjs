// The official openai npm package (pinned in sdk_npm.sh) against `hearth serve` running the
// real engine on qwen3-tools-20m (a small trained tool-calling Qwen3): the Responses API
// (string and item input, streamed through responses.stream and stream: true, a tool round
// trip call -> function_call_output -> answer streamed and not, two calls in one turn,
// previous_response_id, retrieve / delete, errors as SDK exceptions) and the same tool
// round trips through chat.completions. Greedy throughout. Usage: node sdk_responses.cjs PORT.
const path = require("path");
const OpenAI = require(path.resolve(".cache/npm/node_modules/openai"));
const [port] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "none", maxRetries: 0 });
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${JSON.stringify(why).slice(0, 600)}`); }
}
const weather = { type: "function", name: "get_weather", description: "Get the current weather for a city",
                  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
                  strict: false };
const tools = [weather, { type: "web_search_preview" }];
const base = { model: "qwen3-tools", temperature: 0, max_output_tokens: 200 };
const oslo = "What's the weather in Oslo?";
const result = (city) => JSON.stringify({ city, temperature_c: 21, condition: "sunny" });
const calls = (r) => r.output.filter((o) => o.type === "function_call");
const cities = (r) => calls(r).map((c) => JSON.parse(c.arguments).city);
const sentence = (t) => typeof t === "string" && t.length > 8 && !t.includes("<tool_call>");

async function expectError(name, cls, fn, more) {
  try {
    await fn();
    check(name, false, "no error");
  } catch (e) {
    check(name, e instanceof cls && (!more || more(e)), String(e));
  }
}

async function responses() {
  const hi = await client.responses.create({ ...base, input: "Hello!" });
  check("responses_string_input", hi.object === "response" && hi.status === "completed" &&
        sentence(hi.output_text) && hi.output[hi.output.length - 1].type === "message" &&
        hi.usage.input_tokens > 0 && hi.usage.output_tokens > 0 &&
        hi.usage.total_tokens === hi.usage.input_tokens + hi.usage.output_tokens, hi);
  check("responses_reasoning_item", hi.output[0].type === "reasoning" &&
        hi.output[0].content[0].type === "reasoning_text" && hi.output[0].content[0].text.length > 0 &&
        hi.usage.output_tokens_details.reasoning_tokens > 0, hi.output);
  const items = await client.responses.create({ ...base, instructions: "You are a helpful assistant.",
    input: [{ role: "developer", content: "Answer briefly." },
            { type: "message", role: "user", content: [{ type: "input_text", text: "Hello!" }] }] });
  check("responses_items_input", items.status === "completed" && sentence(items.output_text) &&
        items.instructions === "You are a helpful assistant.", items);
  const off = await client.responses.create({ ...base, input: "Hello!", reasoning: { effort: "none" } });
  check("responses_effort_none", off.output.every((o) => o.type !== "reasoning") && sentence(off.output_text), off.output);

  // streamed with the SDK's helper: its accumulator checks every event against the items
  const types = [];
  const st = client.responses.stream({ ...base, input: oslo, tools });
  st.on("event", (e) => types.push(e.type));
  const call1 = await st.finalResponse();
  const want = ["response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.reasoning_text.delta"];
  const tail = ["response.output_item.added", "response.function_call_arguments.delta",
                "response.function_call_arguments.done", "response.output_item.done", "response.completed"];
  check("responses_stream_events", want.every((t, i) => types[i] === t) &&
        tail.every((t, i) => types[types.length - tail.length + i] === t) &&
        types.includes("response.reasoning_text.done") && types.includes("response.content_part.done"), types);
  check("responses_stream_tool_call", call1.status === "completed" && cities(call1).join() === "Oslo" &&
        calls(call1)[0].name === "get_weather" && calls(call1)[0].call_id.startsWith("call_") &&
        call1.usage.input_tokens > 0, call1.output);
  // the result through previous_response_id, streamed with stream: true
  const ev = [];
  const s2 = await client.responses.create({ ...base, tools, previous_response_id: call1.id, stream: true,
    input: [{ type: "function_call_output", call_id: calls(call1)[0].call_id, output: result("Oslo") }] });
  for await (const e of s2) ev.push(e);
  const done = ev[ev.length - 1];
  const text = ev.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
  check("responses_stream_tool_answer", done.type === "response.completed" && sentence(text) && /Oslo/.test(text) &&
        ev.every((e, i) => e.sequence_number === i) && done.response.previous_response_id === call1.id &&
        done.response.usage.input_tokens_details.cached_tokens > 0, { text, last: done });

  // the same round trip whole, the Agents SDK way: the output items sent back as input
  const call2 = await client.responses.create({ ...base, input: oslo, tools });
  check("responses_tool_call", cities(call2).join() === "Oslo", call2.output);
  const answer = await client.responses.create({ ...base, tools, input: [
    { role: "user", content: oslo }, ...call2.output,
    { type: "function_call_output", call_id: calls(call2)[0].call_id, output: result("Oslo") }] });
  check("responses_tool_answer", answer.status === "completed" && sentence(answer.output_text) &&
        /Oslo/.test(answer.output_text) && calls(answer).length === 0, answer.output);

  const two = await client.responses.create({ ...base, input: "What's the weather in Oslo and in Lima?", tools });
  check("responses_two_calls", cities(two).join() === "Oslo,Lima" &&
        new Set(calls(two).map((c) => c.call_id)).size === 2, two.output);
  const both = await client.responses.create({ ...base, tools, previous_response_id: two.id,
    input: calls(two).map((c, i) => ({ type: "function_call_output", call_id: c.call_id,
                                        output: result(["Oslo", "Lima"][i]) })) });
  check("responses_two_calls_answer", sentence(both.output_text) && calls(both).length === 0, both.output);

  // the history reached the prompt (its answer, less the reasoning the template drops); the
  // tiny model follows one exchange of history well, not a change of topic
  const next = await client.responses.create({ ...base, previous_response_id: hi.id, input: "Hello again!" });
  check("responses_previous_response_id", next.previous_response_id === hi.id && sentence(next.output_text) &&
        next.usage.input_tokens > hi.usage.input_tokens + hi.usage.output_tokens -
          hi.usage.output_tokens_details.reasoning_tokens, { hi: hi.usage, next });

  const got = await client.responses.retrieve(call2.id);
  check("responses_retrieve", got.id === call2.id && got.output.length === call2.output.length &&
        got.output.every((o, i) => o.id === call2.output[i].id), got);
  await client.responses.delete(call2.id);
  await expectError("responses_retrieve_deleted", OpenAI.NotFoundError, () => client.responses.retrieve(call2.id));
  await expectError("responses_delete_unknown", OpenAI.NotFoundError, () => client.responses.delete("resp_nope"));
  await expectError("responses_previous_unknown", OpenAI.BadRequestError,
    () => client.responses.create({ ...base, input: "x", previous_response_id: "resp_nope" }),
    (e) => e.param === "previous_response_id" && /not found/.test(e.message));
  await expectError("responses_bad_image", OpenAI.BadRequestError,
    () => client.responses.create({ ...base, input: [{ role: "user", content: [
      { type: "input_image", image_url: "data:image/png;base64,AAAA" }] }] }),
    (e) => /input\[0\]\.content\[0\] is an input_image part/.test(e.message));
  await expectError("responses_bad_format", OpenAI.BadRequestError,
    () => client.responses.create({ ...base, input: "x", text: { format: { type: "yaml" } } }),
    (e) => e.param === "text.format");
}

const chatTools = [{ type: "function", function: { name: "get_weather", description: weather.description,
                                                   parameters: weather.parameters } }];
const chatBase = { model: "qwen3-tools", temperature: 0, max_tokens: 200, tools: chatTools };

async function chat() {
  const msgs = [{ role: "user", content: oslo }];
  const c = await client.chat.completions.create({ ...chatBase, messages: msgs });
  const tc = c.choices[0].message.tool_calls || [];
  check("chat_tool_call", c.choices[0].finish_reason === "tool_calls" && tc.length === 1 &&
        JSON.parse(tc[0].function.arguments).city === "Oslo", c.choices[0]);
  const rt = c.usage.completion_tokens_details && c.usage.completion_tokens_details.reasoning_tokens;
  check("chat_reasoning_tokens", c.choices[0].message.reasoning_content && rt > 0 &&
        rt < c.usage.completion_tokens, c.usage);
  const round = [...msgs, c.choices[0].message,
                 { role: "tool", tool_call_id: tc[0] && tc[0].id, content: result("Oslo") }];
  const a = await client.chat.completions.create({ ...chatBase, messages: round });
  check("chat_tool_answer", a.choices[0].finish_reason === "stop" && sentence(a.choices[0].message.content) &&
        /Oslo/.test(a.choices[0].message.content), a.choices[0]);
  const sc = await client.chat.completions.stream({ ...chatBase, messages: msgs }).finalChatCompletion();
  const stc = sc.choices[0].message.tool_calls || [];
  check("chat_stream_tool_call", sc.choices[0].finish_reason === "tool_calls" && stc.length === 1 &&
        JSON.parse(stc[0].function.arguments).city === "Oslo", sc.choices[0]);
  const sa = await client.chat.completions.stream({ ...chatBase, messages: [...msgs, sc.choices[0].message,
    { role: "tool", tool_call_id: stc[0] && stc[0].id, content: result("Oslo") }] }).finalChatCompletion();
  check("chat_stream_tool_answer", sa.choices[0].message.content === a.choices[0].message.content, sa.choices[0]);
  const two = await client.chat.completions.create({ ...chatBase,
    messages: [{ role: "user", content: "What's the weather in Oslo and in Lima?" }] });
  const ttc = two.choices[0].message.tool_calls || [];
  check("chat_two_calls", ttc.map((t) => JSON.parse(t.function.arguments).city).join() === "Oslo,Lima", two.choices[0]);
  const twos = await client.chat.completions.stream({ ...chatBase,
    messages: [{ role: "user", content: "What's the weather in Oslo and in Lima?" }] }).finalChatCompletion();
  const tts = twos.choices[0].message.tool_calls || [];
  check("chat_two_calls_stream", tts.map((t) => JSON.parse(t.function.arguments).city).join() === "Oslo,Lima" &&
        tts.every((t, i) => t.id === tts[i].id && t.id.startsWith("call_")), twos.choices[0]);
}

async function idle() {
  let s;
  for (let i = 0; i < 50; i++) {
    s = await (await fetch(`http://127.0.0.1:${port}/stats`)).json();
    if (s.active === 0 && s.kv_blocks_used === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  check("nothing_leaked", s.active === 0 && s.kv_blocks_used === 0 && s.responses_stored > 0, s);
}

responses().then(chat).then(idle).then(() => process.exit(failed ? 1 : 0),
  (e) => { console.log(`FAIL sdk_responses_crash: ${e.stack}`); process.exit(1); });
