// The official openai npm package (pinned in sdk_npm.sh) on /v1/responses against the
// fake-engine server: create, the SDK's stream helper (its accumulator checks every
// event's item ids, indexes and order), reasoning and tool-call items, retrieve / delete,
// and errors as the SDK's exceptions. Usage: node responses_fake_client.cjs PORT API_KEY.
const path = require("path");
const OpenAI = require(path.resolve(".cache/npm/node_modules/openai"));
const [port, key] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, maxRetries: 0 });
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${JSON.stringify(why).slice(0, 400)}`); }
}
const tools = [{ type: "function", name: "get_weather", parameters: { type: "object" }, strict: false }];

async function main() {
  const r = await client.responses.create({ model: "m", input: "THINK" });
  check("npm_responses_create", r.output_text === "The answer is 42." && r.output[0].type === "reasoning" &&
        r.usage.total_tokens > 0, r);
  const s = client.responses.stream({ model: "m", input: "THINK" });
  const types = [];
  s.on("event", (e) => types.push(e.type));
  const f = await s.finalResponse();
  check("npm_responses_stream", f.output_text === "The answer is 42." && f.id.startsWith("resp_") &&
        types[0] === "response.created" && types[types.length - 1] === "response.completed", { types, f });
  const t = await client.responses.stream({ model: "m", input: "TOOL", tools }).finalResponse();
  const call = t.output.find((o) => o.type === "function_call");
  check("npm_responses_stream_tool", call && call.name === "get_weather" &&
        JSON.parse(call.arguments).city === "Paris" && t.output_text === "Let me check.\n", t.output);
  const next = await client.responses.create({ model: "m", previous_response_id: t.id, tools,
    input: [{ type: "function_call_output", call_id: call.call_id, output: "21 C" }] });
  check("npm_responses_tool_result", next.output_text === "Hello from the fake engine!" &&
        next.previous_response_id === t.id, next);
  const got = await client.responses.retrieve(r.id);
  check("npm_responses_retrieve", got.id === r.id && got.output_text === "The answer is 42.", got);
  const del = await client.responses.delete(r.id);
  check("npm_responses_delete", del === undefined || del === null || del.deleted === true || del instanceof Object, del);
  try {
    await client.responses.retrieve(r.id);
    check("npm_responses_retrieve_deleted", false, "found");
  } catch (e) {
    check("npm_responses_retrieve_deleted", e instanceof OpenAI.NotFoundError, String(e));
  }
  try {
    await client.responses.create({ model: "m", input: "x", text: { format: { type: "yaml" } } });
    check("npm_responses_bad", false, "accepted");
  } catch (e) {
    check("npm_responses_bad", e instanceof OpenAI.BadRequestError && e.param === "text.format", String(e));
  }
}
main().then(() => process.exit(failed ? 1 : 0), (e) => { console.log(`FAIL npm_responses_crash: ${e.stack}`); process.exit(1); });
