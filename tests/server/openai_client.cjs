// The official openai npm package (v7, pinned in sdk_npm.sh) against the fake-engine server: chat (whole and
// streamed, with reasoning and tool calls, n > 1, forced tool_choice), completions, and its
// error mapping.
// Usage: node openai_client.cjs PORT API_KEY (openai installed under .cache/npm).
const path = require("path");
const OpenAI = require(path.resolve(".cache/npm/node_modules/openai"));
const [port, key] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, maxRetries: 0 });
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${JSON.stringify(why)}`); }
}
const user = (content) => [{ role: "user", content }];
const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];

async function main() {
  const r = await client.chat.completions.create({ model: "m", messages: user("hello") });
  check("npm_chat", r.choices[0].message.content === "Hello from the fake engine!" && r.usage.total_tokens > 0, r);
  let text = "", reasoning = "", finish = null, usage = null;
  const s = await client.chat.completions.create({ model: "m", messages: user("THINK"), stream: true,
                                                   stream_options: { include_usage: true } });
  for await (const chunk of s) {
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    text += chunk.choices[0].delta.content || "";
    reasoning += chunk.choices[0].delta.reasoning_content || "";
    finish = chunk.choices[0].finish_reason || finish;
  }
  check("npm_chat_stream", text === "The answer is 42." && reasoning === "\nLet me think.\n" &&
        finish === "stop" && usage && usage.completion_tokens > 0, { text, reasoning, finish, usage });
  const t = await client.chat.completions.create({ model: "m", messages: user("TOOL"), tools });
  const call = t.choices[0].message.tool_calls[0];
  check("npm_tool_call", t.choices[0].finish_reason === "tool_calls" && call.function.name === "get_weather" &&
        JSON.parse(call.function.arguments).city === "Paris", t.choices[0]);
  const runner = client.chat.completions.stream({ model: "m", messages: user("TOOL"), tools });
  const final = await runner.finalChatCompletion();
  const fc = final.choices[0].message.tool_calls;
  check("npm_tool_call_stream", fc.length === 1 && fc[0].function.name === "get_weather" &&
        final.choices[0].message.content === "Let me check.\n", final.choices[0]);
  const n3 = await client.chat.completions.create({ model: "m", messages: user("hello"), n: 3 });
  check("npm_n3", n3.choices.length === 3 && n3.choices.every((c, i) => c.index === i &&
        c.message.content === "Hello from the fake engine!") && n3.usage.completion_tokens === 27, n3);
  const n3s = await client.chat.completions.stream({ model: "m", messages: user("hello"), n: 3 })
    .finalChatCompletion();
  check("npm_n3_stream", n3s.choices.length === 3 && n3s.choices.every((c, i) => c.index === i &&
        c.message.content === "Hello from the fake engine!" && c.finish_reason === "stop"), n3s.choices);
  const forced = await client.chat.completions.stream({ model: "m", messages: user("TOOL"), tools,
    tool_choice: { type: "function", function: { name: "get_weather" } } }).finalChatCompletion();
  const f0 = forced.choices[0];
  check("npm_tool_choice_named_stream", f0.finish_reason === "tool_calls" && f0.message.tool_calls.length === 1 &&
        JSON.parse(f0.message.tool_calls[0].function.arguments).city === "Paris", f0);
  const req = await client.chat.completions.create({ model: "m", messages: user("TOOL"), tools, tool_choice: "required" });
  check("npm_tool_choice_required", req.choices[0].message.tool_calls[0].function.name === "get_weather", req.choices[0]);
  const c = await client.completions.create({ model: "m", prompt: "Once", max_tokens: 3 });
  check("npm_completion", c.choices[0].text === "Hello fro" && c.choices[0].finish_reason === "length", c);
  try {
    await client.chat.completions.create({ model: "m", messages: user("x"), max_tokens: 0 });
    check("npm_bad_request", false, "accepted");
  } catch (e) {
    check("npm_bad_request", e instanceof OpenAI.BadRequestError && /max_tokens/.test(e.message), e.message);
  }
  try {
    await new OpenAI({ baseURL: client.baseURL, apiKey: "wrong", maxRetries: 0 }).models.list();
    check("npm_auth", false, "accepted");
  } catch (e) {
    check("npm_auth", e instanceof OpenAI.AuthenticationError, e.message);
  }
  const models = await client.models.list();
  check("npm_models", models.data[0].id === "fake-model", models.data);
}
main().then(() => process.exit(failed ? 1 : 0), (e) => { console.log(`FAIL npm_crash: ${e.stack}`); process.exit(1); });
