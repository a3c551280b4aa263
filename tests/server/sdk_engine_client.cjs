// The official openai (v4) and @anthropic-ai/sdk packages against `hearth serve` running
// the real engine on brown-llama-8m: greedy completions equal to `hearth run`, chat
// (whole and streamed), models, Anthropic messages (whole and streamed), and errors
// surfacing as the SDKs' exceptions. Usage: node sdk_engine_client.cjs PORT GREEDY_TEXT.
const path = require("path");
const OpenAI = require(path.resolve(".cache/npm/node_modules/openai"));
const Anthropic = require(path.resolve(".cache/npm/node_modules/@anthropic-ai/sdk"));
const [port, greedy] = process.argv.slice(2);
const openai = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "none", maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey: "none", maxRetries: 0 });
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${JSON.stringify(why).slice(0, 300)}`); }
}
const user = (content) => [{ role: "user", content }];

async function main() {
  const c = await openai.completions.create({ model: "m", prompt: "The jury said", max_tokens: 16, temperature: 0 });
  check("sdk_completion_greedy", c.choices[0].text === greedy && c.usage.completion_tokens === 16, c);
  const models = await openai.models.list();
  check("sdk_models", models.data.length === 1 && models.data[0].id === "brown-llama-8m", models.data);
  const r = await openai.chat.completions.create({ model: "m", messages: user("Hello"), max_tokens: 8, seed: 7 });
  check("sdk_chat", r.choices[0].message.role === "assistant" && r.usage.completion_tokens === 8, r);
  let text = "", finish = null, usage = null;
  const s = await openai.chat.completions.create({ model: "m", messages: user("Hello"), max_tokens: 8, seed: 7,
                                                   stream: true, stream_options: { include_usage: true } });
  for await (const chunk of s) {
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length) {
      text += chunk.choices[0].delta.content || "";
      finish = chunk.choices[0].finish_reason || finish;
    }
  }
  check("sdk_chat_stream_same_as_whole", text === r.choices[0].message.content && finish === "length" &&
        usage && usage.completion_tokens === 8, { text, whole: r.choices[0].message.content, finish, usage });
  try {
    await openai.chat.completions.create({ model: "m", messages: [], max_tokens: 4 });
    check("sdk_error_empty_messages", false, "no error");
  } catch (e) {
    check("sdk_error_empty_messages", e instanceof OpenAI.BadRequestError && e.status === 400, String(e));
  }
  try {
    await openai.completions.create({ model: "m", prompt: "the ".repeat(2100), max_tokens: 4 });
    check("sdk_error_too_long", false, "no error");
  } catch (e) {
    check("sdk_error_too_long", e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded", String(e));
  }
  const m = await anthropic.messages.create({ model: "m", max_tokens: 6, messages: user("Hi"),
                                              system: "Be brief." });
  check("sdk_anthropic", m.type === "message" && m.content[0].type === "text" && m.stop_reason === "max_tokens" &&
        m.usage.output_tokens === 6, m);
  const stream = anthropic.messages.stream({ model: "m", max_tokens: 6, messages: user("Hi"), system: "Be brief.",
                                             temperature: 0 });
  const final = await stream.finalMessage();
  check("sdk_anthropic_stream", final.stop_reason === "max_tokens" && final.usage.output_tokens === 6 &&
        final.content[0].type === "text", final);
  try {
    await anthropic.messages.create({ model: "m", messages: user("Hi") });
    check("sdk_anthropic_error", false, "no error");
  } catch (e) {
    check("sdk_anthropic_error", e instanceof Anthropic.BadRequestError, String(e));
  }
}
main().then(() => process.exit(failed ? 1 : 0), (e) => { console.log(`FAIL sdk_exception: ${e}`); process.exit(1); });
